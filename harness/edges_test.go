package harness_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// A Ready that ignores its context cannot hang Run: ReadyTimeout bounds it,
// the component is named, its goroutine abandoned, the rest stopped.
func TestReadyIgnoringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, hung, user := newFake("a", j), newFake("hung", j), newFake("user", j)
		hung.hangReady = make(chan struct{})
		require.NoError(t, h.Add(a, nil))
		require.NoError(t, h.Add(hung, nil, "a"))
		require.NoError(t, h.Add(user, nil, "hung"))
		start := time.Now()
		err := h.Run(t.Context())
		assert.Equal(t, 10*time.Second+harness.AbandonGrace, time.Since(start), "ReadyTimeout, then the grace")
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, harness.DeadlineError{Component: "hung", What: "Ready", Timeout: 10 * time.Second, Abandoned: true}, *de)
		assert.EqualError(t, err, "hung failed in phase start: not ready within 10s, and Ready ignored its context; its goroutine was abandoned")
		assert.False(t, user.runCalled.Load())
		assert.Contains(t, j.list(), "stop hung", "its Run is still stopped")
		assert.Contains(t, j.list(), "stop a")
		close(hung.hangReady) // let the abandoned goroutine end before the bubble does
		synctest.Wait()
	})
}

// A Ready that ignores its context while another component fails: Run
// returns, and the abandoned goroutine is named beside the first failure.
func TestReadyIgnoringContextWhileAnotherFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		hung, failing := newFake("hung", j), newFake("failing", j)
		hung.hangReady = make(chan struct{})
		failing.failAfter, failing.failErr, failing.neverReady = time.Second, errBoom, true
		require.NoError(t, h.Add(hung, nil))
		require.NoError(t, h.Add(failing, nil))
		start := time.Now()
		err := h.Run(t.Context())
		assert.Less(t, time.Since(start), 10*time.Second, "not held until the hung Ready's own deadline")
		assert.ErrorIs(t, err, errBoom)
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "hung", de.Component)
		assert.True(t, de.Abandoned)
		close(hung.hangReady)
		synctest.Wait()
	})
}

// A hung Stop: Run's context is cancelled when Stop's share of StopTimeout
// ends, Run returns at once, and the error blames Stop, not Run.
func TestHungStopIsNamedAndRunStillStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		s := stopper{newFake("s", j)}
		s.hangStop = make(chan struct{})
		require.NoError(t, h.Add(s, nil))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		err := stop()
		s.mu.Lock()
		assert.Equal(t, 2500*time.Millisecond, s.runCancelled.Sub(s.stopCalled), "Run cancelled when Stop's share ended")
		s.mu.Unlock()
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, harness.DeadlineError{Component: "s", What: "Stop", Timeout: 2500 * time.Millisecond, Abandoned: true}, *de)
		assert.EqualError(t, err, "s failed in phase stop: Stop did not return within 2.5s; its goroutine was abandoned")
		assert.Contains(t, j.list(), "stop s", "Run returned")
		close(s.hangStop)
		synctest.Wait()
	})
}

// Stop returns, Run does not: Run is named, with the whole StopTimeout.
func TestRunOverrunAfterStopIsNamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		s := stopper{newFake("s", j)}
		s.ignoreCtx = make(chan struct{})
		require.NoError(t, h.Add(s, nil))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		start := time.Now()
		err := stop()
		assert.Equal(t, 5*time.Second, time.Since(start))
		var de *harness.DeadlineError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "Run", de.What)
		assert.EqualError(t, err, "s failed in phase stop: Run did not return within 5s of the stop; its goroutines were abandoned")
		close(s.ignoreCtx)
		synctest.Wait()
	})
}
