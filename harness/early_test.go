package harness_test

import (
	"context"
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

// awaiting starts early after db and, in Run, waits for its dependencies
// with AwaitDependencies, recording when that returned and with what.
type awaiting struct {
	early
	returned chan error
}

func (a awaiting) Run(ctx context.Context) error {
	a.once.Do(func() { close(a.started) }) // the fake's Ready waits for it
	err := harness.AwaitDependencies(ctx)
	a.returned <- err
	if err != nil {
		return nil // stopped while waiting: a clean stop
	}
	<-ctx.Done()
	return nil
}

// TestAwaitDependencies: an early-started component's Run, waiting with
// AwaitDependencies, returns from it when its dependency is ready, not
// before; asked to stop while it waits, the wait ends with the stop's cause
// and the harness stops cleanly; outside a harness the wait returns at once.
func TestAwaitDependencies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		db := newFake("db", j)
		db.readyAfter = 3 * time.Second
		api := awaiting{early{fake: newFake("api", j), after: []string{"db"}}, make(chan error, 1)}
		require.NoError(t, h.Add(db, nil))
		require.NoError(t, h.Add(api, nil, "db"))
		stop, _ := runUntil(t, h)
		start := time.Now()
		synctest.Wait()
		select {
		case err := <-api.returned:
			t.Fatalf("AwaitDependencies returned %v before db was ready", err)
		default:
		}
		require.NoError(t, <-api.returned)
		assert.Equal(t, 3*time.Second, time.Since(start), "it returns when db is ready")
		require.NoError(t, h.WaitReady(t.Context()))
		require.NoError(t, stop())
	})

	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		db := newFake("db", j)
		db.neverReady = true
		api := awaiting{early{fake: newFake("api", j), after: []string{"db"}}, make(chan error, 1)}
		require.NoError(t, h.Add(db, nil))
		require.NoError(t, h.Add(api, nil, "db"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.NoError(t, stop())
		assert.Error(t, <-api.returned, "asked to stop while waiting: the wait ends with an error")
		assert.Equal(t, harness.Stopped, state(h, "api"))
	})

	assert.NoError(t, harness.AwaitDependencies(t.Context()), "outside a harness: nothing to wait for")
}
