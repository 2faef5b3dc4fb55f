package harness_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// flaky is a component each instance of which fails with errLost failAfter
// after its Run was called (ready at once), unless its context ends first;
// it records when each Run was called, since the test began.
type flaky struct {
	*harness.Func
	mu     sync.Mutex
	began  time.Time
	starts []time.Duration
}

func newFlaky(name string, failAfter time.Duration) *flaky {
	f := &flaky{began: time.Now()}
	f.Func = &harness.Func{ComponentName: name, RunFunc: func(ctx context.Context) error {
		f.mu.Lock()
		f.starts = append(f.starts, time.Since(f.began))
		f.mu.Unlock()
		select {
		case <-time.After(failAfter):
			return errLost
		case <-ctx.Done():
			return nil
		}
	}}
	return f
}

// Renew returns the same value: its function keeps no state of one run.
func (f *flaky) Renew() harness.Component { return f }

func (f *flaky) runs() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.starts...)
}

func seconds(s ...int) []time.Duration {
	var d []time.Duration
	for _, n := range s {
		d = append(d, time.Duration(n)*time.Second)
	}
	return d
}

// returned is Run's error; a Run that has not returned within an hour of
// the bubble's time — a limit not reached — fails the test.
func returned(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Hour):
		t.Fatal("Run did not return within an hour")
		return nil
	}
}

func statusOf(h *harness.Harness, name string) harness.ComponentStatus {
	for _, c := range h.Status().Components {
		if c.Name == name {
			return c
		}
	}
	return harness.ComponentStatus{}
}

// TestRecoverIntensityExceeded: a ← b ← c; b fails 5 s after every start,
// Intensity 2 within a minute. Its first two failures are recovered (b and
// c restarted; the second after the 1 s backoff); the third is not: Run
// fails at once with an *IntensityError naming b, 3 failures and the
// minute, wrapping the last failure; nothing more starts, a and c stop.
func TestRecoverIntensityExceeded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, j := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Intensity: 2, Period: time.Minute, Backoff: time.Second}
		b := newFlaky("b", 5*time.Second)
		a, c := newRenewable("a", j), newRenewable("c", j)
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		_, done := runUntil(t, h)
		err := returned(t, done)

		assert.Equal(t, seconds(0, 5, 11), b.runs(), "at once after the first failure, 1 s after the second")
		assert.Equal(t, 16*time.Second, time.Since(b.began), "Run returned at the third failure")
		var ie *harness.IntensityError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, "b", ie.Component)
		assert.Equal(t, 3, ie.Failures)
		assert.Equal(t, time.Minute, ie.Period)
		assert.ErrorIs(t, err, errLost)
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, harness.ComponentError{Component: "b", Phase: harness.PhaseRun, Err: errLost}, *ce)
		assert.EqualError(t, err, "b failed 3 times within 1m0s; not restarted again (Harness.RecoverPolicy): b failed in phase run: lost the leader-election lease")
		assert.Len(t, rec.list(), 3, "Recover was asked each time")
		assert.Equal(t, map[string]int{"a": 0, "b": 2, "c": 2}, restarts(h))
		st := statusOf(h, "b")
		assert.Equal(t, harness.Failed, st.State)
		assert.Equal(t, 2, st.Recoveries)
		assert.Equal(t, err.Error(), st.Error)
		assert.Equal(t, harness.Stopped, state(h, "a"))
		assert.Equal(t, harness.Stopped, state(h, "c"))
		assert.Equal(t, []string{"stop c", "stop c", "stop c", "stop a"}, filter(j.list(), "stop"), "c retired with each failure of b, a last")
	})
}

// TestRecoverFailuresSpreadWiderThanPeriod: failures a whole Period or more
// apart never add up: b fails 10 s after every start, Intensity 1 within
// 10 s, and is restarted ten times, at once each time; Run goes on.
func TestRecoverFailuresSpreadWiderThanPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, _ := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Intensity: 1, Period: 10 * time.Second, Backoff: time.Hour}
		b := newFlaky("b", 10*time.Second)
		require.NoError(t, h.Add(b, nil))
		stop, done := runUntil(t, h)
		time.Sleep(105 * time.Second)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		default:
		}
		assert.Equal(t, seconds(0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100), b.runs(), "no backoff: each failure was the first within Period")
		assert.Len(t, rec.list(), 10)
		assert.Equal(t, 10, statusOf(h, "b").Recoveries)
		require.NoError(t, h.WaitReady(t.Context()))
		require.NoError(t, stop())
	})
}

// TestRecoverBackoff: b fails 1 s after every start. Each restart after a
// failure within Period waits Backoff, doubled for each earlier one (2, 4,
// 8, 16 s), Recovering meanwhile, and the sixth failure within the minute
// is beyond Intensity 5.
func TestRecoverBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, _ := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Intensity: 5, Period: time.Minute, Backoff: 2 * time.Second}
		b := newFlaky("b", time.Second)
		require.NoError(t, h.Add(b, nil))
		_, done := runUntil(t, h)
		time.Sleep(3 * time.Second) // failed at 1 and 2 s; restarts at 4 s
		synctest.Wait()
		st := statusOf(h, "b")
		assert.Equal(t, harness.Recovering, st.State, "waiting out the backoff")
		assert.Equal(t, "b failed in phase run: lost the leader-election lease", st.Error)
		err := returned(t, done)
		assert.Equal(t, seconds(0, 1, 4, 9, 18, 35), b.runs())
		assert.Equal(t, 36*time.Second, time.Since(b.began))
		var ie *harness.IntensityError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, 6, ie.Failures)
	})
}

// TestRecoverBackoffStop: a stop while a restart waits out its backoff
// does not wait for it: Run returns at once, nil, b Stopped, and b's
// dependent, waiting for it, too.
func TestRecoverBackoffStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, j := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Backoff: 30 * time.Second}
		b := newFlaky("b", time.Second)
		c := newRenewable("c", j)
		require.NoError(t, h.Add(b, nil))
		require.NoError(t, h.Add(c, nil, "b"))
		stop, _ := runUntil(t, h)
		time.Sleep(5 * time.Second) // failed at 1 and 2 s; restarts at 32 s
		synctest.Wait()
		require.Equal(t, harness.Recovering, state(h, "b"))
		stopped := time.Now()
		require.NoError(t, stop())
		assert.Zero(t, time.Since(stopped), "the stop did not wait for the backoff")
		assert.Equal(t, seconds(0, 1), b.runs())
		assert.Equal(t, harness.Stopped, state(h, "b"))
		assert.Equal(t, harness.Stopped, state(h, "c"))
	})
}

// TestRecoverPolicyDefaults: the zero RecoverPolicy. A component that
// fails at once on every start, never ready, is restarted five times, the
// backoff doubling from a second, and the sixth failure — 15 s in, within
// DefaultRecoverPeriod — stops the harness: the *IntensityError says so,
// not a *RecoveryError (none of the restarts was ready).
func TestRecoverPolicyDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, _ := recoveringHarness(t)
		b := newFlaky("b", 0)
		b.ReadyFunc = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
		require.NoError(t, h.Add(b, nil))
		_, done := runUntil(t, h)
		err := returned(t, done)
		assert.Equal(t, seconds(0, 0, 1, 3, 7, 15), b.runs())
		var ie *harness.IntensityError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, harness.IntensityError{Component: "b", Failures: harness.DefaultRecoverIntensity + 1, Period: harness.DefaultRecoverPeriod, Err: ie.Err}, *ie)
		assert.EqualError(t, err, "b failed 6 times within 1m0s; not restarted again (Harness.RecoverPolicy): b failed in phase start: lost the leader-election lease")
		var re *harness.RecoveryError
		assert.False(t, errors.As(err, &re), "no *RecoveryError: %v", err)
		assert.Equal(t, harness.Failed, state(h, "b"))
	})
}

// TestRecoverUnlimited: a negative Intensity sets no limit, a negative
// Backoff no wait: a component failing every second is restarted at once,
// every time, for as long as the run lasts.
func TestRecoverUnlimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, rec, _ := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Intensity: -1, Backoff: -1}
		b := newFlaky("b", time.Second)
		require.NoError(t, h.Add(b, nil))
		stop, _ := runUntil(t, h)
		time.Sleep(100*time.Second + time.Second/2)
		synctest.Wait()
		assert.Len(t, rec.list(), 100)
		assert.Len(t, b.runs(), 101)
		assert.Equal(t, 100*time.Second, b.runs()[100], "no backoff")
		require.NoError(t, stop())
	})
}

// TestRestartsDoNotCount: Restart's restarts are no failures. With
// Intensity 1, b is restarted on request five times, then fails: that
// failure is recovered; the next within Period is not.
func TestRestartsDoNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _, _ := recoveringHarness(t)
		h.RecoverPolicy = harness.RecoverPolicy{Intensity: 1, Period: time.Hour}
		b := newFlaky("b", time.Minute)
		require.NoError(t, h.Add(b, nil))
		_, done := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context()))
		for range 5 {
			require.NoError(t, h.Restart(t.Context(), "b", nil))
		}
		err := returned(t, done)
		assert.Equal(t, seconds(0, 0, 0, 0, 0, 0, 60), b.runs(), "five restarts, then one recovery")
		var ie *harness.IntensityError
		require.ErrorAs(t, err, &ie)
		assert.Equal(t, 2, ie.Failures)
		assert.Equal(t, 120*time.Second, time.Since(b.began))
		st := statusOf(h, "b")
		assert.Equal(t, 6, st.Restarts)
		assert.Equal(t, 1, st.Recoveries)
	})
}
