package harness_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// runUntil runs h in the background; stop cancels it and returns Run's error.
func runUntil(t *testing.T, h *harness.Harness) (stop func() error, done <-chan error) {
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- h.Run(ctx) }()
	return func() error { cancel(); return <-errc }, errc
}

func TestStartOrderChain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b, c := newFake("a", j), newFake("b", j), newFake("c", j)
		a.readyAfter, b.readyAfter, c.readyAfter = 3*time.Second, 2*time.Second, time.Second
		require.NoError(t, h.Add(c, nil, "b"))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(a, nil))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		assert.True(t, h.Status().Ready())
		require.NoError(t, stop())
		assert.Equal(t, []string{"run a", "ready a", "run b", "ready b", "run c", "ready c", "stop c", "stop b", "stop a"}, j.list())
		for _, c := range h.Status().Components {
			assert.Equal(t, harness.Stopped, c.State, c.Name)
		}
	})
}

func TestStartOrderDiamond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		top, left, right, bottom := newFake("top", j), newFake("left", j), newFake("right", j), newFake("bottom", j)
		top.readyAfter, left.readyAfter, right.readyAfter = time.Second, time.Second, 3*time.Second
		require.NoError(t, h.Add(bottom, nil, "left", "right"))
		require.NoError(t, h.Add(left, nil, "top"))
		require.NoError(t, h.Add(right, nil, "top"))
		require.NoError(t, h.Add(top, nil))
		stop, _ := runUntil(t, h)
		time.Sleep(time.Minute)
		synctest.Wait()
		require.NoError(t, stop())
		ev := j.list()
		idx := func(e string) int {
			for i, x := range ev {
				if x == e {
					return i
				}
			}
			t.Fatalf("no event %q in %v", e, ev)
			return -1
		}
		assert.Less(t, idx("ready top"), idx("run left"))
		assert.Less(t, idx("ready top"), idx("run right"))
		assert.Less(t, idx("ready left"), idx("run bottom"))
		assert.Less(t, idx("ready right"), idx("run bottom"), "bottom waits for the slower of its two dependencies")
		assert.Less(t, idx("stop bottom"), idx("stop left"))
		assert.Less(t, idx("stop bottom"), idx("stop right"))
		assert.Less(t, idx("stop left"), idx("stop top"))
		assert.Less(t, idx("stop right"), idx("stop top"))
	})
}

func TestReadinessGatesDependents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		dep, user := newFake("dep", j), newFake("user", j)
		dep.readyAfter = 5 * time.Second
		require.NoError(t, h.Add(dep, nil))
		require.NoError(t, h.Add(user, nil, "dep"))
		stop, _ := runUntil(t, h)
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.False(t, user.runCalled.Load(), "not before its dependency is ready")
		assert.Equal(t, harness.WaitingForDependencies, state(h, "user"))
		assert.Equal(t, harness.Starting, state(h, "dep"))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.True(t, user.runCalled.Load())
		require.NoError(t, stop())
	})
}

func state(h *harness.Harness, name string) harness.State {
	for _, c := range h.Status().Components {
		if c.Name == name {
			return c.State
		}
	}
	return -1
}

func TestStartFailureStopsTheRest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b, c := newFake("a", j), newFake("b", j), newFake("c", j)
		b.failAfter, b.failErr, b.neverReady = time.Second, errBoom, true
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		err := h.Run(t.Context())
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "b", ce.Component)
		assert.Equal(t, harness.PhaseStart, ce.Phase, "it failed before it was ready")
		assert.ErrorIs(t, err, errBoom)
		assert.Equal(t, "b failed in phase start: boom", err.Error())
		assert.False(t, c.runCalled.Load(), "c depends on b, which never became ready")
		assert.Equal(t, []string{"run a", "ready a", "run b", "stop a"}, j.list())
		assert.Equal(t, harness.Failed, state(h, "b"))
		assert.Equal(t, harness.Stopped, state(h, "a"))
		assert.Equal(t, harness.Stopped, state(h, "c"))
	})
}

func TestComponentExitingEarlyIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a := newFake("a", j)
		a.failAfter = time.Second // returns nil after a second
		require.NoError(t, h.Add(a, nil))
		err := h.Run(t.Context())
		assert.ErrorIs(t, err, harness.ErrExited)
	})
}

func TestPanicBecomesNamedErrorWithStack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b := newFake("a", j), newFake("b", j)
		b.panicRun = true
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		err := h.Run(t.Context())
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "b", ce.Component)
		var pe *harness.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "fake b panicked", pe.Value)
		assert.Contains(t, string(pe.Stack), "harness_test.(*fake).Run", "the stack of the panicking goroutine")
		assert.Contains(t, j.list(), "stop a", "the rest is stopped")
	})
}

func TestComponentIgnoringCtxOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, stubborn := newFake("a", j), newFake("stubborn", j)
		stubborn.ignoreCtx = make(chan struct{})
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(stubborn, nil, "a"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		start := time.Now()
		err := stop()
		assert.Equal(t, 5*time.Second, time.Since(start), "the harness waited exactly the stop deadline, no more")
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "stubborn", ce.Component)
		assert.Equal(t, harness.PhaseStop, ce.Phase)
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, 5*time.Second, de.Timeout)
		assert.Contains(t, j.list(), "stop a", "the others are still stopped")
		assert.Equal(t, harness.Failed, state(h, "stubborn"))
		close(stubborn.ignoreCtx) // let the abandoned goroutine end before the bubble does
		synctest.Wait()
	})
}

func TestStopperCalledWithDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		s := stopper{newFake("s", j)}
		s.stopDelay = time.Second
		require.NoError(t, h.Add(s, nil))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.NoError(t, stop())
		assert.Equal(t, []string{"run s", "ready s", "Stop s", "stop s"}, j.list())
		s.mu.Lock()
		defer s.mu.Unlock()
		require.False(t, s.stopDeadline.IsZero(), "Stop's context has a deadline")
		assert.Equal(t, 2500*time.Millisecond, s.stopDeadline.Sub(s.stopCalled), "Stop gets half of StopTimeout")
		assert.Equal(t, time.Second, s.runCancelled.Sub(s.stopCalled), "Run's context is cancelled as soon as Stop returned")
	})
}

func TestDependencyNeverReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		slow, user := newFake("slow", j), newFake("user", j)
		slow.neverReady = true
		require.NoError(t, h.Add(slow, nil))
		require.NoError(t, h.Add(user, nil, "slow"))
		start := time.Now()
		err := h.Run(t.Context())
		assert.Equal(t, 10*time.Second, time.Since(start), "ReadyTimeout")
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "slow", ce.Component)
		assert.Equal(t, harness.PhaseStart, ce.Phase)
		assert.EqualError(t, err, "slow failed in phase start: not ready within 10s")
		assert.False(t, user.runCalled.Load())
		assert.Equal(t, []string{"run slow", "stop slow"}, j.list())
	})
}

func TestConflictAtBarrierRunsNothing(t *testing.T) {
	h, target := newHarness(t)
	j := &journal{}
	a, b := newFake("kube-apiserver", j), newFake("kube-scheduler", j)
	require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=true"}))
	require.NoError(t, h.Add(b, []string{"--feature-gates=Foo=false"}, "kube-apiserver"))
	err := h.Run(t.Context())
	var pe *harness.PhaseError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, harness.PhaseBarrier, pe.Phase)
	var conflict *scoping.Conflict
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, []string{"kube-apiserver", "kube-scheduler"}, conflict.Components())
	assert.False(t, a.runCalled.Load(), "no Run is ever called")
	assert.False(t, b.runCalled.Load(), "no Run is ever called")
	assert.Empty(t, j.list())
	assert.False(t, target.Gate.Enabled(Foo), "nothing applied")
	assert.Equal(t, harness.Stopped, state(h, "kube-apiserver"), "never ran")
}

func TestParseFailuresAllReportedAndNothingRuns(t *testing.T) {
	h, _ := newHarness(t)
	j := &journal{}
	a, b, c := newFake("a", j), newFake("b", j), newFake("c", j)
	require.NoError(t, h.Add(a, []string{"--no-such-flag"}))
	require.NoError(t, h.Add(b, []string{"--feature-gates=Nope=true"}))
	require.NoError(t, h.Add(c, nil))
	err := h.Run(t.Context())
	require.Error(t, err)
	var fe *scoping.FlagError
	require.ErrorAs(t, err, &fe)
	assert.Contains(t, err.Error(), "a failed in phase parse: a: unknown flag: --no-such-flag")
	assert.Contains(t, err.Error(), "b failed in phase parse: b: --feature-gates=Nope=true: unrecognized feature gate: Nope")
	assert.False(t, c.runCalled.Load())
	assert.Equal(t, harness.Failed, state(h, "a"))
	assert.Equal(t, harness.Failed, state(h, "b"))
	assert.Equal(t, harness.Stopped, state(h, "c"), "never ran")
}

func TestDependencyErrorsBeforeParse(t *testing.T) {
	parsed := false
	flags := func(*scoping.Scope) error { parsed = true; return nil }
	run := func(ctx context.Context) error { <-ctx.Done(); return nil }
	comp := func(name string) *harness.Func {
		return &harness.Func{ComponentName: name, FlagsFunc: flags, RunFunc: run}
	}
	t.Run("cycle", func(t *testing.T) {
		h, _ := newHarness(t)
		require.NoError(t, h.Add(comp("a"), nil, "c"))
		require.NoError(t, h.Add(comp("b"), nil, "a"))
		require.NoError(t, h.Add(comp("c"), nil, "b"))
		require.NoError(t, h.Add(comp("d"), nil))
		err := h.Run(t.Context())
		var de *harness.DependencyError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, []string{"a", "c", "b", "a"}, de.Cycle)
		assert.EqualError(t, err, "harness phase validate: dependency cycle: a → c → b → a")
	})
	t.Run("unknown", func(t *testing.T) {
		h, _ := newHarness(t)
		require.NoError(t, h.Add(comp("a"), nil, "etcd"))
		err := h.Run(t.Context())
		var de *harness.DependencyError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "etcd", de.Dependency)
		assert.EqualError(t, err, `harness phase validate: a depends on "etcd", which is not a component of this harness`)
	})
	t.Run("duplicate name", func(t *testing.T) {
		h, _ := newHarness(t)
		require.NoError(t, h.Add(comp("a"), nil))
		require.NoError(t, h.Add(comp("a"), nil))
		assert.ErrorContains(t, h.Run(t.Context()), `two components are named "a"`)
	})
	assert.False(t, parsed, "nothing parsed")
}

func TestCancellationDuringEachPhase(t *testing.T) {
	// Cancelled before Run: nothing parses, nothing applies.
	t.Run("before run", func(t *testing.T) {
		h, target := newHarness(t)
		j := &journal{}
		a := newFake("a", j)
		require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=true"}))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.NoError(t, h.Run(ctx))
		assert.False(t, a.runCalled.Load())
		assert.False(t, target.Gate.Enabled(Foo))
	})
	// Cancelled while parsing: the barrier is not applied.
	t.Run("parse", func(t *testing.T) {
		h, target := newHarness(t)
		ctx, cancel := context.WithCancel(t.Context())
		f := &harness.Func{ComponentName: "a", RunFunc: func(context.Context) error { return nil },
			FlagsFunc: func(s *scoping.Scope) error { s.AddFlags(); cancel(); return nil }}
		require.NoError(t, h.Add(f, []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Run(ctx))
		assert.False(t, target.Gate.Enabled(Foo), "barrier not applied after cancel")
		assert.Nil(t, h.Status().Plan)
	})
	// Cancelled at the barrier (after it applied): nothing starts.
	t.Run("barrier", func(t *testing.T) {
		h, target := newHarness(t)
		a := newFake("a", &journal{})
		ctx, cancel := context.WithCancel(t.Context())
		h.AfterBarrier = append(h.AfterBarrier, func(*scoping.Plan) error { cancel(); return nil })
		require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Run(ctx))
		assert.True(t, target.Gate.Enabled(Foo), "the barrier had applied")
		assert.False(t, a.runCalled.Load(), "nothing starts after a cancel at the barrier")
		assert.Equal(t, harness.Stopped, state(h, "a"))
	})
	// Cancelled while a component waits for its dependency: the started one stops.
	t.Run("start", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, _ := newHarness(t)
			j := &journal{}
			a, b := newFake("a", j), newFake("b", j)
			a.readyAfter = 5 * time.Second
			require.NoError(t, h.Add(a, nil))
			require.NoError(t, h.Add(b, nil, "a"))
			ctx, cancel := context.WithCancel(t.Context())
			errc := make(chan error, 1)
			go func() { errc <- h.Run(ctx) }()
			time.Sleep(time.Second)
			cancel()
			require.NoError(t, <-errc)
			assert.Equal(t, []string{"run a", "stop a"}, j.list())
			assert.False(t, b.runCalled.Load())
		})
	})
	// Cancelled while running: the normal stop.
	t.Run("run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, _ := newHarness(t)
			j := &journal{}
			require.NoError(t, h.Add(newFake("a", j), nil))
			stop, _ := runUntil(t, h)
			synctest.Wait()
			assert.Equal(t, harness.PhaseRun, h.Status().Phase)
			require.NoError(t, stop())
			assert.Equal(t, harness.PhaseDone, h.Status().Phase)
		})
	})
}

func TestRunOnceAndAddAfterRun(t *testing.T) {
	h, _ := newHarness(t)
	require.NoError(t, h.Add(newFake("a", &journal{}), nil))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, h.Run(ctx))
	assert.Error(t, h.Run(t.Context()))
	assert.Error(t, h.Add(newFake("b", &journal{}), nil))
}

func TestDisjointGatesAppliedBeforeAnyRun(t *testing.T) {
	h, target := newHarness(t)
	seen := make(chan [3]bool, 1)
	f := func(name, gate string, deps ...string) {
		run := func(ctx context.Context) error {
			if name == "kube-controller-manager" {
				seen <- [3]bool{target.Gate.Enabled(Foo), target.Gate.Enabled(Bar), target.Gate.Enabled(Baz)}
			}
			<-ctx.Done()
			return nil
		}
		c := &harness.Func{ComponentName: name, RunFunc: run, FlagsFunc: func(s *scoping.Scope) error { s.AddFlags(); return nil }}
		require.NoError(t, h.Add(c, []string{"--feature-gates=" + gate + "=true"}, deps...))
	}
	f("kube-apiserver", Foo)
	f("kube-scheduler", Bar, "kube-apiserver")
	f("kube-controller-manager", Baz, "kube-apiserver")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- h.Run(ctx) }()
	assert.Equal(t, [3]bool{true, true, true}, <-seen, "every component's gate is on before any Run")
	cancel()
	require.NoError(t, <-errc)
	plan := h.Status().Plan
	require.NotNil(t, plan)
	assert.Equal(t, map[string]bool{Foo: true, Bar: true, Baz: true}, plan.Overrides)
}

var _ = errors.New

func TestDryRun(t *testing.T) {
	t.Run("plan, nothing applied, nothing run", func(t *testing.T) {
		h, target := newHarness(t)
		a, b := newFake("kube-apiserver", &journal{}), newFake("kube-scheduler", &journal{})
		require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Add(b, []string{"--feature-gates=Bar=true"}, "kube-apiserver"))
		plan, err := h.DryRun(t.Context())
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{Foo: true, Bar: true}, plan.Overrides)
		assert.False(t, target.Gate.Enabled(Foo), "nothing applied")
		assert.False(t, a.runCalled.Load())
		assert.Error(t, h.Run(t.Context()), "a dry-run harness does not run")
	})
	t.Run("conflict", func(t *testing.T) {
		h, _ := newHarness(t)
		require.NoError(t, h.Add(newFake("kube-apiserver", &journal{}), []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Add(newFake("kube-scheduler", &journal{}), []string{"--feature-gates=Foo=false"}))
		_, err := h.DryRun(t.Context())
		var conflict *scoping.Conflict
		require.ErrorAs(t, err, &conflict)
	})
}

// TestFailureWhileStoppingIsInPhaseStop: a component whose Run returns an
// error once the harness is stopping, before its own turn (db, whose
// dependent still stops; a datastore that lost its quorum as the other
// servers left), failed in phase stop; the same failure before the stop
// is in phase run. A caller that asked for the stop tells the two apart
// by it (distro/k3s-like's daemon exits 0 for the first).
func TestFailureWhileStoppingIsInPhaseStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before time.Duration // how long after the start the stop is asked for
		phase  harness.Phase
	}{
		{"after the stop began", 19500 * time.Millisecond, harness.PhaseStop},
		{"before the stop", 25 * time.Second, harness.PhaseRun},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, _ := newHarness(t)
				j := &journal{}
				db, app := newFake("db", j), stopper{newFake("app", j)}
				db.failAfter, db.failErr = 20*time.Second, errors.New("etcdserver: no leader")
				app.stopDelay = 2 * time.Second // db fails while app stops
				require.NoError(t, h.Add(db, nil))
				require.NoError(t, h.Add(app, nil, "db"))
				stop, _ := runUntil(t, h)
				time.Sleep(tc.before)
				err := stop()
				var ce *harness.ComponentError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, "db", ce.Component)
				assert.Equal(t, tc.phase, ce.Phase)
				assert.ErrorContains(t, err, "etcdserver: no leader")
			})
		})
	}
}
