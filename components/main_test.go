package components_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apiserver/pkg/server/healthz"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/components/testenv/leaktest"
	"github.com/kubeharness/kubeharness/harness"
)

// processStart is when this test process started, as near as a package
// variable can tell.
var processStart = time.Now()

// Each control-plane scenario runs in its own process: the test binary
// re-executes itself (testenv.RunChild) with the scenario's name, and
// TestChild runs it. Upstream leaves process-wide state behind after a stop
// (the SIGUSR2 handler, the klog flush daemon, metrics; see
// docs/components.md for what the adapters undo), so each scenario starts
// from a pristine process; the scenario of TestThreeStartsInOneProcess then
// starts the control plane three times in its one process.
var scenarios = map[string]func(t *testing.T){}

// TestChild runs the scenario named by testenv.ChildEnv; it is skipped
// unless a parent test started this process for it.
func TestChild(t *testing.T) { testenv.RunScenario(t, scenarios) }

// childResult is what a parent learned from a child.
type childResult struct {
	Results map[string]string
	Wall    time.Duration
	Log     string
}

// runChild runs scenario in a fresh process (this test binary) and fails t
// unless the child passed and printed its end marker.
func runChild(t *testing.T, scenario string) childResult {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), scenario+".log")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run, err := testenv.RunChild(ctx, scenario, logPath)
	if err != nil {
		t.Fatal(err)
	}
	if run.Err != nil || !run.Done {
		t.Errorf("child %s: err=%v, end marker printed=%v; log %s; its last lines:\n%s", scenario, run.Err, run.Done, logPath, testenv.Tail(run.Output, 80))
		keepLog(t, logPath)
		t.FailNow()
	}
	t.Logf("child %s: passed in %s (wall, incl. process start); results %v", scenario, run.Wall.Round(time.Millisecond), run.Results)
	return childResult{Results: run.Results, Wall: run.Wall, Log: logPath}
}

// keepLog copies a failed child's log where it survives the test.
func keepLog(t *testing.T, path string) {
	dst := filepath.Join(os.TempDir(), "kubeharness-"+filepath.Base(path))
	if b, err := os.ReadFile(path); err == nil && os.WriteFile(dst, b, 0o644) == nil {
		t.Logf("child log kept at %s", dst)
	}
}

// controlPlane is the three adapters, added to a harness in the order and
// with the dependencies a distro would use.
type controlPlane struct {
	h         *harness.Harness
	api       *components.APIServer
	scheduler *components.Scheduler
	kcm       *components.ControllerManager
}

// leakBaseline starts the one never-ending goroutine upstream starts
// lazily, then snapshots the goroutines that exist before the control plane
// starts: the apiserver's healthz "log" check starts, under a sync.Once on
// the first /healthz, /livez or /readyz request, wait.Forever(klog.Flush,
// 1m) and never stops it (k8s.io/apiserver/pkg/server/healthz/healthz.go).
// Calling that check first starts it now, so the snapshot covers exactly
// that goroutine (upstream's integration framework does the same).
func leakBaseline() goleak.Option {
	_ = healthz.LogHealthz.Check(nil)
	return goleak.IgnoreCurrent()
}

// goleakIgnores are the goroutines that outlive a stopped control plane
// by design; each is documented in README.md.
func goleakIgnores(baseline goleak.Option) []goleak.Option {
	return []goleak.Option{
		baseline,
		// klog's flush daemon: started once per process by logsapi when the
		// barrier applies logging; it runs for the life of the process, as in
		// every upstream binary.
		goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}

// verifyNoLeaks retries goleak.Find for up to wait (stopping servers close
// connections asynchronously), collecting garbage between tries so that
// client-go transports whose certificate-reload goroutines end with them are
// collected; then fails t with what is left (but for extra).
func verifyNoLeaks(t *testing.T, baseline goleak.Option, wait time.Duration, extra ...goleak.Option) time.Duration {
	t.Helper()
	t.Logf("goroutines right after stop, by first function: %v", goroutineTops())
	settled, err := leaktest.FindLeaks(wait, 500*time.Millisecond, append(goleakIgnores(baseline), extra...)...)
	if err != nil {
		t.Errorf("goroutines left %s after stop:\n%v", wait, err)
	}
	return settled
}

// runSpy wraps a component and counts the calls of its Run.
type runSpy struct {
	harness.Component
	runs atomic.Int32
}

func (s *runSpy) Run(ctx context.Context) error {
	s.runs.Add(1)
	return s.Component.Run(ctx)
}

// Ready delegates to the wrapped component's Ready, if it has one.
func (s *runSpy) Ready(ctx context.Context) error {
	if r, ok := s.Component.(harness.Readier); ok {
		return r.Ready(ctx)
	}
	return nil
}

// goroutineTops counts the goroutines of the process by their first
// function, for the log: what was still stopping when the harness returned.
func goroutineTops() map[string]int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 {
			continue
		}
		fn := lines[1]
		if i := strings.LastIndex(fn, "("); i > 0 {
			fn = fn[:i]
		}
		out[fn]++
	}
	return out
}
