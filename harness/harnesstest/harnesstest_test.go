package harnesstest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newHarness is a harness on a target of its own (the process gate is not
// touched), logging nowhere, with one component per run function (ready
// once its goroutine started).
func newHarness(t testing.TB, runs ...func(context.Context) error) *harness.Harness {
	target, err := scopingtest.NewTarget(nil)
	require.NoError(t, err)
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	for i, run := range runs {
		require.NoError(t, h.Add(&harness.Func{ComponentName: fmt.Sprintf("c%d", i), RunFunc: run}, nil))
	}
	return h
}

func untilDone(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// fatalT records Fatalf instead of ending the test.
type fatalT struct{ fatal []string }

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}

func TestStartReadyAndStop(t *testing.T) {
	h := newHarness(t, untilDone, untilDone)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, h, time.Minute)
	assert.True(t, h.Status().Ready())
	require.NoError(t, harnesstest.Stop(t, cancel, done, time.Minute))
	for _, c := range h.Status().Components {
		assert.Equal(t, harness.Stopped, c.State, c.Name)
	}
}

func TestStartReadyRunReturnsFirst(t *testing.T) {
	boom := errors.New("boom")
	h := newHarness(t, untilDone)
	require.NoError(t, h.Add(&harness.Func{ComponentName: "failing", RunFunc: func(context.Context) error { return boom },
		ReadyFunc: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}, nil))
	ft := &fatalT{}
	done := harnesstest.StartReady(ft, t.Context(), h, time.Minute)
	require.Len(t, ft.fatal, 1)
	assert.Contains(t, ft.fatal[0], "harness returned before every component was ready")
	assert.Contains(t, ft.fatal[0], "boom")
	assert.Empty(t, done, "Run's error was taken")
}

func TestStartReadyTimeout(t *testing.T) {
	release := make(chan struct{})
	h := newHarness(t, untilDone)
	require.NoError(t, h.Add(&harness.Func{ComponentName: "slow", RunFunc: untilDone, ReadyFunc: func(ctx context.Context) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}, nil))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ft := &fatalT{}
	done := harnesstest.StartReady(ft, ctx, h, 100*time.Millisecond)
	require.Len(t, ft.fatal, 1)
	assert.Contains(t, ft.fatal[0], "not ready within 100ms")
	close(release)
	require.NoError(t, harnesstest.Stop(t, cancel, done, time.Minute))
}

func TestStopTimeout(t *testing.T) {
	ft := &fatalT{}
	never := make(chan error)
	assert.NoError(t, harnesstest.Stop(ft, func() {}, never, 10*time.Millisecond))
	require.Len(t, ft.fatal, 1)
	assert.Contains(t, ft.fatal[0], "did not return within 10ms of cancel")
}
