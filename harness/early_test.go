package harness_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// early is a fake that starts early after the dependencies it names.
type early struct {
	*fake
	after []string
}

func (e early) StartsEarly(dep string) bool { return slices.Contains(e.after, dep) }

// TestEarlyStart: an EarlyStarter's Run is called as soon as the
// dependency it starts early after was started, not when it is ready; its
// Ready only once that dependency is ready. A dependency it does not name,
// and a component that is no EarlyStarter, wait for readiness as before.
func TestEarlyStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		db := newFake("db", j)
		db.readyAfter = 3 * time.Second
		api := early{fake: newFake("api", j), after: []string{"db"}}
		api.readyAfter = time.Second
		sched := newFake("sched", j)
		require.NoError(t, h.Add(db, nil))
		require.NoError(t, h.Add(api, nil, "db"))
		require.NoError(t, h.Add(sched, nil, "api"))
		stop, _ := runUntil(t, h)
		start := time.Now()
		synctest.Wait()
		assert.ElementsMatch(t, []string{"run db", "run api"}, j.list(), "api runs while db is not ready yet")
		require.NoError(t, h.WaitReady(t.Context()))
		// db ready at 3 s; api's Ready is called then and takes 1 s.
		assert.Equal(t, 4*time.Second, time.Since(start))
		list := j.list()
		idx := func(s string) int { return slices.Index(list, s) }
		assert.Less(t, idx("ready db"), idx("ready api"), "api's Ready only after db is ready")
		assert.Less(t, idx("ready api"), idx("run sched"), "sched (no EarlyStarter) waits for api's readiness")
		require.NoError(t, stop())
		assert.Equal(t, []string{"stop sched", "stop api", "stop db"}, filter(j.list(), "stop"))
	})
}

// TestEarlyStartDependencyFails: the dependency fails before it is ready;
// the early-started component was launched, so it is stopped, and the error
// names the dependency.
func TestEarlyStartDependencyFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		db := newFake("db", j)
		db.failAfter, db.failErr, db.neverReady = time.Second, errors.New("disk full"), true
		api := early{fake: newFake("api", j), after: []string{"db"}}
		require.NoError(t, h.Add(db, nil))
		require.NoError(t, h.Add(api, nil, "db"))
		err := h.Run(t.Context())
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "db", ce.Component)
		assert.ErrorContains(t, err, "disk full")
		assert.Contains(t, j.list(), "run api")
		assert.Contains(t, j.list(), "stop api", "the early-started component is stopped")
		assert.Equal(t, harness.Stopped, state(h, "api"))
	})
}
