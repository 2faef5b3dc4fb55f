package components

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"
)

// TestLifecycleRun: the bookkeeping every adapter's Run shares.
func TestLifecycleRun(t *testing.T) {
	t.Run("before AddFlags", func(t *testing.T) {
		l := newLifecycle("c", nil)
		called := false
		err := l.run(context.Background(), false, func(context.Context) error { called = true; return nil })
		require.EqualError(t, err, "c: Run before AddFlags", "run returns Run's error")
		assert.False(t, called)
		// Ready does not watch Run (the harness ends Ready's context when
		// Run returned): it returns its context's error.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, l.Ready(ctx), context.Canceled, "Ready returns its context's error")
	})
	t.Run("stopped before it started", func(t *testing.T) {
		l := newLifecycle("c", nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		called := false
		require.NoError(t, l.run(ctx, true, func(context.Context) error { called = true; return nil }))
		assert.False(t, called)
	})
	t.Run("logger and ready", func(t *testing.T) {
		l := newLifecycle("c", nil)
		var kv []any
		sink := &valuesSink{kv: &kv}
		ctx := klog.NewContext(context.Background(), logr.New(sink))
		boom := errors.New("boom")
		err := l.run(ctx, true, func(ctx context.Context) error {
			klog.FromContext(ctx).Info("hello")
			l.markReady()
			l.markReady() // idempotent
			assert.NoError(t, l.Ready(ctx), "marked ready")
			return boom
		})
		require.ErrorIs(t, err, boom)
		assert.Equal(t, []any{"component", "c"}, kv)
	})
	t.Run("standby counts as ready", func(t *testing.T) {
		e := newElector("c")
		l := newLifecycle("c", e)
		e.observedOtherLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, l.Ready(ctx))
	})
	t.Run("ctx ends", func(t *testing.T) {
		l := newLifecycle("c", newElector("c"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, l.Ready(ctx), context.DeadlineExceeded)
	})
}

// TestRunElectedWithoutLease: with leader election off, runElected runs
// upstream's Run at once, marks the component ready once its check passed,
// and turns an early nil return into an error.
func TestRunElectedWithoutLease(t *testing.T) {
	l := newLifecycle("c", newElector("c"))
	ctx, cancel := context.WithCancel(context.Background())
	ran, err := l.runElected(ctx, nil, upstreamRun{
		run: func(ctx context.Context) error {
			require.NoError(t, l.Ready(ctx))
			cancel()
			return nil
		},
		ready:   func(context.Context) error { return nil },
		configz: "kubeharness-test",
	})
	assert.True(t, ran)
	assert.NoError(t, err, "nil after its context ended: a clean stop")

	ran, err = newLifecycle("c", newElector("c")).runElected(context.Background(), nil, upstreamRun{
		run:   func(context.Context) error { return nil },
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.EqualError(t, err, "c: Run returned before it was asked to stop")

	// An error after the stop was asked for is the interrupted start-up's
	// (kube-controller-manager's node IPAM), not a failure; one before it
	// is returned as it is.
	ctx, cancel = context.WithCancel(context.Background())
	ran, err = newLifecycle("c", newElector("c")).runElected(ctx, nil, upstreamRun{
		run: func(ctx context.Context) error {
			cancel()
			return errors.New("failed to list all nodes in 10m0s, cannot proceed without updating CIDR map")
		},
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.NoError(t, err)
	ran, err = newLifecycle("c", newElector("c")).runElected(context.Background(), nil, upstreamRun{
		run:   func(context.Context) error { return errors.New("error starting controllers") },
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.EqualError(t, err, "error starting controllers")
}

// valuesSink records the values its loggers were given, and logs nothing.
type valuesSink struct{ kv *[]any }

func (s *valuesSink) Init(logr.RuntimeInfo)        {}
func (s *valuesSink) Enabled(int) bool             { return true }
func (s *valuesSink) Info(int, string, ...any)     {}
func (s *valuesSink) Error(error, string, ...any)  {}
func (s *valuesSink) WithName(string) logr.LogSink { return s }

func (s *valuesSink) WithValues(kv ...any) logr.LogSink {
	*s.kv = append(*s.kv, kv...)
	return s
}
