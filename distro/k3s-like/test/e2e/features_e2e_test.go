package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/scoping"
)

var featuresGVR = schema.GroupVersionResource{Group: "features.kubeharness.io", Version: "v1alpha1", Resource: "features"}

func (s *server) dynamic() dynamic.Interface {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "admin.kubeconfig"))
	require.NoError(s.t, err)
	d, err := dynamic.NewForConfig(cfg)
	require.NoError(s.t, err)
	return d
}

// plan is the server's feature plan from its status handler, by name.
func (s *server) plan() map[string]scoping.FeatureState {
	byName := map[string]scoping.FeatureState{}
	plan := s.fullPlan()
	for _, f := range plan.FeatureStates() {
		byName[f.Name] = f
	}
	return byName
}

// fullPlan is the server's whole plan (versions too), from its status
// handler's /features.
func (s *server) fullPlan() scoping.Plan {
	resp, err := s.statusGet("/features")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	require.Equal(s.t, http.StatusOK, resp.StatusCode)
	var plan scoping.Plan
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&plan))
	return plan
}

// featuresCommand runs `k3s-like features` against s with args and returns
// its stdout; it must exit 0 with nothing on stderr.
func (s *server) featuresCommand(args ...string) string {
	s.t.Helper()
	stdout, stderr, code := execute(s.t, exec.Command(binary, append([]string{"features", "--status-address=" + s.statusAddress()}, args...)...))
	require.Equal(s.t, 0, code, "features %v: %s", args, stderr)
	assert.Empty(s.t, stderr, "features %v", args)
	return stdout
}

// kubectl runs `k3s-like kubectl` with s's admin kubeconfig and returns
// its stdout; it must exit 0.
func (s *server) kubectl(args ...string) string {
	s.t.Helper()
	stdout, stderr, code := execute(s.t, exec.Command(binary, append([]string{"kubectl", "--kubeconfig=" + filepath.Join(s.dataDir, "admin.kubeconfig")}, args...)...))
	require.Equal(s.t, 0, code, "kubectl %v: %s", args, stderr)
	return stdout
}

// rows are the lines of out split into fields.
func rows(out string) [][]string {
	var rows [][]string
	for line := range strings.Lines(out) {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

// features lists the Feature objects by status.name.
func (s *server) features() map[string]unstructured.Unstructured {
	list, err := s.dynamic().Resource(featuresGVR).List(s.t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]unstructured.Unstructured{}
	for _, item := range list.Items {
		name, _, _ := unstructured.NestedString(item.Object, "status", "name")
		out[name] = item
	}
	return out
}

func str(u unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedString(u.Object, path...)
	return v
}

func boolean(u unstructured.Unstructured, path ...string) bool {
	v, _, _ := unstructured.NestedBool(u.Object, path...)
	return v
}

// serverEntries are status.servers by server identity.
func serverEntries(u unstructured.Unstructured) map[string]map[string]any {
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "servers")
	out := map[string]map[string]any{}
	for _, e := range list {
		m := e.(map[string]any)
		out[m["server"].(string)] = m
	}
	return out
}

// runCheck runs `k3s-like features check` and returns its stdout and exit code.
func runCheck(t *testing.T, kubeconfig, file string) (string, int) {
	cmd := exec.Command(binary, "features", "check", "--kubeconfig="+kubeconfig, "-f", file)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// TestFeatureDiscovery: the Feature objects after start (one per gate of the
// plan, the k3s#11853 gates with their SET-BY, the printer columns), the
// workload check, and a restart without one gate.
func TestFeatureDiscovery(t *testing.T) {
	gates := map[string]string{
		"kube-apiserver":          testenv.APIServerGate,
		"kube-scheduler":          testenv.SchedulerGate,
		"kube-controller-manager": testenv.ControllerManagerGate,
	}
	s := newServer(t, t.TempDir())
	started := time.Now()
	s.start("--node-name=server-a",
		"--kube-apiserver-arg=feature-gates="+gates["kube-apiserver"]+"=true",
		"--kube-scheduler-arg=feature-gates="+gates["kube-scheduler"]+"=true",
		"--kube-controller-manager-arg=feature-gates="+gates["kube-controller-manager"]+"=true",
	)
	s.waitReady(90 * time.Second)
	plan := s.plan()
	require.NotEmpty(t, plan)

	var features map[string]unstructured.Unstructured
	require.Eventually(t, func() bool {
		features = s.features()
		for _, f := range features {
			if str(f, "status", "clusterEnabled") == "" { // not summarized yet
				return false
			}
		}
		return len(features) == len(plan)
	}, 60*time.Second, 250*time.Millisecond, "one Feature per gate of the plan (%d), summarized", len(plan))
	t.Logf("start to %d Feature objects: %s", len(features), time.Since(started))

	// Published with an identity of its own that can touch nothing else.
	cfg, err := clientcmd.BuildConfigFromFlags("", datadir.PKI(s.dataDir).FeaturePublisherKubeconfig())
	require.NoError(t, err)
	pub, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = pub.CoreV1().Secrets("kube-system").List(t.Context(), metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the feature publisher's identity reads no Secrets: %v", err)
	_, err = pub.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "nor Nodes: %v", err)

	for name, want := range plan {
		f, ok := features[name]
		if !assert.True(t, ok, "Feature for %s", name) {
			continue
		}
		assert.Equal(t, strings.ToLower(name), f.GetName())
		assert.Equal(t, want.Stage, str(f, "status", "stage"), name)
		assert.Equal(t, want.Enabled, boolean(f, "status", "enabled"), name)
		assert.Equal(t, want.Default, boolean(f, "status", "default"), name)
		assert.Equal(t, want.LockedToDefault, boolean(f, "status", "lockedToDefault"), name)
		assert.Equal(t, strconv.FormatBool(want.Enabled), str(f, "status", "clusterEnabled"), "%s: one server, no node", name)
		e := serverEntries(f)["server-a"]
		if assert.NotNil(t, e, name) {
			assert.Equal(t, want.Enabled, e["enabled"], name)
		}
	}
	for component, gate := range gates {
		f := features[gate]
		assert.Equal(t, "Alpha", str(f, "status", "stage"), gate)
		assert.True(t, boolean(f, "status", "enabled"), gate)
		assert.Equal(t, component+"=true", str(f, "status", "setBy"), gate)
		assert.NotEmpty(t, str(f, "status", "emulationVersion"))
		assert.NotEmpty(t, str(f, "status", "binaryVersion"))
		comps, _ := serverEntries(f)["server-a"]["components"].([]any)
		found := false
		for _, c := range comps {
			m := c.(map[string]any)
			kube := strings.HasPrefix(m["name"].(string), "kube-")
			assert.Equal(t, kube, m["registers"], "%s registers %s: %v", m["name"], gate, kube)
			if m["name"] == component {
				found = true
				assert.Equal(t, "true", m["value"])
				assert.Equal(t, "--feature-gates="+gate+"=true", m["flag"])
			} else {
				assert.Nil(t, m["flag"], "%s did not set %s", m["name"], gate)
			}
		}
		assert.True(t, found, "%s in the components of %s", component, gate)
	}

	// kubectl get features: the printer columns through the Table output.
	raw, err := s.client().RESTClient().Get().AbsPath("/apis/features.kubeharness.io/v1alpha1/features").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(t.Context())
	require.NoError(t, err)
	var table metav1.Table
	require.NoError(t, json.Unmarshal(raw, &table))
	var columns []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			columns = append(columns, strings.ToUpper(c.Name))
		}
	}
	assert.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "AGE"}, columns)
	rows := map[string][]any{}
	for _, r := range table.Rows {
		rows[r.Cells[0].(string)] = r.Cells
	}
	assert.Len(t, rows, len(plan))
	sched := strings.ToLower(testenv.SchedulerGate)
	assert.Equal(t, []any{sched, "Alpha", "true", false, "kube-scheduler=true"}, rows[sched][:5])

	// k3s-like features: kubectl get features' rows, and the objects this
	// server published.
	checkFeaturesCommand(t, s, "server-a", plan)

	// features check: a Deployment is served; a PodCertificateRequest of
	// certificates.k8s.io/v1beta1 (off by default in 1.36 and 1.37, storage
	// behind the gate PodCertificateRequest: beta and off in 1.36, GA in
	// 1.37) is not, and the line says what would serve it, with the gate's
	// stage and value as the server's plan has them.
	dir := t.TempDir()
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"
	pcr := "apiVersion: certificates.k8s.io/v1beta1\nkind: PodCertificateRequest\nmetadata:\n  name: pcr\n"
	both, only := filepath.Join(dir, "both.yaml"), filepath.Join(dir, "deployment.yaml")
	require.NoError(t, os.WriteFile(both, []byte(deployment+"---\n"+pcr), 0o600))
	require.NoError(t, os.WriteFile(only, []byte(deployment), 0o600))
	kubeconfig := filepath.Join(s.dataDir, "admin.kubeconfig")
	out, code := runCheck(t, kubeconfig, both)
	assert.Equal(t, 1, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.Equal(t, "ok       apps/v1 Deployment web", lines[0])
	assert.Contains(t, lines[1], "MISSING  certificates.k8s.io/v1beta1 PodCertificateRequest pcr")
	assert.Contains(t, lines[1], "runtime-config=certificates.k8s.io/v1beta1=true")
	pcrGate, ok := plan["PodCertificateRequest"]
	require.True(t, ok, "the plan has the gate PodCertificateRequest")
	state := map[bool]string{true: "enabled", false: "disabled"}[pcrGate.Enabled]
	assert.Contains(t, lines[1], "feature gate PodCertificateRequest ("+pcrGate.Stage+", "+state+")")
	out, code = runCheck(t, kubeconfig, only)
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "ok       apps/v1 Deployment web\n", out)

	// A Feature of a gate no server knows, reported only by this server, is
	// removed at the next start; one another server reports is kept.
	dyn := s.dynamic()
	for name, server := range map[string]string{"nosuchgate": "server-a", "othergate": "server-z"} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "features.kubeharness.io/v1alpha1", "kind": "Feature",
			"metadata": map[string]any{"name": name},
			"status": map[string]any{"name": name, "default": false, "enabled": true, "lockedToDefault": false,
				"servers": []any{map[string]any{"server": server, "enabled": true}}},
		}}
		_, err := dyn.Resource(featuresGVR).Create(t.Context(), obj, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// Restart on the same data dir without the apiserver's gate.
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s.wait(15 * time.Second)
	require.Equal(t, 0, code)
	s.start("--node-name=server-a",
		"--kube-scheduler-arg=feature-gates="+gates["kube-scheduler"]+"=true",
		"--kube-controller-manager-arg=feature-gates="+gates["kube-controller-manager"]+"=true",
	)
	s.waitReady(90 * time.Second)
	gate := gates["kube-apiserver"]
	require.Eventually(t, func() bool {
		f, ok := s.features()[gate]
		return ok && !boolean(f, "status", "enabled") && str(f, "status", "setBy") == "default" &&
			serverEntries(f)["server-a"]["enabled"] == false
	}, 60*time.Second, 250*time.Millisecond, "%s disabled after the restart without it", gate)
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(featuresGVR).Get(t.Context(), "nosuchgate", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 250*time.Millisecond, "a stale Feature only this server reported is removed")
	_, err = dyn.Resource(featuresGVR).Get(t.Context(), "othergate", metav1.GetOptions{})
	assert.NoError(t, err, "a Feature another server reports is kept")
	assert.True(t, s.features()[gates["kube-scheduler"]].Object != nil)

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s.wait(15 * time.Second)
	assert.Equal(t, 0, code)
}

// TestFeatureDiscoveryHA: two servers on one external etcd with different
// gates; each Feature holds both servers' views.
func TestFeatureDiscoveryHA(t *testing.T) {
	ha := slices.Clip(append(externalEtcd(t), "--token=e2e-secret")) // the appends below share no backing array
	a, b := newServer(t, t.TempDir()), newServer(t, t.TempDir())
	a.start(append(ha, "--node-name=server-a", "--kube-apiserver-arg=feature-gates="+testenv.APIServerGate+"=true")...)
	a.waitReady(90 * time.Second)
	b.start(append(ha, "--node-name=server-b")...)
	b.waitReady(90 * time.Second)

	gate := testenv.APIServerGate
	var entries map[string]map[string]any
	require.Eventually(t, func() bool {
		f, ok := a.features()[gate]
		if !ok {
			return false
		}
		entries = serverEntries(f)
		return len(entries) == 2
	}, 60*time.Second, 250*time.Millisecond, "both servers' entries in %s", gate)
	assert.Equal(t, true, entries["server-a"]["enabled"])
	assert.Equal(t, false, entries["server-b"]["enabled"])
	// The last server to publish wrote the top-level fields.
	f := b.features()[gate]
	assert.Len(t, serverEntries(f), 2, "B's apiserver shows the same object")
}

// checkFeaturesCommand: `k3s-like features` of s, a single server named
// server, prints what `kubectl get features` prints of the Feature objects
// it published (but AGE, and with the versions in -o wide), and -o yaml
// and -o json are those objects.
func checkFeaturesCommand(t *testing.T, s *server, server string, plan map[string]scoping.FeatureState) {
	emulated, binaryVersion := "", ""
	for _, f := range s.features() {
		emulated, binaryVersion = str(f, "status", "emulationVersion"), str(f, "status", "binaryVersion")
		break
	}
	require.NotEmpty(t, emulated)

	// The table: no preamble, the header, then kubectl's rows but AGE.
	table := rows(s.featuresCommand("--node-name=" + server))
	require.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY"}, table[0])
	kubectlTable := rows(s.kubectl("get", "features"))
	require.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "AGE"}, kubectlTable[0])
	require.Len(t, table, len(plan)+1)
	require.Len(t, kubectlTable, len(table))
	for i := range table {
		assert.Equal(t, kubectlTable[i][:5], table[i], "row %d", i)
	}
	sched := strings.ToLower(testenv.SchedulerGate)
	assert.Contains(t, table, []string{sched, "Alpha", "true", "false", "kube-scheduler=true"})

	// --no-headers: only the rows.
	noHeaders := rows(s.featuresCommand("--node-name="+server, "--no-headers"))
	assert.Equal(t, table[1:], noHeaders)

	// -o wide: kubectl's -o wide but AGE, then the emulated and binary
	// versions.
	wide := rows(s.featuresCommand("--node-name="+server, "-o", "wide"))
	kubectlWide := rows(s.kubectl("get", "features", "-o", "wide"))
	require.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "SERVERS", "NODES", "DISAGREEING", "DECLARED", "DECLARED-DISAGREEING", "EMULATED", "BINARY"}, wide[0])
	require.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "SERVERS", "NODES", "DISAGREEING", "DECLARED", "DECLARED-DISAGREEING", "AGE"}, kubectlWide[0])
	require.Len(t, wide, len(kubectlWide))
	for i := 1; i < len(wide); i++ {
		// AGE last; NODES, DISAGREEING and the DECLARED ones empty
		// without nodes.
		assert.Equal(t, append(slices.Clone(kubectlWide[i][:len(kubectlWide[i])-1]), emulated, binaryVersion), wide[i], "row %d", i)
	}
	assert.Equal(t, wide[1:], rows(s.featuresCommand("--node-name="+server, "-o", "wide", "--no-headers")))

	// -o name: kubectl's.
	assert.Equal(t, s.kubectl("get", "features", "-o", "name"), s.featuresCommand("-o", "name"))

	// -o yaml and -o json: a FeatureList whose items are the published
	// objects without what the apiserver adds (metadata but the name).
	published := s.features()
	for _, output := range []string{"yaml", "json"} {
		var list featuresv1alpha1.FeatureList
		require.NoError(t, yaml.UnmarshalStrict([]byte(s.featuresCommand("--node-name="+server, "-o", output)), &list), output)
		assert.Equal(t, "features.kubeharness.io/v1alpha1", list.APIVersion, output)
		assert.Equal(t, "FeatureList", list.Kind, output)
		require.Len(t, list.Items, len(plan), output)
		for _, item := range list.Items {
			assert.Equal(t, "features.kubeharness.io/v1alpha1", item.APIVersion)
			assert.Equal(t, "Feature", item.Kind)
			assert.Equal(t, metav1.ObjectMeta{Name: strings.ToLower(item.Status.Name)}, item.ObjectMeta)
			u, ok := published[item.Status.Name]
			if !assert.True(t, ok, "%s: %s is published", output, item.Status.Name) {
				continue
			}
			var got featuresv1alpha1.Feature
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got))
			// The server's summaries carry no transition time.
			for i := range got.Status.Conditions {
				got.Status.Conditions[i].LastTransitionTime = metav1.Time{}
			}
			assert.Equal(t, got.Status, item.Status, "%s: %s", output, item.Status.Name)
		}
	}
	// Without --node-name: this host's name, as the server's default.
	var list featuresv1alpha1.FeatureList
	require.NoError(t, yaml.Unmarshal([]byte(s.featuresCommand("-o", "yaml")), &list))
	hostname, err := os.Hostname()
	require.NoError(t, err)
	assert.Equal(t, hostname, list.Items[0].Status.Servers[0].Server)
}

// TestFeaturesCommandErrors: an unknown -o names the value and the choices
// before anything is asked of a server; no server is an error naming the
// address.
func TestFeaturesCommandErrors(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
	for _, output := range []string{"xml", "jsonpath={.items}", "Table", ""} {
		stdout, stderr, code := execute(t, exec.Command(binary, "features", "--status-address="+addr, "-o", output))
		assert.Equal(t, 1, code, output)
		assert.Empty(t, stdout, output)
		assert.Equal(t, "k3s-like: -o "+output+": unknown output format; use one of table, wide, json, yaml, name\n", stderr, output)
	}
	for _, args := range [][]string{{}, {"-o", "yaml"}, {"--no-headers"}} {
		stdout, stderr, code := execute(t, exec.Command(binary, append([]string{"features", "--status-address=" + addr}, args...)...))
		assert.Equal(t, 1, code, args)
		assert.Empty(t, stdout, args)
		assert.Contains(t, stderr, "k3s-like: no server answers at --status-address "+addr+": ", args)
	}
	_, stderr, code := execute(t, exec.Command(binary, "features", "--status-address="+addr, "extra"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `unknown command "extra"`)
}
