package harness_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/harness"
)

// TestRecoveringIsAliveNotReady: a ← b; b fails with an error Recover
// keeps, and its new instance takes 10 s to be ready. Meanwhile b is
// Recovering: /livez answers 200 (a liveness probe must not kill the
// process Recover keeps alive), /readyz 503 naming b, the state metric
// says recovering (and failed 0), the status carries the kept failure;
// then b is ready again and everything is.
func TestRecoveringIsAliveNotReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.failAfter, b.failErr = 5*time.Second, errLost
		b.renewed = func(n *renewable) { n.readyAfter = 10 * time.Second }
		h.ReadyTimeout = time.Minute // not newHarness's 10 s: a tie with the new b's Ready, either may win
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		handler := h.Handler()
		began := time.Now()
		stop, done := runUntil(t, h)
		synctest.Wait()
		require.True(t, h.Status().Ready())

		time.Sleep(6 * time.Second) // b failed at 5 s; its new instance is ready at 15 s
		synctest.Wait()
		assert.Equal(t, []string{"b: lost the leader-election lease"}, rec.list())
		assert.Equal(t, harness.Recovering, state(h, "b"))
		for _, c := range h.Status().Components {
			if c.Name == "b" {
				assert.Equal(t, "b failed in phase run: lost the leader-election lease", c.Error, "the failure being recovered")
			}
		}
		code, body := get(t, handler, "/livez", "")
		assert.Equal(t, http.StatusOK, code, "alive while recovering: %s", body)
		code, body = get(t, handler, "/readyz?verbose", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "[-]b failed: reason withheld\n")
		code, body = get(t, handler, "/readyz/b", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "internal server error: b is recovering\n", body)
		_, metricsText := get(t, handler, "/metrics", "")
		assert.Contains(t, metricsText, `kubeharness_component_state{component="b",state="recovering"} 1`)
		assert.Contains(t, metricsText, `kubeharness_component_state{component="b",state="failed"} 0`)
		assert.Contains(t, metricsText, `kubeharness_component_state{component="a",state="ready"} 1`)
		_, table := get(t, handler, "/components?format=text", "")
		assert.Regexp(t, `(?m)^b\s+recovering\s+`, table)

		require.NoError(t, h.WaitReady(t.Context()))
		assert.Equal(t, 15*time.Second, time.Since(began), "ready again when the new instance is")
		assert.Equal(t, harness.Ready, state(h, "b"))
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		code, _ = get(t, handler, "/readyz", "")
		assert.Equal(t, http.StatusOK, code)
		require.NoError(t, stop())
	})
}

// earlyRenewable is a renewable that starts early after the dependencies
// it names.
type earlyRenewable struct {
	*renewable
	after []string
}

func (e earlyRenewable) StartsEarly(dep string) bool { return slices.Contains(e.after, dep) }

func (e earlyRenewable) Renew() harness.Component {
	return earlyRenewable{renewable: e.renewable.Renew().(*renewable), after: e.after}
}

// TestRecoverBeforeReadyWithEarlyDependent: a ← b, b an EarlyStarter after
// a (launched as soon as a was) and a Renewer; a fails before it was ready
// with an error Recover keeps. As in OTP's rest_for_one, b, launched
// against that instance of a, retires first, and starts again once a's
// new instance is up; nothing stops the harness.
func TestRecoverBeforeReadyWithEarlyDependent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a := newRenewable("a", j)
		a.failAfter, a.failErr, a.neverReady = time.Second, errLost, true
		a.renewed = func(n *renewable) { n.failAfter, n.failErr, n.neverReady = 0, nil, false }
		b := earlyRenewable{renewable: newRenewable("b", j), after: []string{"a"}}
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		stop, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		assert.Equal(t, []string{"a: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 1, "b": 1}, restarts(h))
		// a and b start at once (b early), so their runs interleave; b's
		// stop is what orders them.
		events := withPrefix(j.list(), "run a profile", "run b profile", "stop")
		assert.Equal(t, 2, len(withPrefix(events, "run a")), events)
		assert.Equal(t, 2, len(withPrefix(events, "run b")), events)
		stopB := slices.Index(events, "stop b")
		require.GreaterOrEqual(t, stopB, 2, "b was stopped after both first runs: %v", events)
		assert.ElementsMatch(t, []string{"run a profile=default", "run b profile=default"}, events[stopB+1:], "a and b started again after b retired")
		require.NoError(t, stop())
	})
}

// TestRestartWhileADependencyRecovers: a ← b; Restart(b) is under way (its
// new instance takes 3 s to be ready) when a fails with an error Recover
// keeps: a's recovery replaces b's new instance by a newer one. Restart
// still returns nil once b is ready, not at the stop.
func TestRestartWhileADependencyRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		a.failAfter, a.failErr = 10*time.Second, errLost
		b.renewed = func(n *renewable) { n.readyAfter = 3 * time.Second }
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		stop, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		time.Sleep(9 * time.Second)
		restarted := make(chan error, 1)
		go func() { restarted <- h.Restart(t.Context(), "b", []string{"--profile=two"}) }()
		time.Sleep(5 * time.Second) // a failed at 10 s, while b's new instance started
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		case err := <-restarted:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("Restart did not return")
		}
		require.NoError(t, h.WaitReady(t.Context()))
		assert.Equal(t, []string{"a: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 1, "b": 2}, restarts(h))
		assert.Equal(t, "run b profile=two", withPrefix(j.list(), "run b profile")[2], "a's recovery kept b's new arguments")
		require.NoError(t, stop())
	})
}

// onceComp is a component that starts once per process: its Run leaves a
// goroutine behind (as an informer on wait.NeverStop) and ignores its
// context, as the kubelet's servers do, until release is closed.
type onceComp struct {
	*renewable // a Renewer too: Once still wins
	release    chan struct{}
}

func (o onceComp) StartsOnce() string { return "its informers run on wait.NeverStop" }

func (o onceComp) Run(ctx context.Context) error {
	o.j.add("run %s", o.name)
	go neverStops(o.release)
	if o.failAfter > 0 {
		time.Sleep(o.failAfter)
		return o.failErr
	}
	<-o.release
	return nil
}

func (o onceComp) Ready(context.Context) error { return nil }

// neverStops is the goroutine a onceComp leaves behind.
func neverStops(release <-chan struct{}) { <-release }

// onceLeftovers are the goroutines a stopped onceComp leaves running: the
// explicit goleak options its users' tests take, as a package providing a
// real Once (the kubelet) would export them.
var onceLeftovers = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/kubeharness/kubeharness/harness_test.neverStops"),
	goleak.IgnoreTopFunction("github.com/kubeharness/kubeharness/harness_test.onceComp.Run"),
}

// TestOnceRefusesRestartAndRecover: a ← k ← c, k a Once. Restart of k,
// and of a (k depends on it), is refused with a *RestartError naming k and
// its reason, before anything stops. k failing with an error Recover would
// keep is not recovered: Recover is not asked, the harness stops, and Run's
// error carries the refusal.
func TestOnceRefusesRestartAndRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		release := make(chan struct{})
		defer close(release)
		a, c := newRenewable("a", j), newRenewable("c", j)
		k := onceComp{renewable: newRenewable("k", j), release: release}
		k.failAfter, k.failErr = 10*time.Second, errLost
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(k, nil, "a"))
		require.NoError(t, h.Add(c, nil, "k"))
		_, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		before := j.list()

		var re *harness.RestartError
		err := h.Restart(t.Context(), "k", nil)
		require.ErrorAs(t, err, &re)
		assert.Equal(t, harness.RestartError{Component: "k", Blocker: "k", Err: harness.ErrStartsOnce, Reason: "its informers run on wait.NeverStop"}, *re)
		assert.EqualError(t, err, "harness: cannot restart k: it starts once per process: its informers run on wait.NeverStop")
		err = h.Restart(t.Context(), "a", nil)
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "k", re.Blocker)
		assert.ErrorIs(t, err, harness.ErrStartsOnce)
		assert.EqualError(t, err, "harness: cannot restart a: its dependent k starts once per process: its informers run on wait.NeverStop")
		assert.Equal(t, before, j.list(), "nothing stopped or started")
		assert.True(t, h.Status().Ready())

		err = <-done // k fails at 10 s
		assert.ErrorIs(t, err, errLost)
		require.ErrorAs(t, err, &re, "Run's error says why k was not recovered")
		assert.Equal(t, "k", re.Blocker)
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "k", ce.Component)
		assert.Empty(t, rec.list(), "Recover is not asked about what cannot be restarted")
		assert.Equal(t, []string{"stop c", "stop a"}, filter(j.list(), "stop"))
		assert.Equal(t, harness.Failed, state(h, "k"))
		assert.Equal(t, harness.Stopped, state(h, "a"))
	})
}

// TestOnceStopIsBounded: a ← k, k a Once whose Run ignores its context.
// The stop takes StopTimeout, k's Run is left running and named in its
// status, not in Run's error, and everything else the harness started is
// joined: goleak finds nothing but the goroutines k is known to leave.
func TestOnceStopIsBounded(t *testing.T) {
	h, _ := newHarness(t)
	h.StopTimeout = 300 * time.Millisecond
	j := &journal{}
	release := make(chan struct{})
	defer close(release)
	a := newRenewable("a", j)
	k := onceComp{renewable: newRenewable("k", j), release: release}
	require.NoError(t, h.Add(a, nil))
	require.NoError(t, h.Add(k, nil, "a"))
	stop, _ := runUntil(t, h)
	require.NoError(t, h.WaitReady(t.Context()))
	began := time.Now()
	require.NoError(t, stop(), "a Once left running is no failure of Run")
	took := time.Since(began)
	assert.GreaterOrEqual(t, took, h.StopTimeout)
	assert.Less(t, took, h.StopTimeout+time.Second)
	for _, c := range h.Status().Components {
		switch c.Name {
		case "k":
			assert.Equal(t, harness.Stopped, c.State)
			assert.Equal(t, "Run did not return within 300ms of the stop; its goroutines were abandoned (it starts once per process: its informers run on wait.NeverStop)", c.Abandoned)
		default:
			assert.Equal(t, harness.Stopped, c.State, c.Name)
			assert.Empty(t, c.Abandoned, c.Name)
		}
	}
	assert.Contains(t, j.list(), "stop a", "a stopped after k")
	goleak.VerifyNone(t, append(onceLeftovers, goleak.IgnoreCurrent())...)
}

// withPrefix keeps the events that start with one of prefixes.
func withPrefix(events []string, prefixes ...string) []string {
	return slices.DeleteFunc(slices.Clone(events), func(e string) bool {
		return !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(e, p) })
	})
}

// TestRecoveredInstanceFailsOtherwise: a ← b; b fails with an error
// Recover keeps; its new instance's Run fails before it was ready with one
// Recover does not keep. The harness stops with a *RecoveryError carrying
// both failures.
func TestRecoveredInstanceFailsOtherwise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.failAfter, b.failErr = 5*time.Second, errLost
		b.renewed = func(n *renewable) { n.failAfter, n.failErr, n.neverReady = time.Second, errBoom, true }
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		err := h.Run(t.Context())
		var re *harness.RecoveryError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "b", re.Cause.Component)
		assert.ErrorIs(t, re.Cause, errLost)
		assert.ErrorIs(t, re.Err, errBoom)
		assert.EqualError(t, re, "b failed in phase run: lost the leader-election lease; restarting it failed: b failed in phase start: boom")
		assert.Equal(t, []string{"b: lost the leader-election lease", "b: boom"}, rec.list())
		assert.Equal(t, harness.Failed, state(h, "b"))
		assert.Contains(t, j.list(), "stop a")
	})
}

// TestRecoverDuringTheStop: a ← b; the harness is stopping (b's Stop takes
// 2 s) when a's Run returns with an error Recover keeps, before a was
// asked to stop. No restart starts, and the kept failure is no error of
// Run: a is stopped.
func TestRecoverDuringTheStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		a := newRenewable("a", j)
		a.failAfter, a.failErr = 6*time.Second, errLost
		b := stopper{newFake("b", j)}
		b.stopDelay = 2 * time.Second
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		stop, _ := runUntil(t, h)
		time.Sleep(5 * time.Second)
		require.NoError(t, stop())
		assert.Equal(t, []string{"a: lost the leader-election lease"}, rec.list())
		assert.Equal(t, map[string]int{"a": 0, "b": 0}, restarts(h))
		assert.Equal(t, harness.Stopped, state(h, "a"))
		assert.Equal(t, harness.Stopped, state(h, "b"))
	})
}

// TestRestartWithHungStop: a ← b; b's Stop ignores its context when
// Restart retires it. Restart returns the *DeadlineError naming b's Stop,
// and the harness stops with it: a hung stop is not waited for.
func TestRestartWithHungStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a := newRenewable("a", j)
		b := renewableStopper{newRenewable("b", j)}
		b.hangStop = make(chan struct{})
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		_, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		began := time.Now()
		err := h.Restart(t.Context(), "b", nil)
		assert.Equal(t, 2500*time.Millisecond+harness.AbandonGrace, time.Since(began), "Stop's share, then the grace")
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, harness.DeadlineError{Component: "b", What: "Stop", Timeout: 2500 * time.Millisecond, Abandoned: true}, *de)
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, harness.PhaseStop, ce.Phase)
		assert.ErrorIs(t, <-done, err)
		assert.Contains(t, j.list(), "stop a")
		close(b.hangStop)
		synctest.Wait()
	})
}

// renewableStopper is a renewable that is a Stopper too.
type renewableStopper struct{ *renewable }

func (s renewableStopper) Stop(ctx context.Context) error { return stopper{s.fake}.Stop(ctx) }

func (s renewableStopper) Renew() harness.Component {
	return renewableStopper{s.renewable.Renew().(*renewable)}
}

// TestExitedRunContextEnds: a Run that returns on its own may leave work
// on its context (upstream's servers close their listeners when it ends):
// the harness cancels that context once the instance retires — after a
// failure that stops the harness, and after one Recover keeps.
func TestExitedRunContextEnds(t *testing.T) {
	for _, kept := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			h, _ := newHarness(t)
			if kept {
				h.Recover = func(string, error) bool { return true }
			}
			ended := make(chan struct{})
			runs := 0
			var c *harness.Func
			c = &harness.Func{ComponentName: "c", RunFunc: func(ctx context.Context) error {
				runs++
				if runs > 1 {
					<-ctx.Done()
					return nil
				}
				go func() { <-ctx.Done(); close(ended) }() // left on the context
				return errBoom
			}}
			require.NoError(t, h.Add(renewableFunc{c}, nil))
			stop, done := runUntil(t, h)
			synctest.Wait()
			select {
			case <-ended:
			default:
				t.Fatalf("kept=%v: the context of the Run that returned was not cancelled", kept)
			}
			if !kept {
				assert.ErrorIs(t, <-done, errBoom)
				return
			}
			assert.Equal(t, 2, runs)
			require.NoError(t, stop())
		})
	}
}

// renewableFunc is a harness.Func that Restart and Recover can start again
// (the same value: its functions keep no state of a run).
type renewableFunc struct{ *harness.Func }

func (f renewableFunc) Renew() harness.Component { return f }
