package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/internal/fence"
)

// TestGuard: a storage call that answers returns its own result,
// whatever the fence; one blocked on etcd at the stop fails once
// it had its grace, and the storage is closed (once, on a goroutine of its
// own that wait joins); later calls fail at once; upstream's Destroy after
// that does not wait for the close.
func TestGuard(t *testing.T) {
	const grace = 100 * time.Millisecond
	stoppedFence := func() context.Context {
		f := fence.New(grace, false)
		f.MarkStopped("kube-apiserver", "was asked to stop")
		return f.Stopped()
	}
	t.Run("answers", func(t *testing.T) {
		destroyed := 0
		s := NewGuard(fence.New(grace, false).Stopped(), grace, func() { destroyed++ })
		require.NoError(t, s.Call("updating x", func() error { return nil }))
		boom := errors.New("boom")
		assert.ErrorIs(t, NewGuard(stoppedFence(), grace, func() { destroyed++ }).Call("updating x", func() error { return boom }), boom)
		assert.Zero(t, destroyed)
		s.Destroy()
		assert.Equal(t, 1, destroyed, "Destroy without a stuck call is the reconciler's")
		assert.True(t, s.Wait(time.Millisecond))
	})
	t.Run("open fence waits", func(t *testing.T) {
		s := NewGuard(fence.New(grace, false).Stopped(), grace, func() { t.Error("destroyed with the fence open") })
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- s.Call("updating x", func() error { <-release; return nil }) }()
		select {
		case <-done:
			t.Fatal("returned while the call was blocked and the fence open")
		case <-time.After(3 * grace):
		}
		close(release)
		require.NoError(t, <-done)
	})
	t.Run("blocked at the stop", func(t *testing.T) {
		f := fence.New(grace, false)
		closed := make(chan struct{})
		destroys := 0
		s := NewGuard(f.Stopped(), grace, func() { destroys++; close(closed); time.Sleep(3 * grace) }) // a slow close
		errClosed := errors.New("grpc: the client connection is closing")
		go func() { time.Sleep(grace / 2); f.MarkStopped("kube-apiserver", "was asked to stop") }()
		start := time.Now()
		err := s.Call("updating the peer lease", func() error { <-closed; return errClosed })
		require.ErrorIs(t, err, errClosed)
		assert.Contains(t, err.Error(), "updating the peer lease: no answer from etcd 100ms after the stop (kube-apiserver was asked to stop: its API requests get 100ms to answer); closed the reconciler's etcd client")
		assert.GreaterOrEqual(t, time.Since(start), grace+grace/2, "closed before the call had its grace after the stop")
		assert.Less(t, time.Since(start), grace+time.Second)

		start = time.Now()
		err = s.Call("removing the peer lease", func() error { t.Error("called on a closed storage"); return nil })
		require.ErrorContains(t, err, "not tried: its etcd client was closed at the stop")
		s.Destroy() // upstream's hook, while the close still runs
		assert.Less(t, time.Since(start), grace, "waited for the close")
		assert.False(t, s.Wait(time.Millisecond), "the close is still running")
		assert.True(t, s.Wait(10*grace))
		assert.Equal(t, 1, destroys)
	})
	t.Run("blocked for good", func(t *testing.T) {
		never := make(chan struct{})
		defer close(never) // let the goroutine go at the end, for goleak
		s := NewGuard(stoppedFence(), grace, func() {})
		start := time.Now()
		err := s.Call("removing the peer lease", func() error { <-never; return nil })
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the call is left to etcd's client")
		assert.Less(t, time.Since(start), 2*grace+time.Second)
		assert.True(t, s.Wait(time.Second))
	})
}
