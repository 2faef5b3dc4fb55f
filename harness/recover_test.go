package harness_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

var errLost = errors.New("lost the leader-election lease")

// recoverer is a Harness.Recover that keeps errLost and records what it
// was asked.
type recoverer struct {
	mu    sync.Mutex
	asked []string
}

func (r *recoverer) recover(name string, err error) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, name+": "+err.Error())
	return errors.Is(err, errLost)
}

func (r *recoverer) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// recoveringHarness is newHarness with a recoverer as its Recover, and a
// journal for its components.
func recoveringHarness(t *testing.T) (*harness.Harness, *recoverer, *journal) {
	h, _ := newHarness(t)
	rec := &recoverer{}
	h.Recover = rec.recover
	return h, rec, &journal{}
}

func restarts(h *harness.Harness) map[string]int {
	out := map[string]int{}
	for _, c := range h.Status().Components {
		out[c.Name] = c.Restarts
	}
	return out
}

// TestRecoverRestartsAFailedComponent: a ← b ← c; b fails after it was
// ready with an error Recover keeps: b and c are restarted (their new
// instances run and are ready), a runs on, Run does not fail, and the stop
// is clean.
func TestRecoverRestartsAFailedComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		b.failAfter, b.failErr = 5*time.Second, errLost // the renewed instance does not fail
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, []string{"--profile=kept"}, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		stop, done := runUntil(t, h)
		synctest.Wait()
		require.True(t, h.Status().Ready())

		time.Sleep(6 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		assert.True(t, h.Status().Ready(), "every component ready again")
		assert.Equal(t, map[string]int{"a": 0, "b": 1, "c": 1}, restarts(h))
		assert.Equal(t, []string{"b: lost the leader-election lease"}, rec.list())
		// The demotion is visible: b recovered once (c was restarted as its
		// dependent, not recovered), with when and why.
		for _, cs := range h.Status().Components {
			switch cs.Name {
			case "b":
				assert.Equal(t, 1, cs.Recoveries)
				if assert.NotNil(t, cs.LastRecovery) {
					assert.Contains(t, cs.LastRecovery.Cause, "lost the leader-election lease")
					assert.False(t, cs.LastRecovery.At.IsZero())
				}
			default:
				assert.Zero(t, cs.Recoveries, cs.Name)
				assert.Nil(t, cs.LastRecovery, cs.Name)
			}
		}
		_, metricsText := get(t, h.Handler(), "/metrics", "")
		assert.Contains(t, metricsText, `kubeharness_component_recoveries_total{component="b"} 1`)
		assert.Contains(t, metricsText, `kubeharness_component_recoveries_total{component="c"} 0`)
		_, table := get(t, h.Handler(), "/components?format=text", "")
		assert.Regexp(t, `(?m)^b\s+ready\s+\S+\s+a\s+1\s+1\s*$`, table)
		var runsOfB []string
		for _, e := range j.list() {
			if strings.HasPrefix(e, "run b profile=") {
				runsOfB = append(runsOfB, e)
			}
		}
		assert.Equal(t, []string{"run b profile=kept", "run b profile=kept"}, runsOfB, "b ran twice, with its arguments")
		assert.NotContains(t, j.list(), "stop a", "a keeps running")

		require.NoError(t, stop(), "the kept failure is no error of Run")
		for _, cs := range h.Status().Components {
			assert.Equal(t, harness.Stopped, cs.State, cs.Name)
		}
	})
}

// TestRecoverWhileOthersStart: a ← b, a ← c; b is ready and fails with an
// error Recover keeps while c still starts (a lease lost while the
// scheduler waits for its own). The harness does not stop: b is restarted
// once Run is in PhaseRun, and WaitReady, called before, waits for it
// instead of returning b's failure.
func TestRecoverWhileOthersStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		b.failAfter, b.failErr = 2*time.Second, errLost // the renewed instance does not fail
		c.readyAfter = 10 * time.Second
		h.ReadyTimeout = time.Minute // not newHarness's 10 s: a tie with c's Ready, either may win
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(c, nil, "a"))
		stop, done := runUntil(t, h)
		waited := make(chan error, 1)
		go func() { waited <- h.WaitReady(t.Context()) }()

		time.Sleep(5 * time.Second) // b failed; c still starting
		synctest.Wait()
		assert.Equal(t, harness.PhaseStart, h.Status().Phase)
		assert.Equal(t, []string{"b: lost the leader-election lease"}, rec.list())
		select {
		case err := <-waited:
			t.Fatalf("WaitReady returned while b was being recovered: %v", err)
		default:
		}

		time.Sleep(10 * time.Second) // c ready: PhaseRun, b restarted
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		case err := <-waited:
			require.NoError(t, err, "WaitReady once b was restarted")
		}
		st := h.Status()
		assert.Equal(t, harness.PhaseRun, st.Phase)
		assert.True(t, st.Ready(), "every component ready")
		assert.Equal(t, map[string]int{"a": 0, "b": 1, "c": 0}, restarts(h))
		require.NoError(t, stop())
	})
}

// TestRecoverDeclines: Recover says no (another error): the harness stops,
// as without Recover, and Run returns the failure.
func TestRecoverDeclines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.failAfter, b.failErr = 5*time.Second, errBoom
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		err := h.Run(t.Context())
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "b", ce.Component)
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, []string{"b: boom"}, rec.list())
		assert.Contains(t, j.list(), "stop a")
	})
}

// TestRecoverRestartFails: the new instance never becomes ready: the
// harness stops, and the error names the failure and the failed restart.
func TestRecoverRestartFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.failAfter, b.failErr = 5*time.Second, errLost
		b.renewed = func(n *renewable) { n.neverReady = true }
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		err := h.Run(t.Context())
		require.Error(t, err)
		assert.ErrorIs(t, err, errLost)
		assert.ErrorContains(t, err, "restarting it failed")
		var de *harness.DeadlineError
		assert.ErrorAs(t, err, &de, "the new instance's Ready timed out")
		assert.Contains(t, j.list(), "stop a")
	})
}

// TestRecoverBeforeReady: a ← b; b fails with an error Recover keeps
// before it was ready (a lease lost while the scheduler waits for its
// caches, the datastore stalled), and its Ready waits for something its
// Run no longer does. The start goes on; b is restarted once Run is in
// PhaseRun, WaitReady waits for it, and nothing waits out ReadyTimeout.
func TestRecoverBeforeReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.failAfter, b.failErr, b.neverReady = 2*time.Second, errLost, true
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		began := time.Now()
		stop, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		assert.Less(t, time.Since(began), 10*time.Second, "b's Ready ends when its Run returned, not at ReadyTimeout (%s)", harness.DefaultReadyTimeout)
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		assert.Equal(t, []string{"b: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 0, "b": 1}, restarts(h))
		st := h.Status()
		for _, c := range st.Components {
			if c.Name == "b" {
				require.NotNil(t, c.LastRecovery)
				assert.Equal(t, "lost the leader-election lease", c.LastRecovery.Cause)
			}
		}
		assert.NotContains(t, j.list(), "stop a", "a keeps running")
		require.NoError(t, stop())
	})
}

// TestRecoverAgainBeforeReady: a ← b ← c; b fails once ready (a lost
// lease); its new instance fails again before it was ready (the lease
// lost again while it starts). Recover keeps both: the restart returns
// without failing the harness, and a third instance of b, then c, run.
func TestRecoverAgainBeforeReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		b.failAfter, b.failErr = 5*time.Second, errLost
		instances := 1
		b.renewed = func(n *renewable) {
			instances++
			if instances == 2 {
				n.failAfter, n.failErr, n.neverReady = 2*time.Second, errLost, true
			}
		}
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		stop, done := runUntil(t, h)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		require.NoError(t, h.WaitReady(t.Context()))
		assert.Equal(t, 3, instances)
		assert.Equal(t, []string{"b: lost the leader-election lease", "b: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 0, "b": 2, "c": 2}, restarts(h))
		for _, cs := range h.Status().Components {
			if cs.Name == "b" {
				assert.Equal(t, 2, cs.Recoveries)
			}
		}
		require.NoError(t, stop())
	})
}

// TestRecoverBeforeReadyWithDependents: a ← b ← c; b fails with an error
// Recover keeps before it was ready. c, which waits for b's readiness,
// never runs in its first instance: it starts after b's new instance, as
// Restart starts dependents, and a runs on.
func TestRecoverBeforeReadyWithDependents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		b.failAfter, b.failErr, b.neverReady = 2*time.Second, errLost, true
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		stop, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		assert.Equal(t, []string{"b: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 0, "b": 1, "c": 1}, restarts(h))
		runs := filter(j.list(), "run")
		count := func(e string) int {
			return len(slices.DeleteFunc(slices.Clone(runs), func(r string) bool { return r != e }))
		}
		assert.Equal(t, 2, count("run b"), "b ran twice: %v", runs)
		assert.Equal(t, 1, count("run c"), "c ran once: %v", runs)
		assert.Equal(t, "run c", runs[len(runs)-1], "c ran after b's new instance: %v", runs)
		require.NoError(t, stop())
		assert.Equal(t, []string{"stop c", "stop b", "stop a"}, filter(j.list(), "stop"))
	})
}

// TestRecoverNotAskedBeforeReadyWithEarlyDependent: a ← b, b an
// EarlyStarter after a (launched as soon as a was); a fails before it was
// ready, with an error Recover would keep. b runs against this instance of
// a: Recover is not asked, and the harness stops.
func TestRecoverNotAskedBeforeReadyWithEarlyDependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a := newRenewable("a", j)
		a.failAfter, a.failErr, a.neverReady = time.Second, errLost, true
		b := early{fake: newFake("b", j), after: []string{"a"}}
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		err := h.Run(t.Context())
		assert.ErrorIs(t, err, errLost)
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "a", ce.Component)
		assert.Equal(t, harness.PhaseStart, ce.Phase)
		assert.Empty(t, rec.list())
		assert.Contains(t, j.list(), "stop b")
	})
}

// TestReadyFailsWhileRunRuns: a Ready that fails on its own, its Run still
// running, is the component's failure in phase start: Recover is not
// asked (Run did not fail), and the harness stops.
func TestReadyFailsWhileRunRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a := newRenewable("a", j)
		a.readyErr = errLost
		require.NoError(t, h.Add(a, nil))
		err := h.Run(t.Context())
		assert.ErrorIs(t, err, errLost)
		assert.Empty(t, rec.list())
		assert.Contains(t, j.list(), "stop a")
	})
}
