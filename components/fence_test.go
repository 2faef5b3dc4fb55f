package components

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestFenceEndsRequestsAfterGrace: a request that hangs is ended grace
// after the stop, not before; a request made after the stop that hangs
// gets grace of its own; one that answers after the stop is not touched;
// copies of the configuration made after wrap are fenced too.
func TestFenceEndsRequestsAfterGrace(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	const grace = 300 * time.Millisecond
	f := newRequestFence(grace, false)
	f.wrap(cfg)
	copied := rest.CopyConfig(cfg)

	require.NoError(t, fencedGet(cfg, "/ok"), "before the stop")

	ctx, stop := context.WithCancel(context.Background())
	defer f.stopWhen(ctx, "test-component")()
	hung := make(chan error, 1)
	go func() { hung <- fencedGet(copied, "/hang") }()
	time.Sleep(100 * time.Millisecond) // in flight
	stopped := time.Now()
	stop()
	select {
	case err := <-hung:
		took := time.Since(stopped)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "test-component was asked to stop: its API requests get 300ms to answer")
		assert.GreaterOrEqual(t, took, grace, "ended before the grace was over")
		assert.Less(t, took, grace+2*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging request was not ended")
	}

	require.NoError(t, fencedGet(cfg, "/ok"), "a request that answers after the stop is not touched")
	start := time.Now()
	err := fencedGet(cfg, "/hang")
	require.Error(t, err, "a hanging request made after the stop")
	assert.GreaterOrEqual(t, time.Since(start), grace, "a request made after the stop has grace of its own")
	assert.Less(t, time.Since(start), grace+2*time.Second)
}

// TestFenceCloses: a closing fence (kube-apiserver's) fails requests made
// once the grace after the stop is over at once; before that, a request
// that answers is not touched.
func TestFenceCloses(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	const grace = 200 * time.Millisecond
	f := newRequestFence(grace, true)
	f.wrap(cfg)
	f.markStopped("kube-apiserver", "was asked to stop")
	require.NoError(t, fencedGet(cfg, "/ok"), "within the grace")
	<-f.closed.Done()
	start := time.Now()
	err := fencedGet(cfg, "/hang")
	require.ErrorContains(t, err, "kube-apiserver was asked to stop: its API requests get 200ms to answer")
	assert.Less(t, time.Since(start), grace/2, "failed at once once closed")
	assert.ErrorContains(t, fencedGet(cfg, "/ok"), "to answer", "even a request that would answer")
}

// TestFenceCause: the cause names a lost lease when that stopped the
// component; stopWhen cancelled first leaves the fence open.
func TestFenceCause(t *testing.T) {
	f := newRequestFence(time.Millisecond, false)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer f.stopWhen(ctx, "kube-controller-manager")()
	cancel(ErrLeaseLost)
	<-f.stopped.Done()
	assert.EqualError(t, context.Cause(f.stopped), "kube-controller-manager stopped (lost the leader-election lease): its API requests get 1ms to answer")

	g := newRequestFence(time.Millisecond, false)
	ctx2, cancel2 := context.WithCancel(context.Background())
	g.stopWhen(ctx2, "kube-controller-manager")()
	cancel2()
	time.Sleep(20 * time.Millisecond)
	assert.NoError(t, g.stopped.Err(), "stopped although stopWhen was cancelled first")
}

// TestFenceStopAfterGate: with a gate, a context that ended marks the fence
// stopped only once the gate is closed too (a lease lost while
// kube-controller-manager builds its controllers); cancelling first leaves
// it open and ends the wait.
func TestFenceStopAfterGate(t *testing.T) {
	f := newRequestFence(time.Millisecond, false)
	gate := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer f.stopAfter(ctx, "kube-controller-manager", gate)()
	cancel(ErrLeaseLost)
	time.Sleep(100 * time.Millisecond)
	assert.NoError(t, f.stopped.Err(), "stopped before the gate opened")
	close(gate)
	select {
	case <-f.stopped.Done():
		assert.EqualError(t, context.Cause(f.stopped), "kube-controller-manager stopped (lost the leader-election lease): its API requests get 1ms to answer")
	case <-time.After(5 * time.Second):
		t.Fatal("not stopped once the gate opened")
	}

	g := newRequestFence(time.Millisecond, false)
	ctx2, cancel2 := context.WithCancel(context.Background())
	stopWaiting := g.stopAfter(ctx2, "kube-controller-manager", make(chan struct{}))
	cancel2()
	time.Sleep(20 * time.Millisecond) // waiting for the gate now
	stopWaiting()                     // goleak: the wait ends
	assert.NoError(t, g.stopped.Err())
}

// TestListsCheck: a verbose /healthz lists the controllers' checks once
// they were built, passing or failing; the base checks do not count.
func TestListsCheck(t *testing.T) {
	known := map[string]bool{"namespace-controller": true, "deployment-controller": true}
	before := "[+]ping ok\n[+]log ok\nhealthz check passed\n"
	assert.False(t, listsCheck(before, known))
	assert.False(t, listsCheck("", known))
	assert.False(t, listsCheck("[+]namespace-controllers ok\n", known), "a prefix of a name is not the name")
	assert.True(t, listsCheck("[+]ping ok\n[+]log ok\n[+]namespace-controller ok\nhealthz check passed\n", known))
	assert.True(t, listsCheck("[+]ping ok\n[-]deployment-controller failed: reason withheld\nhealthz check failed\n", known))
}

// TestFenceKeepsRequestContext: a request cancelled by its own context
// fails with that, not with the fence's cause.
func TestFenceKeepsRequestContext(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	newRequestFence(time.Hour, false).wrap(cfg)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/hang", nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotContains(t, err.Error(), "to answer")
}

// TestFenceBoundsServedRequests: requests served through handler (kube-
// apiserver's chain) are not bounded before the stop; one still being
// served grace after the stop has its context cancelled with the fence's
// cause, and the server can answer it; one that answers after the stop is
// not touched; one that arrives after the stop gets grace of its own.
func TestFenceBoundsServedRequests(t *testing.T) {
	const grace = 300 * time.Millisecond
	f := newRequestFence(grace, false)
	causes := make(chan error, 2)
	srv := httptest.NewServer(f.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" { // a write waiting for a datastore that is gone
			<-r.Context().Done()
			causes <- context.Cause(r.Context())
			http.Error(w, "cancelled", http.StatusGatewayTimeout)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})))
	defer srv.Close()
	get := func(path string) int {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}

	hung := make(chan int, 1)
	go func() { hung <- get("/hang") }()
	select {
	case code := <-hung:
		t.Fatalf("a request was ended before any stop: %d", code)
	case <-time.After(3 * grace):
	}
	stopped := time.Now()
	f.markStopped("kube-apiserver", "was asked to stop")
	select {
	case code := <-hung:
		took := time.Since(stopped)
		assert.Equal(t, http.StatusGatewayTimeout, code, "the handler answers once its context ends")
		assert.GreaterOrEqual(t, took, grace, "ended before the grace was over")
		assert.Less(t, took, grace+2*time.Second)
		assert.EqualError(t, <-causes, "kube-apiserver was asked to stop: its API requests get 300ms to answer")
	case <-time.After(10 * time.Second):
		t.Fatal("the request in flight at the stop was not ended")
	}

	assert.Equal(t, http.StatusOK, get("/ok"), "a request that answers after the stop is not touched")
	start := time.Now()
	assert.Equal(t, http.StatusGatewayTimeout, get("/hang"), "a request that arrives after the stop and hangs")
	assert.GreaterOrEqual(t, time.Since(start), grace, "a request that arrives after the stop has grace of its own")
	assert.Less(t, time.Since(start), grace+2*time.Second)
	assert.Error(t, <-causes)
}

// TestFencedStorage: a storage call that answers returns its own result,
// whatever the fence; one blocked on etcd at the stop fails once
// it had its grace, and the storage is closed (once, on a goroutine of its
// own that wait joins); later calls fail at once; upstream's Destroy after
// that does not wait for the close.
func TestFencedStorage(t *testing.T) {
	const grace = 100 * time.Millisecond
	stoppedFence := func() context.Context {
		f := newRequestFence(grace, false)
		f.markStopped("kube-apiserver", "was asked to stop")
		return f.stopped
	}
	t.Run("answers", func(t *testing.T) {
		destroyed := 0
		s := newFencedStorage(newRequestFence(grace, false).stopped, grace, func() { destroyed++ })
		require.NoError(t, s.call("updating x", func() error { return nil }))
		boom := errors.New("boom")
		assert.ErrorIs(t, newFencedStorage(stoppedFence(), grace, func() { destroyed++ }).call("updating x", func() error { return boom }), boom)
		assert.Zero(t, destroyed)
		s.Destroy()
		assert.Equal(t, 1, destroyed, "Destroy without a stuck call is the reconciler's")
		assert.True(t, s.wait(time.Millisecond))
	})
	t.Run("open fence waits", func(t *testing.T) {
		s := newFencedStorage(newRequestFence(grace, false).stopped, grace, func() { t.Error("destroyed with the fence open") })
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
		f := newRequestFence(grace, false)
		closed := make(chan struct{})
		destroys := 0
		s := newFencedStorage(f.stopped, grace, func() { destroys++; close(closed); time.Sleep(3 * grace) }) // a slow close
		errClosed := errors.New("grpc: the client connection is closing")
		go func() { time.Sleep(grace / 2); f.markStopped("kube-apiserver", "was asked to stop") }()
		start := time.Now()
		err := s.call("updating the peer lease", func() error { <-closed; return errClosed })
		require.ErrorIs(t, err, errClosed)
		assert.Contains(t, err.Error(), "updating the peer lease: no answer from etcd 100ms after the stop (kube-apiserver was asked to stop: its API requests get 100ms to answer); closed the reconciler's etcd client")
		assert.GreaterOrEqual(t, time.Since(start), grace+grace/2, "closed before the call had its grace after the stop")
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
		s := newFencedStorage(stoppedFence(), grace, func() {})
		start := time.Now()
		err := s.call("removing the peer lease", func() error { <-never; return nil })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the call is left to etcd's client")
		assert.Less(t, time.Since(start), 2*grace+time.Second)
		assert.True(t, s.wait(time.Second))
	})
}

// BenchmarkFencedRoundTrip measures what the fence adds to a request, on
// a transport that answers at once (the fence's own cost, no network):
// compare fenced with plain in one run, go test -bench FencedRoundTrip.
func BenchmarkFencedRoundTrip(b *testing.B) {
	answer := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("ok")), Request: r}, nil
	})
	req := httptest.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
	run := func(b *testing.B, rt http.RoundTripper) {
		b.ReportAllocs()
		for b.Loop() {
			resp, err := rt.RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("plain", func(b *testing.B) { run(b, answer) })
	b.Run("fenced", func(b *testing.B) {
		run(b, &fencedRoundTripper{fence: newRequestFence(stopGrace, true), next: answer})
	})
}

// BenchmarkFencedHandler measures what requestFence.handler adds to each
// request kube-apiserver serves, on a handler that answers at once:
// compare bounded with plain in one run, go test -bench FencedHandler.
func BenchmarkFencedHandler(b *testing.B) {
	answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	req := httptest.NewRequest(http.MethodGet, "https://127.0.0.1:6443/api", nil)
	run := func(b *testing.B, h http.Handler) {
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	b.Run("plain", func(b *testing.B) { run(b, answer) })
	b.Run("bounded", func(b *testing.B) { run(b, newRequestFence(servedGrace, false).handler(answer)) })
}
