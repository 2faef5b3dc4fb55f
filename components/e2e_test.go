package components_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping"
)

// wantVersion is what the tests must be built with (see README.md): the
// version stamped by -ldflags, which requireVersion checks against the minor
// of the k8s.io/kubernetes this binary was built from (v1.37 from go.mod,
// v1.36 from go.k8s-1.36.mod).
var wantVersion = version.Get().GitVersion

// The three real alpha gates the tests turn on, one per component, off by
// default in both minors (see testenv.APIServerGate).
const (
	apiserverGate  = testenv.APIServerGate
	schedulerGate  = testenv.SchedulerGate
	controllerGate = testenv.ControllerManagerGate
)

func init() {
	scenarios["deploy"] = scenarioDeploy
	scenarios["gates"] = scenarioThreeGates
	scenarios["conflict"] = scenarioConflict
	scenarios["lease-lost"] = scenarioLeaseLost
	scenarios["stop-early"] = scenarioStopEarly
	scenarios["rest-config"] = scenarioRESTConfig // restconfig_e2e_test.go
}

// requireVersion fails fast when the test binary was built without the
// version ldflags: every component would report v0.0.0-master.
func requireVersion(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane: not in -short mode")
	}
	if v := version.Get().GitVersion; !strings.HasPrefix(v, "v"+version.DefaultKubeBinaryVersion+".") {
		t.Fatalf("built with component-base version %q, want v%s.x: run `make test` in components/ (it passes -ldflags -X k8s.io/component-base/version.gitVersion=v%s.x ...)", v, version.DefaultKubeBinaryVersion, version.DefaultKubeBinaryVersion)
	}
}

// TestControlPlane starts the three real components against embedded etcd
// in a fresh process, has a Deployment's Pods bound to a Node, stops, and
// checks that every component returned, the process lives on, the leases
// were released and no goroutine leaked. Then it does it all again in
// another fresh process.
func TestControlPlane(t *testing.T) {
	requireVersion(t)
	first := runChild(t, "deploy")
	second := runChild(t, "deploy")
	for i, r := range []childResult{first, second} {
		t.Logf("start %d: process→ready %s, harness start→ready %s, harness start→3 Pods bound %s, stop %s, goroutines settled %s after stop, child wall %s",
			i+1, r.Results["process_to_ready"], r.Results["start_to_ready"], r.Results["start_to_bound"], r.Results["stop"], r.Results["leak_settle"], r.Wall.Round(time.Millisecond))
	}
}

// TestThreeGates gives each component a different alpha gate and checks
// all three are on process-wide after the barrier.
func TestThreeGates(t *testing.T) {
	requireVersion(t)
	runChild(t, "gates")
}

// TestGateConflict sets one gate true in the apiserver and false in the
// scheduler: the start fails at the barrier, naming both, before any port
// is opened or etcd written.
func TestGateConflict(t *testing.T) {
	requireVersion(t)
	runChild(t, "conflict")
}

// TestLeaseLost takes the scheduler's lease away while it runs: only the
// scheduler's Run returns (ErrLeaseLost), the harness stops the rest, and
// the process lives on.
func TestLeaseLost(t *testing.T) {
	requireVersion(t)
	runChild(t, "lease-lost")
}

// TestStopBeforeReady cancels the harness while the apiserver is still
// starting: upstream's post-start hooks would klog.Fatalf (exit the process)
// if their context ended before they finished; the adapter waits for
// readiness first, then stops cleanly.
func TestStopBeforeReady(t *testing.T) {
	requireVersion(t)
	runChild(t, "stop-early")
}

// newControlPlane adds the three adapters (and extra components between the
// apiserver and the others: they depend on the apiserver, the scheduler and
// the controller-manager depend on them, so that they stop after the
// scheduler and the controller-manager and before the apiserver) to a new
// harness.
func newControlPlane(t *testing.T, env *testenv.ControlPlane, apiArgs, schedArgs, kcmArgs []string, extra ...harness.Component) *controlPlane {
	t.Helper()
	cp := &controlPlane{
		h:         &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, StopTimeout: time.Minute},
		api:       components.NewAPIServer(),
		scheduler: components.NewScheduler(),
		kcm:       components.NewControllerManager(),
	}
	require.NoError(t, controlplane.Components{APIServer: cp.api, Extra: extra, Scheduler: cp.scheduler, ControllerManager: cp.kcm}.Add(cp.h, map[string][]string{
		components.APIServerName:         env.APIServerArgs(apiArgs...),
		components.SchedulerName:         env.SchedulerArgs(schedArgs...),
		components.ControllerManagerName: env.ControllerManagerArgs(kcmArgs...),
	}))
	return cp
}

func adminClient(t *testing.T, env *testenv.ControlPlane) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	cfg, err := env.AdminConfig()
	require.NoError(t, err)
	return kubernetes.NewForConfigOrDie(cfg), cfg
}

func scenarioDeploy(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()

	leases := &leaseObserver{env: env}
	cp := newControlPlane(t, env, nil, nil, nil, leases)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	done := harnesstest.StartReady(t, ctx, cp.h, 2*time.Minute)
	testenv.ChildResult("start_to_ready", time.Since(start).Round(time.Millisecond))
	testenv.ChildResult("process_to_ready", time.Since(processStart).Round(time.Millisecond))

	client, _ := adminClient(t, env)
	sv, err := client.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, wantVersion, sv.GitVersion, "/version")
	assert.True(t, cp.scheduler.LeaderElection().Enabled, "the scheduler runs its own elector (upstream's default --leader-elect=true)")
	assert.True(t, cp.kcm.LeaderElection().Enabled, "the controller-manager runs its own elector")

	require.NoError(t, testenv.CreateReadyNode(context.Background(), client, "node-1"))
	require.NoError(t, testenv.CreateDeployment(context.Background(), client, "web", 3))
	require.NoError(t, testenv.WaitBound(context.Background(), client, "app=web", 3, "node-1", 60*time.Second))
	testenv.ChildResult("start_to_bound", time.Since(start).Round(time.Millisecond))

	stopStart := time.Now()
	err = harnesstest.Stop(t, cancel, done, 2*time.Minute)
	testenv.ChildResult("stop", time.Since(stopStart).Round(time.Millisecond))
	require.NoError(t, err, "a clean stop")
	for _, c := range cp.h.Status().Components {
		assert.Equal(t, harness.Stopped, c.State, "%s: %s", c.Name, c.Error)
	}
	// Read after the scheduler and the controller-manager stopped, before
	// the apiserver did: the release on stop empties the holder.
	require.NoError(t, leases.err)
	for _, name := range []string{components.SchedulerName, components.ControllerManagerName} {
		h, ok := leases.holders[name]
		assert.True(t, ok, "lease %s exists", name)
		assert.Empty(t, h, "lease %s released on stop", name)
	}

	env.Close()
	fmt.Println("after stop: the process is alive")
	testenv.ChildResult("leak_settle", verifyNoLeaks(t, baseline, 30*time.Second).Round(time.Millisecond))
}

func scenarioThreeGates(t *testing.T) {
	baseline := leakBaseline()
	gates := map[string]string{apiserverGate: components.APIServerName, schedulerGate: components.SchedulerName, controllerGate: components.ControllerManagerName}
	for g := range gates {
		require.False(t, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g)), "%s off before the barrier", g)
	}
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	cp := newControlPlane(t, env,
		[]string{"--feature-gates=" + apiserverGate + "=true"},
		[]string{"--feature-gates=" + schedulerGate + "=true"},
		[]string{"--feature-gates=" + controllerGate + "=true"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, cp.h, 2*time.Minute)

	// The process gate upstream reads.
	for g := range gates {
		assert.True(t, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g)), "%s on process-wide", g)
	}
	// The plan says who asked for each.
	plan := cp.h.Status().Plan
	require.NotNil(t, plan)
	found := 0
	for _, f := range plan.FeatureStates() {
		if comp, ok := gates[f.Name]; ok {
			found++
			assert.True(t, f.Enabled, f.Name)
			assert.Equal(t, scoping.SourceFlag, f.Source, f.Name)
			require.Len(t, f.Requests, 1, f.Name)
			assert.Equal(t, comp, f.Requests[0].Component, f.Name)
		}
	}
	assert.Equal(t, len(gates), found, "every gate is in the plan")
	// The apiserver's /metrics (the process's one legacy registry).
	client, _ := adminClient(t, env)
	raw, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	require.NoError(t, err)
	for g := range gates {
		line := fmt.Sprintf(`kubernetes_feature_enabled{name="%s",stage="ALPHA"} 1`, g)
		assert.Contains(t, string(raw), line)
		if strings.Contains(string(raw), line) {
			testenv.ChildResult("metric_"+g, "1")
		}
	}

	cancel()
	require.NoError(t, <-done)
	env.Close()
	verifyNoLeaks(t, baseline, 30*time.Second)
}

func scenarioConflict(t *testing.T) {
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	cp := &controlPlane{h: &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}}
	spies := []*runSpy{
		{Component: components.NewAPIServer()},
		{Component: components.NewScheduler()},
		{Component: components.NewControllerManager()},
	}
	require.NoError(t, cp.h.Add(spies[0], env.APIServerArgs("--feature-gates="+apiserverGate+"=true")))
	require.NoError(t, cp.h.Add(spies[1], env.SchedulerArgs("--feature-gates="+apiserverGate+"=false"), components.APIServerName))
	require.NoError(t, cp.h.Add(spies[2], env.ControllerManagerArgs(), components.APIServerName))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	err = cp.h.Run(ctx)
	testenv.ChildResult("fail_after", time.Since(start).Round(time.Millisecond))
	require.Error(t, err)
	t.Logf("the harness said:\n%v", err)
	var pe *harness.PhaseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, harness.PhaseBarrier, pe.Phase)
	var ce *scoping.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	for _, want := range []string{apiserverGate, components.APIServerName, components.SchedulerName,
		"--feature-gates=" + apiserverGate + "=true", "--feature-gates=" + apiserverGate + "=false"} {
		assert.Contains(t, err.Error(), want)
	}

	for _, s := range spies {
		assert.Zero(t, s.runs.Load(), "%s: Run never called", s.Name())
	}
	for name, port := range map[string]int{"apiserver": env.APIServerPort, "scheduler": env.SchedulerPort, "controller-manager": env.ControllerManagerPort} {
		assert.True(t, testenv.PortFree(port), "%s port %d was never opened: listening on it succeeds", name, port)
	}
	n, err := env.Etcd.KeyCount(ctx, "/registry")
	require.NoError(t, err)
	assert.Zero(t, n, "no keys under /registry")
	testenv.ChildResult("registry_keys", n)
	assert.False(t, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(apiserverGate)), "the process gate was not touched")
}

func scenarioLeaseLost(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	cp := newControlPlane(t, env, nil,
		[]string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, cp.h, 2*time.Minute)
	client, _ := adminClient(t, env)

	// Another instance takes the lease over, for an hour.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, components.SchedulerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec.HolderIdentity = ptr.To("another-instance")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](3600)
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, err = client.CoordinationV1().Leases("kube-system").Update(ctx, l, metav1.UpdateOptions{})
		return err
	}))
	stolen := time.Now()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the harness did not stop within a minute of the lease being taken")
	}
	testenv.ChildResult("lease_lost_to_harness_stopped", time.Since(stolen).Round(time.Millisecond))
	require.Error(t, err)
	t.Logf("the harness said: %v", err)
	require.ErrorIs(t, err, components.ErrLeaseLost)
	var ce *harness.ComponentError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, components.SchedulerName, ce.Component)
	for _, c := range cp.h.Status().Components {
		if c.Name == components.SchedulerName {
			assert.Equal(t, harness.Failed, c.State)
		} else {
			assert.Equal(t, harness.Stopped, c.State, "%s: %s", c.Name, c.Error)
		}
	}
	env.Close()
	fmt.Println("after the lost lease: the process is alive")
	verifyNoLeaks(t, baseline, 30*time.Second)
}

// leaseObserver is a component the harness stops after the scheduler and
// the controller-manager and before the apiserver; when stopped, it reads
// their leases' holders.
type leaseObserver struct {
	env     *testenv.ControlPlane
	holders map[string]string
	err     error
}

func (o *leaseObserver) Name() string                  { return "lease-observer" }
func (o *leaseObserver) AddFlags(*scoping.Scope) error { return nil }
func (o *leaseObserver) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (o *leaseObserver) Stop(ctx context.Context) error {
	cfg, err := o.env.AdminConfig()
	if err != nil {
		o.err = err
		return nil
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	o.holders = map[string]string{}
	for _, name := range []string{components.SchedulerName, components.ControllerManagerName} {
		var l *coordinationv1.Lease
		l, err = client.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			o.err = errors.Join(o.err, err)
			continue
		}
		o.holders[name] = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	return nil
}

func scenarioStopEarly(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, StopTimeout: 2 * time.Minute}
	// The harness's view of the apiserver is held at Starting: its Ready
	// returns only once the test releases it, which it never does. That is
	// the harness's "not ready yet", whatever the server does meanwhile.
	held := &heldReady{Component: components.NewAPIServer(), release: make(chan struct{})}
	require.NoError(t, h.Add(held, env.APIServerArgs()))
	// The adapter logs through the context's logger; the test records
	// what it said, to report which way it stopped.
	rec := &logRecorder{}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), rec.logger(klog.Background())))
	defer cancel()
	done := harnesstest.Start(ctx, h)

	// A TLS handshake succeeds once the server serves; its post-start hooks
	// start at the same moment and wait for caches for a few seconds. The
	// harness must say Starting too: a handshake alone may be another test
	// binary's server on a port both picked (go test runs packages in
	// parallel), which answered here once while this one was still parsing.
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(env.APIServerPort))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		if h.Status().Components[0].State != harness.Starting {
			return false, nil
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only: is it serving?
		if err != nil {
			return false, nil
		}
		_ = c.Close()
		return true, nil
	}))
	state := h.Status().Components[0].State
	testenv.ChildResult("state_at_cancel", state)
	require.Equal(t, harness.Starting, state, "cancelled before the apiserver was ready (its Ready is held)")
	err = harnesstest.Stop(t, cancel, done, 2*time.Minute)
	require.NoError(t, err)
	// Whether the server's own readiness had come before the cancel depends
	// on how long its post-start hooks took: reported, not asserted.
	waited := rec.saw(apiserverWaitedMsg)
	testenv.ChildResult("adapter_waited_for_readiness", waited)
	t.Logf("the adapter waited for the server's readiness before stopping it: %v", waited)
	env.Close()
	fmt.Println("after an early stop: the process is alive")
	verifyNoLeaks(t, baseline, 30*time.Second)
}

// apiserverWaitedMsg is what APIServer.Run logs when it was asked to stop
// before its server was ready.
const apiserverWaitedMsg = "Stop requested before the apiserver was ready; waiting for readiness first, as cancelling its post-start hooks earlier exits the process"

// heldReady wraps a component whose Ready returns only after release is
// closed (and the wrapped component is ready).
type heldReady struct {
	harness.Component
	release chan struct{}
}

func (h *heldReady) Ready(ctx context.Context) error {
	select {
	case <-h.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r, ok := h.Component.(harness.Readier); ok {
		return r.Ready(ctx)
	}
	return nil
}

// logRecorder records the messages logged through the loggers it made,
// which also pass everything on to the logger they wrap.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) logger(l logr.Logger) logr.Logger {
	return logr.New(recordingSink{LogSink: l.GetSink(), rec: r})
}

func (r *logRecorder) add(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msg)
}

func (r *logRecorder) saw(msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.msgs, msg)
}

type recordingSink struct {
	logr.LogSink
	rec *logRecorder
}

func (s recordingSink) Info(level int, msg string, kv ...any) {
	s.rec.add(msg)
	s.LogSink.Info(level, msg, kv...)
}

func (s recordingSink) Error(err error, msg string, kv ...any) {
	s.rec.add(msg)
	s.LogSink.Error(err, msg, kv...)
}

func (s recordingSink) WithValues(kv ...any) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithValues(kv...), rec: s.rec}
}

func (s recordingSink) WithName(name string) logr.LogSink {
	return recordingSink{LogSink: s.LogSink.WithName(name), rec: s.rec}
}
