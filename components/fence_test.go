package components

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// hangingServer answers /hang only when the test ends (as an apiserver
// whose datastore is gone answers at its request timeout) and /ok at once.
func hangingServer(t *testing.T) *httptest.Server {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

// fencedGet GETs path through a client of cfg.
func fencedGet(cfg *rest.Config, path string) error {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get(cfg.Host + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// TestFenceEndsRequestsAfterGrace: a request that hangs is ended grace after
// the stop, not before; requests after that fail at once with the cause;
// copies of the configuration made after wrap are fenced too.
func TestFenceEndsRequestsAfterGrace(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	f := newRequestFence()
	f.wrap(cfg)
	copied := rest.CopyConfig(cfg)

	require.NoError(t, fencedGet(cfg, "/ok"), "an open fence lets requests through")

	ctx, stop := context.WithCancel(context.Background())
	const grace = 300 * time.Millisecond
	defer f.closeAfter(ctx, "test-component", grace)()
	hung := make(chan error, 1)
	go func() { hung <- fencedGet(copied, "/hang") }()
	time.Sleep(100 * time.Millisecond) // in flight
	stopped := time.Now()
	stop()
	select {
	case err := <-hung:
		took := time.Since(stopped)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "test-component was asked to stop")
		assert.GreaterOrEqual(t, took, grace, "ended before the grace was over")
		assert.Less(t, took, grace+2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging request was not ended")
	}

	start := time.Now()
	err := fencedGet(cfg, "/ok")
	require.Error(t, err, "a request after the fence closed")
	assert.Contains(t, err.Error(), "test-component was asked to stop")
	assert.Less(t, time.Since(start), time.Second)
}

// TestFenceStaysOpenWhenStoppedFirst: when the component returned before its
// context ended (closeAfter's stop called first), a later end of the
// context does not close the fence.
func TestFenceStaysOpenWhenStoppedFirst(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	f := newRequestFence()
	f.wrap(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	f.closeAfter(ctx, "test-component", time.Millisecond)()
	cancel()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, fencedGet(cfg, "/ok"))
	assert.NoError(t, f.ctx.Err())

	// Stopping after the timer was set cancels the timer.
	ctx2, cancel2 := context.WithCancel(context.Background())
	stop := f.closeAfter(ctx2, "test-component", 200*time.Millisecond)
	cancel2()
	time.Sleep(20 * time.Millisecond)
	stop()
	time.Sleep(300 * time.Millisecond)
	assert.NoError(t, f.ctx.Err(), "closed although stopped before the grace was over")
}

// TestFenceKeepsRequestContext: a request cancelled by its own context
// fails with that, not with the fence's cause.
func TestFenceKeepsRequestContext(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	newRequestFence().wrap(cfg)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/hang", nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, err.Error(), "asked to stop")
}

// TestFencedStorage: a storage call that answers returns its own result,
// whatever the fence; one blocked on etcd when the fence closes fails once
// it had its grace, and the storage is closed (once, on a goroutine of its
// own that wait joins); later calls fail at once; upstream's Destroy after
// that does not wait for the close.
func TestFencedStorage(t *testing.T) {
	const grace = 100 * time.Millisecond
	closedFence := func() context.Context {
		f := newRequestFence()
		f.close(errors.New("kube-apiserver was asked to stop"))
		return f.ctx
	}
	t.Run("answers", func(t *testing.T) {
		destroyed := 0
		s := newFencedStorage(newRequestFence().ctx, grace, func() { destroyed++ })
		require.NoError(t, s.call("updating x", func() error { return nil }))
		boom := errors.New("boom")
		assert.ErrorIs(t, newFencedStorage(closedFence(), grace, func() { destroyed++ }).call("updating x", func() error { return boom }), boom)
		assert.Zero(t, destroyed)
		s.Destroy()
		assert.Equal(t, 1, destroyed, "Destroy without a stuck call is the reconciler's")
		assert.True(t, s.wait(time.Millisecond))
	})
	t.Run("open fence waits", func(t *testing.T) {
		s := newFencedStorage(newRequestFence().ctx, grace, func() { t.Error("destroyed with the fence open") })
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- s.call("updating x", func() error { <-release; return nil }) }()
		select {
		case <-done:
			t.Fatal("returned while the call was blocked and the fence open")
		case <-time.After(3 * grace):
		}
		close(release)
		require.NoError(t, <-done)
	})
	t.Run("blocked at the stop", func(t *testing.T) {
		f := newRequestFence()
		closed := make(chan struct{})
		destroys := 0
		s := newFencedStorage(f.ctx, grace, func() { destroys++; close(closed); time.Sleep(3 * grace) }) // a slow close
		errClosed := errors.New("grpc: the client connection is closing")
		go func() { time.Sleep(grace / 2); f.close(errors.New("kube-apiserver was asked to stop")) }()
		start := time.Now()
		err := s.call("updating the peer lease", func() error { <-closed; return errClosed })
		require.ErrorIs(t, err, errClosed)
		assert.Contains(t, err.Error(), "updating the peer lease: no answer from etcd by the stop (kube-apiserver was asked to stop); closed the reconciler's etcd client")
		assert.GreaterOrEqual(t, time.Since(start), grace, "closed before the call had its grace")
		assert.Less(t, time.Since(start), grace+time.Second)

		start = time.Now()
		err = s.call("removing the peer lease", func() error { t.Error("called on a closed storage"); return nil })
		require.ErrorContains(t, err, "not tried: its etcd client was closed at the stop")
		s.Destroy() // upstream's hook, while the close still runs
		assert.Less(t, time.Since(start), grace, "waited for the close")
		assert.False(t, s.wait(time.Millisecond), "the close is still running")
		assert.True(t, s.wait(10*grace))
		assert.Equal(t, 1, destroys)
	})
	t.Run("blocked for good", func(t *testing.T) {
		never := make(chan struct{})
		defer close(never) // let the goroutine go at the end, for goleak
		s := newFencedStorage(closedFence(), grace, func() {})
		start := time.Now()
		err := s.call("removing the peer lease", func() error { <-never; return nil })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the call is left to etcd's client")
		assert.Less(t, time.Since(start), 2*grace+time.Second)
		assert.True(t, s.wait(time.Second))
	})
}
