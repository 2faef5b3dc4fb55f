package harness_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// renewable is a fake that Restart can start again; it has a
// component-local flag, --profile, recorded in the journal when it runs.
type renewable struct {
	*fake
	profile *string
	renewed func(*renewable) // called on every new instance
}

func newRenewable(name string, j *journal) *renewable {
	return &renewable{fake: newFake(name, j)}
}

func (r *renewable) AddFlags(s *scoping.Scope) error {
	r.profile = s.FlagSet().String("profile", "default", "a component-local setting")
	return r.fake.AddFlags(s)
}

func (r *renewable) Run(ctx context.Context) error {
	r.j.add("run %s profile=%s", r.name, *r.profile)
	return r.fake.Run(ctx)
}

func (r *renewable) Renew() harness.Component {
	n := newRenewable(r.name, r.j)
	n.readyAfter, n.renewed = r.readyAfter, r.renewed
	if r.renewed != nil {
		r.renewed(n)
	}
	return n
}

// a ← b ← c: restarting b stops c then b, starts b (new args) then c, and
// a runs on, untouched.
func TestRestartWithDependents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, []string{"--profile=one"}, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.True(t, h.Status().Ready())
		before := len(j.list())

		require.NoError(t, h.Restart(t.Context(), "b", []string{"--profile=two"}))
		assert.Equal(t, []string{"stop c", "stop b", "run b profile=two", "run b", "run c profile=default", "run c"}, filter(j.list()[before:], "run", "stop"))
		assert.True(t, h.Status().Ready())
		for _, cs := range h.Status().Components {
			if cs.Name == "b" {
				assert.Equal(t, []string{"--profile=two"}, cs.Args)
			}
		}
		assert.NotContains(t, j.list(), "stop a", "a keeps running")

		require.NoError(t, stop())
		assert.Equal(t, []string{"stop c", "stop b", "stop a"}, filter(j.list(), "stop")[2:], "the new instances are stopped, in reverse order")
	})
}

func filter(events []string, prefixes ...string) []string {
	var out []string
	for _, e := range events {
		for _, p := range prefixes {
			if len(e) > len(p) && e[:len(p)+1] == p+" " {
				out = append(out, e)
			}
		}
	}
	return out
}

// A restart that would change a process-wide setting is a conflict, and the
// running instance is left untouched; the same value as in force is fine.
func TestRestartConflictLeavesTheRunningComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, target := newHarness(t)
		j := &journal{}
		a, b := newRenewable("a", j), newRenewable("b", j)
		require.NoError(t, h.Add(a, []string{"--feature-gates=Bar=true"}))
		require.NoError(t, h.Add(b, nil, "a"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		before := j.list()

		err := h.Restart(t.Context(), "b", []string{"--feature-gates=Foo=true", "--emulated-version=1.36"})
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		require.Len(t, ce.Conflicts, 2, err.Error())
		assert.Equal(t, "--emulated-version: b sets 1.36 (--emulated-version=1.36): --emulated-version is 1.37 in the running control plane; a restarted component cannot change a process-wide setting while the others run", ce.Conflicts[0].Error())
		assert.Equal(t, `feature gate "Foo": b sets true (--feature-gates=Foo=true): feature gate "Foo" is false in the running control plane; a restarted component cannot change a process-wide setting while the others run`, ce.Conflicts[1].Error())
		assert.Equal(t, before, j.list(), "nothing stopped or started")
		assert.True(t, h.Status().Ready())
		assert.False(t, target.Gate.Enabled(Foo))

		err = h.Restart(t.Context(), "a", []string{"--feature-gates=Bar=false"})
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{"a"}, ce.Conflicts[0].Components())

		require.NoError(t, h.Restart(t.Context(), "b", []string{"--feature-gates=Bar=true"}), "the value in force")
		assert.True(t, target.Gate.Enabled(Bar))
		require.NoError(t, stop())
	})
}

func TestRestartRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		assert.ErrorContains(t, h.Restart(t.Context(), "a", nil), "the harness is not running")
		a, plain := newRenewable("a", j), newFake("plain", j)
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(plain, nil, "a"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		before := j.list()
		assert.EqualError(t, h.Restart(t.Context(), "plain", nil), "harness: cannot restart plain: it does not implement harness.Renewer")
		assert.EqualError(t, h.Restart(t.Context(), "a", nil), "harness: cannot restart a: its dependent plain does not implement harness.Renewer")
		assert.EqualError(t, h.Restart(t.Context(), "nosuch", nil), "harness: cannot restart nosuch: no such component")
		assert.Equal(t, before, j.list())
		require.NoError(t, stop())
		assert.ErrorContains(t, h.Restart(t.Context(), "a", nil), "not running")
	})
}

// A bad argument fails the restart in phase parse; the old instance runs on.
func TestRestartBadArgument(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		require.NoError(t, h.Add(newRenewable("a", j), nil))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		err := h.Restart(t.Context(), "a", []string{"--no-such-flag"})
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, harness.PhaseParse, ce.Phase)
		assert.ErrorContains(t, err, "unknown flag: --no-such-flag")
		assert.True(t, h.Status().Ready())
		require.NoError(t, stop())
	})
}

// A new instance that never becomes ready fails the harness, as at the
// first start: Restart and Run both return the error, everything stops.
func TestRestartedInstanceNeverReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b := newRenewable("a", j), newRenewable("b", j)
		b.renewed = func(n *renewable) { n.neverReady = true }
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		_, done := runUntil(t, h)
		synctest.Wait()
		start := time.Now()
		err := h.Restart(t.Context(), "b", nil)
		assert.Equal(t, 10*time.Second, time.Since(start))
		assert.EqualError(t, err, "b failed in phase start: not ready within 10s")
		runErr := <-done
		assert.ErrorIs(t, runErr, err)
		assert.Contains(t, j.list(), "stop a")
	})
}

// TestRestartRightAfterReady: every component may be ready a moment before
// Run enters PhaseRun; Status.Ready and WaitReady wait for PhaseRun, so a
// Restart right after them is never refused as "not running" (it was, about
// once in twenty runs, before they did).
func TestRestartRightAfterReady(t *testing.T) {
	for i := range 200 {
		h, _ := newHarness(t)
		j := &journal{}
		require.NoError(t, h.Add(newRenewable("a", j), nil))
		require.NoError(t, h.Add(newRenewable("b", j), nil, "a"))
		stop, _ := runUntil(t, h)
		if i%2 == 0 {
			require.NoError(t, h.WaitReady(t.Context()))
		} else {
			require.Eventually(t, func() bool { return h.Status().Ready() }, 10*time.Second, 10*time.Microsecond)
		}
		assert.Equal(t, harness.PhaseRun, h.Status().Phase, "run %d", i)
		require.NoError(t, h.Restart(t.Context(), "b", []string{"--profile=two"}), "run %d", i)
		require.NoError(t, stop())
	}
}
