package harness_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopIndependentConcurrently: two components that depend only on a
// third (kube-scheduler and kube-controller-manager on kube-apiserver) stop
// at the same time, each Stop taking 2 s; the third stops only after both.
// The whole stop is one Stop long plus the third's, not the sum.
func TestStopIndependentConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		api := stopper{newFake("api", j)}
		sched, kcm := stopper{newFake("sched", j)}, stopper{newFake("kcm", j)}
		api.stopDelay, sched.stopDelay, kcm.stopDelay = time.Second, 2*time.Second, 2*time.Second
		require.NoError(t, h.Add(api, nil))
		require.NoError(t, h.Add(sched, nil, "api"))
		require.NoError(t, h.Add(kcm, nil, "api"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.True(t, h.Status().Ready())
		start := time.Now()
		require.NoError(t, stop())
		assert.Equal(t, 3*time.Second, time.Since(start), "2 s for sched and kcm together, then 1 s for api")

		list := j.list()
		idx := func(s string) int { return slices.Index(list, s) }
		for _, s := range []string{"Stop sched", "Stop kcm", "stop sched", "stop kcm", "Stop api", "stop api"} {
			require.NotEqual(t, -1, idx(s), "%s in %v", s, list)
		}
		assert.Less(t, idx("Stop kcm"), idx("stop sched"), "kcm's Stop began before sched had stopped: concurrently")
		assert.Less(t, idx("Stop sched"), idx("stop kcm"), "sched's Stop began before kcm had stopped: concurrently")
		assert.Less(t, idx("stop sched"), idx("Stop api"), "api stops after its dependents")
		assert.Less(t, idx("stop kcm"), idx("Stop api"), "api stops after its dependents")
	})
}
