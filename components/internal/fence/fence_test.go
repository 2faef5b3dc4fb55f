package fence

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// countingServer answers every request at once and counts them.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	served := &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, served
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
	f := New(grace, false)
	f.Wrap(cfg)
	copied := rest.CopyConfig(cfg)

	require.NoError(t, fencedGet(cfg, "/ok"), "before the stop")

	ctx, stop := context.WithCancel(context.Background())
	defer f.StopWhen(ctx, "test-component")()
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
	f := New(grace, true)
	f.Wrap(cfg)
	f.MarkStopped("kube-apiserver", "was asked to stop")
	require.NoError(t, fencedGet(cfg, "/ok"), "within the grace")
	<-f.closed.Done()
	start := time.Now()
	err := fencedGet(cfg, "/hang")
	require.ErrorContains(t, err, "kube-apiserver was asked to stop: its API requests get 200ms to answer")
	assert.Less(t, time.Since(start), grace/2, "failed at once once closed")
	assert.ErrorContains(t, fencedGet(cfg, "/ok"), "to answer", "even a request that would answer")
}

// TestFenceCause: the cause names a lost lease when that stopped the
// component; StopWhen cancelled first leaves the fence open.
func TestFenceCause(t *testing.T) {
	f := New(time.Millisecond, false)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer f.StopWhen(ctx, "kube-controller-manager")()
	cancel(errors.New("lost the leader-election lease"))
	<-f.stopped.Done()
	assert.EqualError(t, context.Cause(f.stopped), "kube-controller-manager stopped (lost the leader-election lease): its API requests get 1ms to answer")

	g := New(time.Millisecond, false)
	ctx2, cancel2 := context.WithCancel(context.Background())
	g.StopWhen(ctx2, "kube-controller-manager")()
	cancel2()
	time.Sleep(20 * time.Millisecond)
	assert.NoError(t, g.stopped.Err(), "stopped although stopWhen was cancelled first")
}

// TestFenceStopAfterGate: with a gate, a context that ended marks the fence
// stopped only once the gate is closed too (a lease lost while
// kube-controller-manager builds its controllers); cancelling first leaves
// it open and ends the wait.
func TestFenceStopAfterGate(t *testing.T) {
	f := New(time.Millisecond, false)
	gate := make(chan struct{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer f.StopAfter(ctx, "kube-controller-manager", gate)()
	cancel(errors.New("lost the leader-election lease"))
	time.Sleep(100 * time.Millisecond)
	assert.NoError(t, f.stopped.Err(), "stopped before the gate opened")
	close(gate)
	select {
	case <-f.stopped.Done():
		assert.EqualError(t, context.Cause(f.stopped), "kube-controller-manager stopped (lost the leader-election lease): its API requests get 1ms to answer")
	case <-time.After(5 * time.Second):
		t.Fatal("not stopped once the gate opened")
	}

	g := New(time.Millisecond, false)
	ctx2, cancel2 := context.WithCancel(context.Background())
	stopWaiting := g.StopAfter(ctx2, "kube-controller-manager", make(chan struct{}))
	cancel2()
	time.Sleep(20 * time.Millisecond) // waiting for the gate now
	stopWaiting()                     // goleak: the wait ends
	assert.NoError(t, g.stopped.Err())
}

// TestFenceKeepsRequestContext: a request cancelled by its own context
// fails with that, not with the fence's cause.
func TestFenceKeepsRequestContext(t *testing.T) {
	srv := hangingServer(t)
	cfg := &rest.Config{Host: srv.URL}
	New(time.Hour, false).Wrap(cfg)
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
	f := New(grace, false)
	causes := make(chan error, 2)
	srv := httptest.NewServer(f.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	f.MarkStopped("kube-apiserver", "was asked to stop")
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
		run(b, &roundTripper{fence: New(time.Second, true), next: answer})
	})
}

// BenchmarkFencedHandler measures what Fence.Handler adds to each
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
	b.Run("bounded", func(b *testing.B) { run(b, New(3*time.Second, false).Handler(answer)) })
}

// roundTripperFunc is an http.RoundTripper of a func.
type roundTripperFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestFenceHold: a request through a held fence is not sent until the
// hold is opened, then is; a held request whose context ends fails with
// that cause, and one held when the fence stops fails with the stop's
// cause — neither reaches the server.
func TestFenceHold(t *testing.T) {
	srv, served := countingServer(t)

	f := New(time.Second, false)
	open := make(chan struct{})
	f.Hold(open)
	cfg := &rest.Config{Host: srv.URL}
	f.Wrap(cfg)
	done := make(chan error, 1)
	go func() { done <- fencedGet(cfg, "/ok") }()
	select {
	case err := <-done:
		t.Fatalf("the request returned (%v) while held", err)
	case <-time.After(200 * time.Millisecond):
	}
	assert.Zero(t, served.Load(), "nothing sent while held")
	close(open)
	require.NoError(t, <-done)
	assert.EqualValues(t, 1, served.Load())

	// Held, and the request's context ends.
	f2 := New(time.Second, false)
	f2.Hold(make(chan struct{}))
	client := &http.Client{Transport: &roundTripper{fence: f2, next: http.DefaultTransport}}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("the caller gave up")
	time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ok", nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	assert.ErrorIs(t, err, cause)

	// Held, and the fence stops.
	time.AfterFunc(50*time.Millisecond, func() { f2.MarkStopped("kube-scheduler", "was asked to stop") })
	req, err = http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/ok", nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	assert.ErrorContains(t, err, "kube-scheduler was asked to stop")
	assert.EqualValues(t, 1, served.Load(), "no held request was sent")
}

// TestFenceHoldOpenThenStopped: once the hold is open, a request made after
// the stop is sent and gets its grace, as without a hold — never failed at
// once (each of many: a select over the open hold and the stop would fail
// about half of them).
func TestFenceHoldOpenThenStopped(t *testing.T) {
	srv, served := countingServer(t)

	f := New(time.Second, false)
	open := make(chan struct{})
	f.Hold(open)
	close(open)
	f.MarkStopped("kube-controller-manager", "was asked to stop")
	cfg := &rest.Config{Host: srv.URL}
	f.Wrap(cfg)
	const n = 64
	for i := range n {
		require.NoError(t, fencedGet(cfg, "/ok"), "request %d after the stop", i)
	}
	assert.EqualValues(t, n, served.Load(), "every request was sent")
}

// TestFencePark: with Park's gate open, a request the stop ended does not
// return (its error would reach a constructor that exits the process) and
// Parked closes; a request that answers in time returns; once the gate is
// closed, a request the stop ends returns its error. No request parks
// before the stop.
func TestFencePark(t *testing.T) {
	srv := hangingServer(t)
	f := New(100*time.Millisecond, false)
	building := make(chan struct{})
	f.Park(building)
	cfg := &rest.Config{Host: srv.URL}
	f.Wrap(cfg)
	require.NoError(t, fencedGet(cfg, "/ok"))

	hung := make(chan error, 1)
	go func() { hung <- fencedGet(cfg, "/hang") }()
	time.Sleep(50 * time.Millisecond)
	f.MarkStopped("kube-controller-manager", "was asked to stop")
	select {
	case <-f.Parked():
	case err := <-hung:
		t.Fatalf("the request the stop ended returned (%v) instead of parking", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Parked not closed 5 s after the stop")
	}
	select {
	case err := <-hung:
		t.Fatalf("the parked request returned: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, fencedGet(cfg, "/ok"), "a request answered in time after the stop")

	close(building)
	err := fencedGet(cfg, "/hang")
	require.Error(t, err, "the building is over: a request the stop ends fails")
	assert.ErrorContains(t, err, "kube-controller-manager was asked to stop")

	close(f.unpark) // only so that the test leaks no goroutine
	assert.ErrorContains(t, <-hung, "kube-controller-manager was asked to stop")
}
