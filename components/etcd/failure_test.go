package etcd

import (
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// etcd's Panic and Fatal entries name the data dir: a Panic (its start)
// becomes an error Run returns, a Fatal (at run time) is logged with the
// data dir before the exit etcd asks for.
func TestFailureHooks(t *testing.T) {
	const dir = "/data/etcd"
	var lines []string
	logger := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{})
	var exited atomic.Int32
	exited.Store(-1)
	zl, err := newZapLogger(logger, "warn", nil, failureHooks(dir, logger, func(code int) { exited.Store(int32(code)) })...)
	require.NoError(t, err)

	t.Run("panic", func(t *testing.T) {
		lines = nil
		var got any
		func() {
			defer func() { got = recover() }()
			zl.Panic("failed to create WAL", zap.String("path", dir+"/member/wal"), zap.Error(syscall.ENOSPC))
		}()
		f, ok := got.(*DataDirError)
		require.True(t, ok, "panicked with %#v", got)
		assert.EqualError(t, f, "embedded etcd: data dir /data/etcd: failed to create WAL: no space left on device")
		assert.ErrorIs(t, f, syscall.ENOSPC)
		require.Len(t, lines, 1, "etcd's own line, logged before the panic")
		assert.Contains(t, lines[0], `"msg"="failed to create WAL"`)
	})

	t.Run("panic without an error", func(t *testing.T) {
		var got any
		func() {
			defer func() { got = recover() }()
			zl.Sugar().Panicf("unsupported bootstrap config")
		}()
		assert.EqualError(t, got.(error), "embedded etcd: data dir /data/etcd: unsupported bootstrap config")
	})

	t.Run("fatal", func(t *testing.T) {
		lines = nil
		zl.Fatal("failed to save Raft hard state and entries", zap.Error(syscall.ENOSPC))
		assert.Equal(t, int32(1), exited.Load(), "exit status")
		require.Len(t, lines, 2, "etcd's line, then the data dir's")
		assert.Contains(t, lines[1], `"msg"="Exiting: embedded etcd cannot go on"`)
		assert.Contains(t, lines[1], `"error"="embedded etcd: data dir /data/etcd: failed to save Raft hard state and entries: no space left on device"`)
	})

	t.Run("catchFailure", func(t *testing.T) {
		err := errors.New("x")
		assert.Equal(t, err, catchFailure(func() error { return err }))
		got := catchFailure(func() error { panic(&DataDirError{DataDir: dir, Message: "m", Err: err}) })
		assert.EqualError(t, got, "embedded etcd: data dir /data/etcd: m: x")
		assert.PanicsWithValue(t, "other", func() { _ = catchFailure(func() error { panic("other") }) }, "any other panic goes on")
	})
}
