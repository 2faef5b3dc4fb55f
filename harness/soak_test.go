package harness_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// soakHeapBound is how much the live heap may grow between cycle 10 and
// cycle 100 of TestSoak. Measured: 12–17 KiB over those 90 cycles (with and
// without -race). One leaked barrier with its gate copies is tens of KiB, so
// a leak of one per cycle would be megabytes over 90 cycles.
const soakHeapBound = 256 << 10

// TestSoak runs 100 consecutive in-process start/stop cycles of a harness
// with three components (the k3s shape: a server with readiness, two that
// depend on it), each on a fresh hermetic target. No goroutine may be left
// and the live heap may not grow past soakHeapBound.
func TestSoak(t *testing.T) {
	quiet := funcr.New(func(string, string) {}, funcr.Options{})
	cycle := func() {
		target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures(Foo, Bar, Baz))
		require.NoError(t, err)
		h := &harness.Harness{Target: &target, Logger: quiet}
		ready := make(chan struct{})
		server := &harness.Func{ComponentName: "server",
			FlagsFunc: func(s *scoping.Scope) error { s.AddFlags(); return nil },
			RunFunc: func(ctx context.Context) error {
				close(ready)
				<-ctx.Done()
				return nil
			},
			ReadyFunc: func(ctx context.Context) error {
				select {
				case <-ready:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}}
		running := make(chan struct{}, 2)
		client := func(name string) *harness.Func {
			return &harness.Func{ComponentName: name,
				FlagsFunc: func(s *scoping.Scope) error { s.AddFlags(); return nil },
				RunFunc: func(ctx context.Context) error {
					running <- struct{}{}
					<-ctx.Done()
					return nil
				}}
		}
		require.NoError(t, h.Add(server, []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Add(client("a"), []string{"--feature-gates=Bar=true"}, "server"))
		require.NoError(t, h.Add(client("b"), []string{"--feature-gates=Baz=true"}, "server"))
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- h.Run(ctx) }()
		<-running
		<-running
		require.Eventually(t, func() bool { return h.Status().Ready() }, 10*time.Second, time.Millisecond)
		cancel()
		require.NoError(t, <-errc)
		require.True(t, target.Gate.Enabled(Foo) && target.Gate.Enabled(Bar) && target.Gate.Enabled(Baz))
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var base uint64
	for i := range 100 {
		cycle()
		if i == 9 {
			base = heap()
		}
	}
	end := heap()
	t.Logf("live heap after cycle 10: %d B, after cycle 100: %d B, growth %d B", base, end, int64(end)-int64(base))
	require.LessOrEqual(t, int64(end)-int64(base), int64(soakHeapBound))
	goleak.VerifyNone(t)
}
