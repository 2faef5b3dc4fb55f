package harness_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

func TestWaitReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b := newFake("a", j), newFake("b", j)
		a.readyAfter, b.readyAfter = 3*time.Second, 2*time.Second
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(b, nil, "a"))
		assert.ErrorContains(t, h.WaitReady(t.Context(), "nosuch"), `no component named "nosuch"`)
		start := time.Now()
		stop, _ := runUntil(t, h)
		require.NoError(t, h.WaitReady(t.Context(), "a"))
		assert.Equal(t, 3*time.Second, time.Since(start), "a is ready after 3s")
		require.NoError(t, h.WaitReady(t.Context()))
		assert.Equal(t, 5*time.Second, time.Since(start), "all: b 2s after a")

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.NoError(t, h.WaitReady(ctx), "already ready: returns at once")
		require.NoError(t, stop())
		assert.ErrorContains(t, h.WaitReady(t.Context()), "the run ended")
	})
}

func TestWaitReadyFailureAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a := newFake("a", j)
		a.failAfter, a.failErr, a.neverReady = time.Second, errBoom, true
		require.NoError(t, h.Add(a, nil))
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		_, done := runUntil(t, h)
		assert.ErrorIs(t, h.WaitReady(ctx), context.DeadlineExceeded)
		assert.ErrorContains(t, h.WaitReady(t.Context()), "a failed")
		<-done
	})
}

// The harness's logger reaches Run, Ready and Stop through their contexts,
// named for the component; without a Logger of its own, the harness names
// the component in the logger of the caller's context — once, either way.
func TestComponentContextCarriesTheLogger(t *testing.T) {
	for _, own := range []bool{true, false} {
		var lines []string
		var mu sync.Mutex
		log := funcr.New(func(prefix, args string) { mu.Lock(); lines = append(lines, args); mu.Unlock() }, funcr.Options{})
		target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures(Foo))
		require.NoError(t, err)
		h := &harness.Harness{Target: &target}
		ctx := t.Context()
		if own {
			h.Logger = log
		} else {
			ctx = klog.NewContext(ctx, log)
		}
		ctx, cancel := context.WithCancel(ctx)
		require.NoError(t, h.Add(&harness.Func{ComponentName: "c", RunFunc: func(ctx context.Context) error {
			klog.FromContext(ctx).Info("from Run")
			cancel()
			<-ctx.Done()
			return nil
		}}, nil))
		require.NoError(t, h.Run(ctx))
		mu.Lock()
		assert.Contains(t, lines, `"level"=0 "msg"="from Run" "component"="c"`, "the harness's own logger: %v", own)
		mu.Unlock()
	}
}
