package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/upgradeplan"
	"github.com/kubeharness/kubeharness/scoping"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// The objects the rehearsal creates, across API groups served by both
// minors (core, apps, batch, policy, networking, rbac, scheduling,
// storage, coordination, autoscaling, apiextensions and a custom
// resource). Each step creates its own set, named with the step.
const rehearsalObjects = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cm-STEP, namespace: default, labels: {step: "STEP"}}
data: {key: value-STEP}
---
apiVersion: v1
kind: Secret
metadata: {name: secret-STEP, namespace: default}
type: Opaque
stringData: {password: not-a-real-secret-STEP}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: sa-STEP, namespace: default}
---
apiVersion: v1
kind: Service
metadata: {name: svc-STEP, namespace: default}
spec:
  selector: {app: web-STEP}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: role-STEP, namespace: default}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb-STEP, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: role-STEP}
subjects: [{kind: ServiceAccount, name: sa-STEP, namespace: default}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: pc-STEP}
value: 1000
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: cron-STEP, namespace: default}
spec:
  schedule: "0 0 1 1 *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: registry.k8s.io/pause:3.10}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pdb-STEP, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web-STEP}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: np-STEP, namespace: default}
spec:
  podSelector: {matchLabels: {app: web-STEP}}
  policyTypes: [Ingress]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: sc-STEP}
provisioner: example.com/none
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: lease-STEP, namespace: default}
spec: {holderIdentity: rehearsal, leaseDurationSeconds: 3600}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: hpa-STEP, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web-STEP}
  minReplicas: 1
  maxReplicas: 3
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets-STEP.rehearsal.example.com}
spec:
  group: rehearsal.example.com
  names: {kind: WidgetSTEPKIND, plural: widgets-STEP, singular: widget-STEP, listKind: WidgetSTEPKINDList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`

// rehearsalCustom is created once its CRD is served.
const rehearsalCustom = `
apiVersion: rehearsal.example.com/v1
kind: WidgetSTEPKIND
metadata: {name: widget-STEP, namespace: default}
spec: {size: 3}
`

// expectedDifference is where upstream itself does not keep a promise the
// rehearsal checks: what differs, and the upstream reason (file:line).
// The test fails on any difference not listed here, and on a listed one
// that no longer occurs.
type expectedDifference struct{ kind, what, why string }

// TestUpgradeRehearsal rehearses KEP-4330's upgrade and rollback with the
// two real binaries on one data dir (K3S_LIKE_OLD: the older minor's,
// K3S_LIKE_NEW: the newer's; make test-minors sets them):
//
//  1. the old binary: objects across API groups, a Deployment's Pods
//     bound; the served group-versions, resources and gates are recorded;
//  2. the new binary emulating the old minor: /version says so, the same
//     group-versions and resources are served, every gate both know has its
//     old value and the new-only gates are off, every object reads back
//     unchanged and Pods stay bound; more objects;
//  3. rollback, the old binary: every object of steps 1 and 2 reads back,
//     new Pods are scheduled (the datastore was kept at the old etcd);
//  4. the new binary, emulation lifted: the new group-versions appear,
//     objects read back, the gates are the new minor's defaults.
//
// Each step's plan and log show the emulated version it runs at.
func TestUpgradeRehearsal(t *testing.T) {
	oldBin, newBin := os.Getenv("K3S_LIKE_OLD"), os.Getenv("K3S_LIKE_NEW")
	if oldBin == "" || newBin == "" {
		t.Skip("K3S_LIKE_OLD and K3S_LIKE_NEW name the two binaries (make test-minors)")
	}
	if inNodeNetns(t) {
		return // run again inside a network namespace: its result is this test's
	}
	oldMinor, newMinor := binaryMinor(t, oldBin), binaryMinor(t, newBin)
	require.NotEqual(t, oldMinor, newMinor)
	t.Logf("rehearsing %s (%s) -> %s (%s)", oldMinor, oldBin, newMinor, newBin)

	// What is not safe is refused before anything starts, by the binary.
	refuse := func(want string, args ...string) {
		t.Helper()
		cmd := exec.Command(newBin, append([]string{"server", "--disable-agent", "--dry-run", "--data-dir=" + t.TempDir()}, args...)...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%v: %s", args, out)
		assert.Equal(t, 1, cmd.ProcessState.ExitCode())
		assert.Contains(t, lastLine(string(out)), want, "%v", args)
	}
	refuse("emulation version 1.20 is not between", "--emulated-version=1.20")
	minCompat := "--kube-%s-arg=min-compatibility-version=" + newMinor
	refuse("min-compatibility-version", "--emulated-version="+oldMinor,
		fmt.Sprintf(minCompat, "apiserver"), fmt.Sprintf(minCompat, "scheduler"), fmt.Sprintf(minCompat, "controller-manager"))

	dir := t.TempDir()
	s := newServer(t, dir)
	s.node = true
	putNodeImages(t, dir)
	var created []*unstructured.Unstructured // every object made so far, as created
	var pods map[string]string               // bound Pods: name/uid -> node

	// Step 1: the old binary.
	rehearsalStep(t, s, oldBin, oldMinor, "1")
	ctx := t.Context()
	createReadyNode(ctx, t, s.client(), "node-1")
	created = append(created, createRehearsalObjects(t, s, "1")...)
	deployAndWaitBound(ctx, t, s.client(), "web-1", 2, "node-1")
	pods = boundPods(t, s.client())
	require.Len(t, pods, 2)
	running := runOnNode(ctx, t, s.client())
	before := servedAPIs(t, s)
	beforeGates := s.plan()
	stopServer(t, s)

	// Step 2: the new binary emulating the old minor.
	rehearsalStep(t, s, newBin, oldMinor, "2", "--emulated-version="+oldMinor)
	info, err := s.client().Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "1."+info.EmulationMinor, oldMinor, "/version's emulation")
	assert.Equal(t, fmt.Sprintf("1.%d", atoiT(t, info.EmulationMinor)-1), "1."+info.MinCompatibilityMinor, "/version's min compatibility")
	assert.Regexp(t, `^v`+regexp.QuoteMeta(newMinor)+`\.`, info.GitVersion)
	expResources, expGates := expectedUnderEmulation(oldMinor, newMinor)
	assertSameAPIs(t, before, servedAPIs(t, s), expResources)
	assertGates(t, beforeGates, s.plan(), expGates)
	assertReadBack(t, s, created)
	assertStillBound(t, s.client(), pods)
	running = assertRunningAgain(ctx, t, s.client(), running)
	// What lifting the emulation will change, as upgrade-plan says it now.
	plan := upgradePlan(t, s, newBin, newMinor)
	assert.Equal(t, oldMinor, plan.From)
	assert.Equal(t, newMinor, plan.To)
	assert.Empty(t, plan.ModelDiffers, "upgrade-plan's model of what %s serves is the server's discovery", oldMinor)
	beforeLift := s.plan()
	// Staying at the emulated version changes nothing (exit 0); a
	// malformed target is an error (exit 1); -f judges objects at the target.
	out, code := runUpgradePlan(t, s, newBin, "--to-emulated-version="+oldMinor)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "feature gates: no change")
	out, code = runUpgradePlan(t, s, newBin, "--to-emulated-version=1.x")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "--to-emulated-version=1.x")
	manifest := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n"+
		"apiVersion: rehearsal.example.com/v1\nkind: WidgetS1\nmetadata: {name: w}\n"), 0o600))
	out, code = runUpgradePlan(t, s, newBin, "-f", manifest)
	assert.Equal(t, 3, code, out)
	assert.Regexp(t, `(?m)^ok\s+apps/v1 Deployment web$`, out)
	assert.Regexp(t, `(?m)^UNKNOWN \(not a built-in group\)\s+rehearsal.example.com/v1 WidgetS1 w$`, out)
	created = append(created, createRehearsalObjects(t, s, "2")...)
	deployAndWaitBound(ctx, t, s.client(), "web-2", 1, "node-1")
	pods = boundPods(t, s.client())
	require.Len(t, pods, 3)
	stopServer(t, s)

	// Step 3: rollback, the old binary.
	rehearsalStep(t, s, oldBin, oldMinor, "3")
	assertSameAPIs(t, before, servedAPIs(t, s), nil)
	assertReadBack(t, s, created)
	assertStillBound(t, s.client(), pods)
	running = assertRunningAgain(ctx, t, s.client(), running)
	deployAndWaitBound(ctx, t, s.client(), "web-3", 1, "node-1")
	pods = boundPods(t, s.client())
	require.Len(t, pods, 4)
	stopServer(t, s)

	// Step 4: the new binary, emulation lifted.
	rehearsalStep(t, s, newBin, newMinor, "4")
	after := servedAPIs(t, s)
	lifted, gone := upgradeplan.Diff(before.APIs, after.APIs)
	added, removed := lifted.GroupVersions, gone.GroupVersions
	t.Logf("lifting the emulation %s -> %s: group-versions served since: %v, no longer served: %v", oldMinor, newMinor, added, removed)
	assert.Equal(t, wantNewGroupVersions(t, oldMinor, newMinor), added, "the group-versions that appear when the emulation is lifted")
	assert.Empty(t, removed, "no group-version disappears")
	assertReadBack(t, s, created)
	assertStillBound(t, s.client(), pods)
	running = assertRunningAgain(ctx, t, s.client(), running)
	afterLift := s.plan()
	for name, f := range afterLift {
		assert.Equal(t, f.Default, f.Enabled, "%s is at %s's default", name, newMinor)
	}
	// upgrade-plan in step 2 named exactly what lifting changed.
	assert.Equal(t, added, plan.Added.GroupVersions, "upgrade-plan named the group-versions that appeared")
	assert.Empty(t, plan.Removed.GroupVersions)
	liveAdded, liveRemoved := upgradeplan.Diff(upgradeplan.LiveAPIs(before.lists), upgradeplan.LiveAPIs(after.lists))
	assert.Equal(t, liveAdded.Resources, plan.Added.Resources, "upgrade-plan named the resources that appeared")
	assert.Equal(t, liveRemoved.Resources, plan.Removed.Resources)
	var flipped []string
	for name, f := range afterLift {
		if b, ok := beforeLift[name]; ok && b.Enabled != f.Enabled {
			flipped = append(flipped, name)
		} else if !ok && f.Enabled {
			flipped = append(flipped, name)
		}
	}
	sort.Strings(flipped)
	var planned []string
	for _, g := range plan.Gates {
		planned = append(planned, g.Name)
	}
	assert.Equal(t, flipped, planned, "upgrade-plan named the gates whose value flipped")
	t.Logf("upgrade-plan %s -> %s named %d gates, group-versions %v, resources %v; all seen at step 4", oldMinor, newMinor, len(planned), plan.Added.GroupVersions, plan.Added.Resources)
	stopServer(t, s)
}

// runUpgradePlan runs `bin upgrade-plan args...` against s: its output
// (stdout and stderr) and exit status.
func runUpgradePlan(t *testing.T, s *server, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"upgrade-plan", "--status-address=" + s.statusAddress()}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		require.IsType(t, &exec.ExitError{}, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// upgradePlan runs `bin upgrade-plan --to-emulated-version to -o json`
// against s: exit status 3 (something changes).
func upgradePlan(t *testing.T, s *server, bin, to string) upgradeplan.Report {
	t.Helper()
	cmd := exec.Command(bin, "upgrade-plan", "--status-address="+s.statusAddress(), "--to-emulated-version="+to,
		"--kubeconfig="+filepath.Join(s.dataDir, "admin.kubeconfig"), "-o", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.Error(t, err, "exit status 3 when something changes")
	require.Equal(t, 3, cmd.ProcessState.ExitCode(), stderr.String())
	var r upgradeplan.Report
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	return r
}

// wantNewGroupVersions are the group-versions the newer binary serves by
// default once it stops emulating the older minor (found by this test's
// step 4 and kept here, so that a change is seen).
func wantNewGroupVersions(t *testing.T, oldMinor, newMinor string) []string {
	switch oldMinor + "->" + newMinor {
	case "1.36->1.37":
		return []string{"storagemigration.k8s.io/v1"}
	}
	t.Fatalf("no rehearsal expectations for %s -> %s: add them to wantNewGroupVersions and expectedUnderEmulation", oldMinor, newMinor)
	return nil
}

// expectedUnderEmulation: where the newer binary emulating the older minor
// does not look exactly like the older binary, by upstream's design.
func expectedUnderEmulation(oldMinor, newMinor string) (resources, gates []expectedDifference) {
	if oldMinor+"->"+newMinor != "1.36->1.37" {
		return nil, nil
	}
	return []expectedDifference{{
			kind: "resources",
			what: "+storage.k8s.io/v1/csinodes/status",
			why: "1.37 registers the csinodes status subresource unconditionally (k8s.io/kubernetes@v1.37.2 pkg/registry/storage/rest/storage_storage.go:112); " +
				"the emulation filter removes kinds introduced after the emulated version (k8s.io/apiserver@v0.37.2 pkg/server/deleted_kinds.go:225-288), and a subresource of a kind 1.36 serves is kept",
		}}, []expectedDifference{{
			kind: "feature gates",
			what: "+KubeProxyIPVS",
			why:  "a gate new in 1.37 for behaviour that always existed: GA and on since 1.0, deprecated in 1.37 (k8s.io/kubernetes@v1.37.2 pkg/features/kube_features.go:1735-1737), so it is on at emulation 1.36",
		}}
}

// checkDifferences fails on every difference in got that expected does not
// list, and on every listed one that got does not have; it logs the listed
// ones with their reason.
func checkDifferences(t *testing.T, what string, got []string, expected []expectedDifference) {
	t.Helper()
	expected = slices.DeleteFunc(slices.Clone(expected), func(e expectedDifference) bool { return e.kind != what })
	for _, d := range got {
		i := slices.IndexFunc(expected, func(e expectedDifference) bool { return e.what == d })
		if i < 0 {
			t.Errorf("%s: %s differs, and upstream gives no reason this test knows", what, d)
			continue
		}
		t.Logf("%s: expected difference %s: %s", what, d, expected[i].why)
	}
	for _, e := range expected {
		if !slices.Contains(got, e.what) {
			t.Errorf("%s: the expected difference %s no longer occurs: remove it from expectedUnderEmulation", what, e.what)
		}
	}
}

// rehearsalStep starts bin on s's data dir and ports, waits until it is
// ready, and checks that its plan and its log say it emulates emulated.
func rehearsalStep(t *testing.T, s *server, bin, emulated, name string, args ...string) {
	t.Helper()
	s.bin = bin
	started := time.Now()
	s.start(args...)
	s.waitReady(2 * time.Minute)
	t.Logf("step %s: %s %v ready in %s", name, bin, args, time.Since(started).Round(time.Millisecond))
	plan := s.fullPlan()
	assert.Equal(t, emulated, plan.EmulationVersion, "step %s: the plan's emulated version", name)
	assert.Regexp(t, `"Running Kubernetes" logger="k3s-like" version="v\S+" emulatedVersion="`+regexp.QuoteMeta(emulated)+`"`, s.stderr.String(), "step %s: the log's emulated version", name)
}

// stopServer sends SIGTERM and expects exit 0 within 30 s.
func stopServer(t *testing.T, s *server) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	require.Equal(t, 0, code, testenv.Tail(s.stderr.String(), 20))
}

// binaryMinor is "1.NN" from `bin --version`.
func binaryMinor(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^  kubernetes:  v(\d+\.\d+)\.`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "%s --version: %s", bin, out)
	return m[1]
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	_, err := fmt.Sscanf(strings.TrimSuffix(s, "+"), "%d", &n)
	require.NoError(t, err, s)
	return n
}

// createRehearsalObjects creates rehearsalObjects for step (and the custom
// object once its CRD is served) and returns them as the server returned
// them.
func createRehearsalObjects(t *testing.T, s *server, step string) []*unstructured.Unstructured {
	t.Helper()
	ctx := t.Context()
	dyn := s.dynamic()
	kind := "S" + step
	var out []*unstructured.Unstructured
	create := func(doc string) {
		obj := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj.Object), doc)
		res := resourceFor(t, s, obj.GroupVersionKind())
		got, err := dyn.Resource(res).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
		require.NoError(t, err, "creating %s %s", obj.GetKind(), obj.GetName())
		out = append(out, got)
	}
	docs := strings.ReplaceAll(strings.ReplaceAll(rehearsalObjects, "STEPKIND", kind), "STEP", step)
	for _, doc := range strings.Split(docs, "\n---\n") {
		create(doc)
	}
	custom := strings.ReplaceAll(strings.ReplaceAll(rehearsalCustom, "STEPKIND", kind), "STEP", step)
	gv := schema.GroupVersion{Group: "rehearsal.example.com", Version: "v1"}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := s.client().Discovery().ServerResourcesForGroupVersion(gv.String())
		return err == nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == "Widget"+kind }), nil
	}), "the CRD of step %s is served", step)
	create(custom)
	return out
}

// resourceFor maps gvk to its resource with the server's discovery.
func resourceFor(t *testing.T, s *server, gvk schema.GroupVersionKind) schema.GroupVersionResource {
	t.Helper()
	groups, err := restmapper.GetAPIGroupResources(s.client().Discovery())
	require.NoError(t, err)
	m, err := restmapper.NewDiscoveryRESTMapper(groups).RESTMapping(gvk.GroupKind(), gvk.Version)
	require.NoError(t, err, "%s", gvk)
	return m.Resource
}

// assertReadBack reads every object back and compares it with what was
// created: everything but status, resourceVersion and managedFields (the
// controllers may update status; nothing else may change).
func assertReadBack(t *testing.T, s *server, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn := s.dynamic()
	for _, want := range objs {
		res := resourceFor(t, s, want.GroupVersionKind())
		got, err := dyn.Resource(res).Namespace(want.GetNamespace()).Get(t.Context(), want.GetName(), metav1.GetOptions{})
		if !assert.NoError(t, err, "%s %s reads back", want.GetKind(), want.GetName()) {
			continue
		}
		assert.Equal(t, stable(want), stable(got), "%s %s reads back unchanged", want.GetKind(), want.GetName())
	}
}

func stable(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	return c.Object
}

// boundPods are the Pods of the default namespace: name/uid -> node.
func boundPods(t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	list, err := c.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, p := range list.Items {
		require.NotEmpty(t, p.Spec.NodeName, "Pod %s is bound", p.Name)
		out[p.Name+"/"+string(p.UID)] = p.Spec.NodeName
	}
	return out
}

// assertStillBound: every Pod of pods exists with its UID, on its node.
func assertStillBound(t *testing.T, c kubernetes.Interface, pods map[string]string) {
	t.Helper()
	now := boundPods(t, c)
	for k, node := range pods {
		assert.Equal(t, node, now[k], "Pod %s is still bound to %s", k, node)
	}
}

// apis is what a server serves, from discovery: every group-version and
// resource (subresources included), and discovery's lists.
type apis struct {
	upgradeplan.APIs
	lists []*metav1.APIResourceList
}

func servedAPIs(t *testing.T, s *server) apis {
	t.Helper()
	_, lists, err := s.client().Discovery().ServerGroupsAndResources()
	require.NoError(t, err)
	out := apis{lists: lists}
	for _, l := range lists {
		if strings.HasPrefix(l.GroupVersion, "rehearsal.example.com/") {
			continue // the rehearsal's own CRDs
		}
		out.GroupVersions = append(out.GroupVersions, l.GroupVersion)
		for _, r := range l.APIResources {
			out.Resources = append(out.Resources, l.GroupVersion+"/"+r.Name)
		}
	}
	sort.Strings(out.GroupVersions)
	sort.Strings(out.Resources)
	return out
}

// assertSameAPIs: the group-versions and resources are the same, but for
// the expected differences.
func assertSameAPIs(t *testing.T, want, got apis, expected []expectedDifference) {
	t.Helper()
	added, removed := upgradeplan.Diff(want.APIs, got.APIs)
	checkDifferences(t, "group-versions", signed(added.GroupVersions, removed.GroupVersions), expected)
	checkDifferences(t, "resources", signed(added.Resources, removed.Resources), expected)
}

// signed is added as "+x" and removed as "-x".
func signed(added, removed []string) []string {
	var out []string
	for _, a := range added {
		out = append(out, "+"+a)
	}
	for _, r := range removed {
		out = append(out, "-"+r)
	}
	return out
}

// assertGates: every gate both plans know has its old value; a gate only
// the new one knows is off (nothing sets one).
// ("+Name": a new gate that is on; "~Name": a gate whose value changed.)
func assertGates(t *testing.T, old, now map[string]scoping.FeatureState, expected []expectedDifference) {
	t.Helper()
	var diffs []string
	for name, f := range now {
		o, ok := old[name]
		switch {
		case !ok && f.Enabled:
			diffs = append(diffs, "+"+name)
		case ok && o.Enabled != f.Enabled:
			diffs = append(diffs, "~"+name)
		}
	}
	sort.Strings(diffs)
	checkDifferences(t, "feature gates", diffs, expected)
}
