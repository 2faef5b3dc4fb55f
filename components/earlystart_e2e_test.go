package components_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
)

func init() { scenarios["early-start"] = scenarioEarlyStart }

// TestEarlyStartHoldsRequests: the scheduler and the controller-manager
// start (their Run is called) while the harness still waits for the
// apiserver's readiness, and not one request of theirs reaches the
// apiserver until the harness sees it ready — even with the server itself
// answering /readyz 200 for a second by then; after it, both take their
// lease and are ready. The apiserver's audit log is the witness.
func TestEarlyStartHoldsRequests(t *testing.T) {
	requireVersion(t)
	runChild(t, "early-start")
}

// auditPolicy logs every request's metadata.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

func scenarioEarlyStart(t *testing.T) {
	baseline := leakBaseline()
	dir := t.TempDir()
	env, err := testenv.Start(dir)
	require.NoError(t, err)
	defer env.Close()
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	require.NoError(t, os.WriteFile(policy, []byte(auditPolicy), 0o600))

	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, StopTimeout: time.Minute}
	held := &heldReady{Component: components.NewAPIServer(), release: make(chan struct{})}
	require.NoError(t, controlplane.Components{APIServer: held, Scheduler: components.NewScheduler(), ControllerManager: components.NewControllerManager()}.Add(h, map[string][]string{
		components.APIServerName:         env.APIServerArgs("--audit-policy-file="+policy, "--audit-log-path="+auditLog, "--audit-log-mode=blocking"),
		components.SchedulerName:         env.SchedulerArgs(),
		components.ControllerManagerName: env.ControllerManagerArgs(),
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.Start(ctx, h)

	state := func(name string) harness.State {
		for _, c := range h.Status().Components {
			if c.Name == name {
				return c.State
			}
		}
		return harness.Pending
	}
	// The server answers /readyz 200 (its own readiness) while the
	// harness's view of it is held at Starting; the two early starters run.
	admin, _ := adminClient(t, env)
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var code int
		admin.RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		return code == http.StatusOK, nil
	}))
	time.Sleep(time.Second) // time for a request not held to arrive
	for _, name := range []string{components.SchedulerName, components.ControllerManagerName} {
		require.Equal(t, harness.Starting, state(name), "%s runs while the apiserver is held", name)
	}
	require.Equal(t, harness.Starting, state(components.APIServerName))
	released := time.Now()
	close(held.release)
	require.NoError(t, h.WaitReady(ctx))
	testenv.ChildResult("release_to_ready", time.Since(released).Round(time.Millisecond).String())

	require.NoError(t, harnesstest.Stop(t, cancel, done, time.Minute))
	before, after := auditedRequests(t, auditLog, released)
	testenv.ChildResult("requests_before_release", strconv.Itoa(before))
	testenv.ChildResult("requests_after_release", strconv.Itoa(after))
	assert.Zero(t, before, "requests of the scheduler or the controller-manager before the harness saw the apiserver ready")
	assert.Positive(t, after, "their requests once it was")
	env.Close()
	// The audit log's file writer (lumberjack) starts a goroutine that
	// nothing stops: the audit log is this test's, not the adapters'.
	verifyNoLeaks(t, baseline, 30*time.Second, goleak.IgnoreTopFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}

// auditedRequests counts the audit log's requests made by the scheduler
// and the controller-manager received before and after at.
func auditedRequests(t *testing.T, path string, at time.Time) (before, after int) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<22)
	for sc.Scan() {
		var ev struct {
			Stage    string                    `json:"stage"`
			User     struct{ Username string } `json:"user"`
			Received time.Time                 `json:"requestReceivedTimestamp"`
			URI      string                    `json:"requestURI"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev.Stage != "RequestReceived" || (ev.User.Username != "system:kube-scheduler" && ev.User.Username != "system:kube-controller-manager") {
			continue
		}
		if ev.Received.Before(at) {
			t.Logf("before the release: %s %s at %s", ev.User.Username, ev.URI, ev.Received.Format(time.RFC3339Nano))
			before++
		} else {
			after++
		}
	}
	require.NoError(t, sc.Err())
	return before, after
}
