package components

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/internal/election"
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
			l.ready.Mark()
			l.ready.Mark() // idempotent
			assert.NoError(t, l.Ready(ctx), "marked ready")
			return boom
		})
		require.ErrorIs(t, err, boom)
		assert.Empty(t, kv, "the harness names the component in the context's logger (harness.TestComponentContextCarriesTheLogger), not the lifecycle again")
	})
	t.Run("standby counts as ready", func(t *testing.T) {
		e := election.New("c")
		l := newLifecycle("c", e)
		e.ObservedOtherLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, l.Ready(ctx))
	})
	t.Run("ctx ends", func(t *testing.T) {
		l := newLifecycle("c", election.New("c"))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, l.Ready(ctx), context.DeadlineExceeded)
	})
}

// TestRunElectedWithoutLease: with leader election off, runElected runs
// upstream's Run at once, marks the component ready once its check passed,
// and turns an early nil return into an error.
func TestRunElectedWithoutLease(t *testing.T) {
	l := newLifecycle("c", election.New("c"))
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	err := l.runElected(ctx, upstreamRun{
		run: func(ctx context.Context) error {
			ran = true
			require.NoError(t, l.Ready(ctx))
			cancel()
			return nil
		},
		ready:   func(context.Context) error { return nil },
		configz: "kubeharness-test",
	})
	assert.True(t, ran)
	assert.NoError(t, err, "nil after its context ended: a clean stop")

	ran = false
	err = newLifecycle("c", election.New("c")).runElected(context.Background(), upstreamRun{
		run:   func(context.Context) error { ran = true; return nil },
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.EqualError(t, err, "c: Run returned before it was asked to stop")

	// An error after the stop was asked for is the interrupted start-up's
	// (kube-controller-manager's node IPAM), not a failure; one before it
	// is returned as it is.
	ctx, cancel = context.WithCancel(context.Background())
	ran = false
	err = newLifecycle("c", election.New("c")).runElected(ctx, upstreamRun{
		run: func(ctx context.Context) error {
			ran = true
			cancel()
			return errors.New("failed to list all nodes in 10m0s, cannot proceed without updating CIDR map")
		},
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.NoError(t, err)
	ran = false
	err = newLifecycle("c", election.New("c")).runElected(context.Background(), upstreamRun{
		run:   func(context.Context) error { ran = true; return errors.New("error starting controllers") },
		ready: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
	})
	assert.True(t, ran)
	assert.EqualError(t, err, "error starting controllers")
}

// TestRunElectedUpstreamMessages: upstream's messages an adapter names
// are mapped once, here: a stop message after the stop is a clean stop
// (its note logged), a failure message before it is wrapped with its
// cause; unserved is called only when upstream's Run was not.
func TestRunElectedUpstreamMessages(t *testing.T) {
	cause := errors.New("the cause")
	noted := false
	ctx, cancel := context.WithCancel(context.Background())
	unserved := 0
	u := upstreamRun{
		run: func(context.Context) error {
			cancel()
			return errors.New("x: " + upstreamSchedulerStopped)
		},
		ready:        func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
		unserved:     func() { unserved++ },
		stopMessages: []upstreamMessage{{text: upstreamSchedulerStopped, note: func(klog.Logger) { noted = true }}},
		failMessages: []upstreamMessage{{text: upstreamKCMAPIServerUnhealthy, cause: cause}},
	}
	require.NoError(t, newLifecycle("c", election.New("c")).runElected(ctx, u))
	assert.True(t, noted)
	assert.Zero(t, unserved, "upstream's Run was called")

	u.run = func(context.Context) error { return errors.New(upstreamKCMAPIServerUnhealthy + ": timed out") }
	err := newLifecycle("c", election.New("c")).runElected(context.Background(), u)
	require.ErrorIs(t, err, cause)
	assert.EqualError(t, err, "c: the cause: "+upstreamKCMAPIServerUnhealthy+": timed out")

	stopped, stop := context.WithCancel(context.Background())
	stop()
	u.election = LeaderElection{Enabled: true, ResourceLock: "no-such-lock"}
	u.kubeconfig = &rest.Config{Host: "https://127.0.0.1:1"}
	require.Error(t, newLifecycle("c", election.New("c")).runElected(stopped, u), "a lease that cannot be built")
	assert.Equal(t, 1, unserved, "upstream's Run was not called")
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
