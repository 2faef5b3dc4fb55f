package election

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memStore is a lease in memory with optimistic concurrency, like a Lease
// object's resourceVersion.
type memStore struct {
	mu      sync.Mutex
	rec     *rl.LeaderElectionRecord
	version int
	// hung: every Get and Update blocks until its context ends, as with a
	// datastore that does not answer.
	hung atomic.Bool
}

// wait blocks while the store is hung, until ctx ends (then its error).
func (s *memStore) wait(ctx context.Context) error {
	if !s.hung.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *memStore) holder() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil {
		return ""
	}
	return s.rec.HolderIdentity
}

// steal makes another holder take the lease for an hour.
func (s *memStore) steal(by string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := metav1.NewTime(time.Now())
	s.rec = &rl.LeaderElectionRecord{HolderIdentity: by, LeaseDurationSeconds: 3600, AcquireTime: now, RenewTime: now}
	s.version++
}

// memLock is one candidate's view of a memStore.
type memLock struct {
	store *memStore
	id    string
	seen  int // the version this lock last read or wrote
}

func (l *memLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	if err := l.store.wait(ctx); err != nil {
		return nil, nil, err
	}
	l.store.mu.Lock()
	defer l.store.mu.Unlock()
	if l.store.rec == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "leases"}, "test")
	}
	l.seen = l.store.version
	rec := *l.store.rec
	raw, _ := json.Marshal(rec)
	return &rec, raw, nil
}

func (l *memLock) Create(_ context.Context, r rl.LeaderElectionRecord) error {
	l.store.mu.Lock()
	defer l.store.mu.Unlock()
	if l.store.rec != nil {
		return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "leases"}, "test")
	}
	l.store.rec = &r
	l.store.version++
	l.seen = l.store.version
	return nil
}

func (l *memLock) Update(ctx context.Context, r rl.LeaderElectionRecord) error {
	if err := l.store.wait(ctx); err != nil {
		return err
	}
	l.store.mu.Lock()
	defer l.store.mu.Unlock()
	if l.store.rec == nil || l.seen != l.store.version {
		return apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "test", errors.New("stale"))
	}
	l.store.rec = &r
	l.store.version++
	l.seen = l.store.version
	return nil
}

func (l *memLock) RecordEvent(string) {}
func (l *memLock) Identity() string   { return l.id }
func (l *memLock) Describe() string   { return "test/lease" }

func testElection(store *memStore, id string) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock:          &memLock{store: store, id: id},
		LeaseDuration: time.Second,
		RenewDeadline: 800 * time.Millisecond,
		RetryPeriod:   100 * time.Millisecond,
		Name:          "test",
	}
}

func TestElectorReleasesAfterWorkReturned(t *testing.T) {
	store := &memStore{}
	e := New("test")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var heldWhileStopping atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, testElection(store, "me"), func(wctx context.Context) error {
			close(started)
			<-wctx.Done()
			time.Sleep(300 * time.Millisecond) // stopping takes a while
			heldWhileStopping.Store(store.holder() == "me")
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("never leading")
	}
	assert.Equal(t, "me", store.holder())
	cancel()
	require.NoError(t, <-done)
	assert.True(t, heldWhileStopping.Load(), "the lease is held until work returned")
	assert.Empty(t, store.holder(), "released on stop")
}

// TestElectorReleaseIsBounded: the datastore stops answering while the
// component stops: the release gives up after leaseReleaseBudget (the
// lease then expires on its own) and the stop is not held up by the renew
// deadline.
func TestElectorReleaseIsBounded(t *testing.T) {
	store := &memStore{}
	e := New("test")
	cfg := testElection(store, "me")
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = time.Minute, 30*time.Second, time.Second
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, cfg, func(wctx context.Context) error {
			close(started)
			<-wctx.Done()
			return nil
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("never leading")
	}
	store.hung.Store(true)
	start := time.Now()
	cancel()
	require.NoError(t, <-done)
	took := time.Since(start)
	assert.Less(t, took, leaseReleaseBudget+500*time.Millisecond, "the stop waited %s", took)
	assert.GreaterOrEqual(t, took, leaseReleaseBudget, "it tried to release for the whole budget")
	assert.Equal(t, "me", store.holder(), "not released: it expires on its own")
}

func TestElectorLostLease(t *testing.T) {
	store := &memStore{}
	e := New("test")
	started := make(chan struct{})
	var cause error
	done := make(chan error, 1)
	go func() {
		done <- e.Run(context.Background(), testElection(store, "me"), func(wctx context.Context) error {
			close(started)
			<-wctx.Done()
			cause = context.Cause(wctx)
			return nil
		})
	}()
	<-started
	store.steal("thief")
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrLeaseLost)
		assert.ErrorIs(t, cause, ErrLeaseLost, "work's context says why")
		assert.Contains(t, err.Error(), "test/lease")
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after the lease was lost")
	}
	assert.Equal(t, "thief", store.holder(), "the new holder's lease is not touched")
}

// TestElectorStopsWorkOnceAnotherHolderSeen: once a renew reads another
// holder in the record, work's context ends at once (watchLease), not when
// client-go gives up a renew deadline later — the window in which a leader
// resumed after a pause still runs beside the one that took over.
func TestElectorStopsWorkOnceAnotherHolderSeen(t *testing.T) {
	store := &memStore{}
	cfg := testElection(store, "me")
	cfg.LeaseDuration, cfg.RenewDeadline = 8*time.Second, 6*time.Second // client-go alone: ~6 s
	e := New("test")
	started := make(chan struct{})
	stopped := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		done <- e.Run(context.Background(), cfg, func(wctx context.Context) error {
			close(started)
			<-wctx.Done()
			stopped <- time.Now()
			return nil
		})
	}()
	<-started
	stolen := time.Now()
	store.steal("thief")
	select {
	case at := <-stopped:
		assert.Less(t, at.Sub(stolen), 2*time.Second, "work ran on after a renew saw another holder")
	case <-time.After(20 * time.Second):
		t.Fatal("work's context did not end after the lease was taken")
	}
	require.ErrorIs(t, <-done, ErrLeaseLost)
	assert.Equal(t, "thief", store.holder())
}

// TestElectorLeaseLostWhileStopping: the lease is lost and the component is
// asked to stop before run returns (a stop with the datastore gone): that
// is a stop, not ErrLeaseLost, which the harness would report as a failure
// in its stop phase.
func TestElectorLeaseLostWhileStopping(t *testing.T) {
	store := &memStore{}
	e := New("test")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, testElection(store, "me"), func(wctx context.Context) error {
			close(started)
			<-wctx.Done() // the lease is lost…
			<-ctx.Done()  // …and the stop comes before work returned
			return nil
		})
	}()
	<-started
	store.steal("thief")
	time.Sleep(2 * time.Second) // past the renew deadline: lost
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return")
	}
	assert.Equal(t, "thief", store.holder())
}

func TestElectorStandby(t *testing.T) {
	store := &memStore{}
	store.steal("other")
	e := New("test")
	ctx, cancel := context.WithCancel(context.Background())
	var worked atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, testElection(store, "me"), func(context.Context) error { worked.Store(true); return nil })
	}()
	select {
	case <-e.standby:
	case <-time.After(10 * time.Second):
		t.Fatal("standby not reported")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel while standing by")
	}
	assert.False(t, worked.Load())
	assert.Equal(t, "other", store.holder())
}

func TestElectorWorkFails(t *testing.T) {
	store := &memStore{}
	boom := errors.New("boom")
	err := New("test").Run(context.Background(), testElection(store, "me"), func(context.Context) error { return boom })
	require.ErrorIs(t, err, boom)
	assert.Empty(t, store.holder(), "released when work returned")
}

func TestElectorInvalidConfig(t *testing.T) {
	cfg := testElection(&memStore{}, "me")
	cfg.RenewDeadline = 2 * cfg.LeaseDuration
	err := New("test").Run(context.Background(), cfg, func(context.Context) error { return nil })
	require.Error(t, err, "an error, not upstream's RunOrDie panic")
}

// hungLeases makes a fake clientset's Lease updates fail while hung is
// set, as with a datastore that stopped answering (the apiserver times the
// write out).
func hungLeases(c *fake.Clientset, hung *atomic.Bool) {
	c.PrependReactor("update", "leases", func(clienttesting.Action) (bool, runtime.Object, error) {
		if hung.Load() {
			return true, nil, apierrors.NewTimeoutError("etcd does not answer", 1)
		}
		return false, nil, nil
	})
}

// TestElectorSuccessorKeepsIdentity: after a lease lost to a stalled
// datastore, the record still names the old instance and stays valid for
// a lease duration. The successor (Renew) campaigns with the same identity
// and renews it as soon as the datastore answers; a new identity has to
// wait the lease duration out (client-go's rule for other candidates),
// which the second half shows.
func TestElectorSuccessorKeepsIdentity(t *testing.T) {
	const leaseDuration = 4 * time.Second
	c := fake.NewClientset()
	var hung atomic.Bool
	hungLeases(c, &hung)
	election := func(id string) leaderelection.LeaderElectionConfig {
		return leaderelection.LeaderElectionConfig{
			Lock: &rl.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: "kube-system", Name: "test"},
				Client:     c.CoordinationV1(),
				LockConfig: rl.ResourceLockConfig{Identity: id},
			},
			LeaseDuration: leaseDuration,
			RenewDeadline: time.Second,
			RetryPeriod:   100 * time.Millisecond,
			Name:          "test",
		}
	}
	// runUntilLeading runs e until its work started (then stops it) or
	// within runs out; it reports whether work started.
	runUntilLeading := func(e *Elector, id string, within time.Duration) (bool, error) {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		var led atomic.Bool
		err := e.Run(ctx, election(id), func(wctx context.Context) error {
			led.Store(true)
			cancel()
			<-wctx.Done()
			return nil
		})
		return led.Load(), err
	}

	first := New("test")
	lost := make(chan error, 1)
	go func() {
		lost <- first.Run(context.Background(), election("first"), func(wctx context.Context) error {
			hung.Store(true) // the datastore stalls while first leads
			<-wctx.Done()
			return nil
		})
	}()
	select {
	case err := <-lost:
		require.ErrorIs(t, err, ErrLeaseLost)
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost while the datastore stalled")
	}
	hung.Store(false) // the datastore answers again
	assert.Equal(t, "first", first.Settings().Identity, "the identity it campaigned with")

	// A new identity waits out the lease duration the record still has.
	led, err := runUntilLeading(New("test"), "stranger", leaseDuration/4)
	require.NoError(t, err)
	assert.False(t, led, "a new identity took a valid lease over")

	// The successor renews at once, as "first".
	next := first.Successor()
	start := time.Now()
	led, err = runUntilLeading(next, "upstream-made-a-new-one", leaseDuration/4)
	require.NoError(t, err)
	assert.True(t, led, "the successor did not lead within %s", leaseDuration/4)
	t.Logf("successor led after %s (lease duration %s)", time.Since(start).Round(time.Millisecond), leaseDuration)
	assert.Equal(t, "first", next.Settings().Identity)
	lease, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "test", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "", *lease.Spec.HolderIdentity, "released on stop by the successor, under the inherited identity")

	// And a successor of the successor still carries it.
	assert.Equal(t, "first", next.Successor().inherited)
}
