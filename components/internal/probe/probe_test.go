package probe_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/internal/probe"
)

// TestReadiness: the zero value is not ready; Mark makes it ready, once
// (a second Mark does nothing); Wait ends with its context before that.
func TestReadiness(t *testing.T) {
	var r probe.Readiness
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.Wait(ctx), context.DeadlineExceeded)
	r.Mark()
	r.Mark()
	assert.NoError(t, r.Wait(t.Context()))
	select {
	case <-r.Done():
	default:
		t.Fatal("Done not closed after Mark")
	}
}

// TestMarkWhen: a check that passes marks the readiness; one that fails
// does not; stop ends the check's context and returns once it returned.
func TestMarkWhen(t *testing.T) {
	var passed probe.Readiness
	stop := passed.MarkWhen(t.Context(), func(context.Context) error { return nil })
	require.NoError(t, passed.Wait(t.Context()))
	stop()

	var failed probe.Readiness
	stop = failed.MarkWhen(t.Context(), func(context.Context) error { return errors.New("no") })
	stop()
	select {
	case <-failed.Done():
		t.Fatal("marked although the check failed")
	default:
	}

	var waiting probe.Readiness
	var returned atomic.Bool
	stop = waiting.MarkWhen(t.Context(), func(ctx context.Context) error {
		<-ctx.Done()
		returned.Store(true)
		return ctx.Err()
	})
	stop()
	assert.True(t, returned.Load(), "stop waits for the check")
	select {
	case <-waiting.Done():
		t.Fatal("marked although the check was stopped")
	default:
	}
}

// TestPoll: Poll returns once the check passes; when its context ends
// first, its error wraps the context's and names the check's last error.
func TestPoll(t *testing.T) {
	calls := 0
	require.NoError(t, probe.Poll(t.Context(), time.Millisecond, func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	}))
	assert.Equal(t, 3, calls, "at once, then each interval")

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := probe.Poll(ctx, 10*time.Millisecond, func(context.Context) error { return errors.New("still down") })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "still down")
}

// TestNewHTTP: a plain probe of an unspecified host asks loopback, and
// waits until the path answers 200.
func TestNewHTTP(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !up.Load() {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	p := probe.NewHTTP(net.JoinHostPort("0.0.0.0", port))
	assert.ErrorContains(t, p.Get(t.Context(), "/healthz"), "/healthz: 503 not yet")
	time.AfterFunc(100*time.Millisecond, func() { up.Store(true) })
	assert.NoError(t, p.WaitOK(t.Context(), "/healthz"))
}
