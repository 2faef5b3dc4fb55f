package harnesstest

import (
	"context"
	"errors"
	"time"

	"github.com/kubeharness/kubeharness/harness"
)

// TestingT is the part of testing.TB the helpers use.
type TestingT interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Start runs h.Run(ctx) in a goroutine and returns at once. The channel
// receives what Run returned.
func Start(ctx context.Context, h *harness.Harness) <-chan error {
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	return done
}

// StartReady is Start, then waits until every component is ready
// (Harness.WaitReady), at most timeout. It fails t if Run returned, a
// component failed, or timeout passed first.
func StartReady(t TestingT, ctx context.Context, h *harness.Harness, timeout time.Duration) <-chan error {
	t.Helper()
	done := Start(ctx, h)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := h.WaitReady(wctx)
	switch {
	case err == nil:
		return done
	case errors.Is(err, context.DeadlineExceeded):
		t.Fatalf("not ready within %s: %+v", timeout, h.Status().Components)
	default:
		select {
		case runErr := <-done:
			t.Fatalf("harness returned before every component was ready: %v", runErr)
		case <-time.After(timeout):
			t.Fatalf("not ready (%v), and Run did not return within %s: %+v", err, timeout, h.Status().Components)
		}
	}
	return done
}

// Stop cancels the harness's context and returns what Run returned (done,
// from Start or StartReady). It fails t if Run did not return within
// timeout.
func Stop(t TestingT, cancel context.CancelFunc, done <-chan error, timeout time.Duration) error {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		t.Fatalf("the harness did not return within %s of cancel", timeout)
		return nil
	}
}
