package components_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/cmd/kube-controller-manager/names"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping"
)

// restartCycles are the three starts of TestThreeStartsInOneProcess: each
// turns on one component's real alpha gate (testenv.APIServerGate and the
// others: off by default in both minors) and leaves the other two at their
// defaults.
var restartCycles = []struct{ component, gate string }{
	{components.APIServerName, testenv.APIServerGate},
	{components.SchedulerName, testenv.SchedulerGate},
	{components.ControllerManagerName, testenv.ControllerManagerGate},
}

// What a start must not log (the child's whole output is searched): the
// process-wide registrations that made a second start fail before the
// adapters released them.
var restartForbidden = []string{
	components.UpstreamInformerNameTaken,     // client-go informer names
	components.UpstreamConfigzTwice,          // configz: register config %q twice
	components.UpstreamKCMInformerNameFailed, // kube-controller-manager's wrapping of the first
}

// From the second start on, kube-controller-manager's ReplicaSet controller
// logs "unable to register metrics" with this error: its constructor
// registers two package-level metrics (pkg/controller/replicaset/metrics)
// on every call, not under a sync.Once, and the second registration of the
// same collectors is refused. The collectors registered at the first start
// keep counting, so nothing is lost; any other duplicate registration fails
// the test.
const (
	duplicateMetrics         = components.UpstreamDuplicateMetrics
	duplicateMetricsExpected = `logger="` + names.ReplicaSetController + `"`
)

const cycleMarker = "KUBEHARNESS-CYCLE "

func init() {
	scenarios["three-starts"] = scenarioThreeStarts
}

// TestThreeStartsInOneProcess starts the real control plane (etcd, the
// three adapters through one harness each time) and stops it three times
// in one child process, each start with a different component's alpha gate
// on, and checks that every start runs exactly the gates it asked for,
// works (a Deployment's Pod is bound), stops cleanly (Run nil, ports free,
// no goroutine left), and that the process's memory does not grow from
// start to start.
func TestThreeStartsInOneProcess(t *testing.T) {
	requireVersion(t)
	r := runChild(t, "three-starts")
	out, err := os.ReadFile(r.Log)
	require.NoError(t, err)
	// Which cycle said what: the child prints a marker before each.
	cycle := "before the first start"
	duplicates := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, cycleMarker); ok {
			cycle = "cycle " + n
		}
		for _, bad := range restartForbidden {
			if strings.Contains(line, bad) {
				t.Errorf("%s logged %q: %s", cycle, bad, line)
			}
		}
		if strings.Contains(line, duplicateMetrics) {
			if strings.Contains(line, duplicateMetricsExpected) {
				duplicates[cycle]++
			} else {
				t.Errorf("%s: a duplicate metrics registration other than the ReplicaSet controller's: %s", cycle, line)
			}
		}
	}
	for i := range restartCycles {
		n := strconv.Itoa(i + 1)
		t.Logf("cycle %s: start→ready %s, →Pod bound %s, stop %s, ports free %s after Run returned, goroutines settled %s, VmRSS %s kB",
			n, r.Results["cycle"+n+"_ready"], r.Results["cycle"+n+"_bound"], r.Results["cycle"+n+"_stop"],
			r.Results["cycle"+n+"_ports_free"], r.Results["cycle"+n+"_leak_settle"], r.Results["cycle"+n+"_rss_kb"])
	}
	t.Logf("VmRSS after cycle 1: %s kB, after cycle 3: %s kB, ratio %s", r.Results["cycle1_rss_kb"], r.Results["cycle3_rss_kb"], r.Results["rss_ratio"])
	t.Logf("the ReplicaSet controller's known duplicate metrics registration (harmless), by cycle: %v", duplicates)
}

func scenarioThreeStarts(t *testing.T) {
	baseline := leakBaseline()
	dir := t.TempDir()
	env, err := testenv.Start(dir)
	require.NoError(t, err)
	defer func() { env.Close() }()

	rss := make([]int64, len(restartCycles))
	for i, c := range restartCycles {
		n := strconv.Itoa(i + 1)
		fmt.Println(cycleMarker + n)
		if i > 0 {
			// The datastore is kept, etcd restarted on it: what a distro
			// restarting its control plane does.
			env.Etcd, err = testenv.StartEtcd(filepath.Join(dir, "etcd"), env.PKI)
			require.NoError(t, err, "cycle %s: restarting etcd", n)
		}
		args := map[string][]string{c.component: {"--feature-gates=" + c.gate + "=true"}}
		// The apiserver's process-wide capabilities (first caller wins
		// upstream) follow each start too: the second start turns
		// privileged containers off.
		allowPrivileged := i != 1
		args[components.APIServerName] = append(args[components.APIServerName], "--allow-privileged="+strconv.FormatBool(allowPrivileged))
		cp := newControlPlane(t, env, args[components.APIServerName], args[components.SchedulerName], args[components.ControllerManagerName])
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		done := harnesstest.StartReady(t, ctx, cp.h, 2*time.Minute)
		testenv.ChildResult("cycle"+n+"_ready", time.Since(start).Round(time.Millisecond))

		checkCycleGates(t, ctx, env, cp.h, i)
		assert.Equal(t, allowPrivileged, capabilities.Get().AllowPrivileged, "cycle %s: --allow-privileged", n)

		client, _ := adminClient(t, env)
		if i == 0 {
			require.NoError(t, testenv.CreateReadyNode(context.Background(), client, "node-1"))
		} else {
			refreshNode(t, client, "node-1") // a heartbeat, so that it stays schedulable
		}
		name := "web-" + n
		require.NoError(t, testenv.CreateDeployment(context.Background(), client, name, 1))
		require.NoError(t, testenv.WaitBound(context.Background(), client, "app="+name, 1, "node-1", 60*time.Second))
		testenv.ChildResult("cycle"+n+"_bound", time.Since(start).Round(time.Millisecond))

		stopStart := time.Now()
		cancel()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("cycle %s: the harness did not return within 2m of cancel", n)
		}
		stopped := time.Now()
		testenv.ChildResult("cycle"+n+"_stop", stopped.Sub(stopStart).Round(time.Millisecond))
		require.NoError(t, err, "cycle %s: a clean stop", n)
		for _, s := range cp.h.Status().Components {
			assert.Equal(t, harness.Stopped, s.State, "cycle %s: %s: %s", n, s.Name, s.Error)
		}
		ports := map[string]int{components.APIServerName: env.APIServerPort, components.SchedulerName: env.SchedulerPort, components.ControllerManagerName: env.ControllerManagerPort}
		err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			for _, p := range ports {
				if !testenv.PortFree(p) {
					return false, nil
				}
			}
			return true, nil
		})
		for name, p := range ports {
			assert.True(t, testenv.PortFree(p), "cycle %s: %s's port %d free after stop", n, name, p)
		}
		require.NoError(t, err, "cycle %s: ports free within 10s of stop", n)
		testenv.ChildResult("cycle"+n+"_ports_free", time.Since(stopped).Round(time.Millisecond))

		env.Etcd.Close()
		fmt.Printf("after stop %s: the process is alive\n", n)
		testenv.ChildResult("cycle"+n+"_leak_settle", verifyNoLeaks(t, baseline, 30*time.Second).Round(time.Millisecond))
		if t.Failed() {
			t.FailNow()
		}
		rss[i] = vmRSS(t)
		testenv.ChildResult("cycle"+n+"_rss_kb", rss[i])
	}
	ratio := float64(rss[len(rss)-1]) / float64(rss[0])
	testenv.ChildResult("rss_ratio", strconv.FormatFloat(ratio, 'f', 3, 64))
	t.Logf("VmRSS after cycle 1: %d kB, after cycle %d: %d kB (ratio %.3f)", rss[0], len(rss), rss[len(rss)-1], ratio)
	assert.LessOrEqual(t, ratio, 1.2, "VmRSS after the last start within 1.2x of after the first")
}

// checkCycleGates checks that exactly cycle i's gate is on — in the
// process gate upstream reads, in the plan, and in the apiserver's
// kubernetes_feature_enabled metric — and every other cycle's is off.
func checkCycleGates(t *testing.T, ctx context.Context, env *testenv.ControlPlane, h *harness.Harness, i int) {
	t.Helper()
	n := i + 1
	plan := h.Status().Plan
	require.NotNil(t, plan)
	states := map[string]scoping.FeatureState{}
	for _, f := range plan.FeatureStates() {
		states[f.Name] = f
	}
	client, _ := adminClient(t, env)
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	require.NoError(t, err)
	for j, c := range restartCycles {
		want := i == j
		assert.Equal(t, want, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(c.gate)), "cycle %d: %s in the process gate", n, c.gate)
		f, ok := states[c.gate]
		if assert.True(t, ok, "cycle %d: %s in the plan", n, c.gate) {
			assert.Equal(t, want, f.Enabled, "cycle %d: %s in the plan", n, c.gate)
			if want && assert.Len(t, f.Requests, 1, c.gate) {
				assert.Equal(t, c.component, f.Requests[0].Component, "cycle %d: %s asked by", n, c.gate)
			}
			if !want {
				assert.Equal(t, scoping.SourceDefault, f.Source, "cycle %d: %s", n, c.gate)
			}
		}
		v := map[bool]string{true: "1", false: "0"}[want]
		line := fmt.Sprintf(`kubernetes_feature_enabled{name="%s",stage="ALPHA"} %s`, c.gate, v)
		if assert.Contains(t, string(raw), line, "cycle %d: /metrics", n) {
			testenv.ChildResult(fmt.Sprintf("cycle%d_metric_%s", n, c.gate), v)
		}
	}
}

// refreshNode renews the Ready condition's heartbeat of a Node no kubelet
// runs for, so that the node lifecycle controller does not taint it.
func refreshNode(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ctx := context.Background()
	node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	now := metav1.Now()
	for k, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			node.Status.Conditions[k].LastHeartbeatTime = now
			node.Status.Conditions[k].Status = corev1.ConditionTrue
		}
	}
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// vmRSS returns the process's resident set size in kB (VmRSS of
// /proc/self/status) after a garbage collection that returns freed memory
// to the operating system.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			require.NoError(t, err, line)
			return kb
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
