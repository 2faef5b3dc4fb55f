package daemon

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// systemdSocket listens as systemd's notify socket does and sets
// $NOTIFY_SOCKET to it; the states arrive on the channel.
func systemdSocket(t *testing.T) <-chan string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	t.Setenv("NOTIFY_SOCKET", path)
	states := make(chan string, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 256)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			states <- strings.TrimSpace(string(buf[:n]))
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return states
}

// component is a harness component that runs until stopped, or fails
// with fail once ready; args are its arguments (--feature-gates=Foo=…).
func newHarness(t *testing.T, fail error, args ...[]string) *harness.Harness {
	t.Helper()
	target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	require.NoError(t, err)
	h := &harness.Harness{Target: &target, StopTimeout: 5 * time.Second}
	for i, a := range args {
		name := []string{"one", "two"}[i]
		require.NoError(t, h.Add(&harness.Func{
			ComponentName: name,
			FlagsFunc:     func(s *scoping.Scope) error { s.AddFlags(); return nil },
			RunFunc: func(ctx context.Context) error {
				if fail != nil {
					return fail
				}
				<-ctx.Done()
				return nil
			},
		}, a))
	}
	return h
}

func expectState(t *testing.T, states <-chan string, want string) {
	t.Helper()
	select {
	case got := <-states:
		assert.Equal(t, want, got)
	case <-time.After(10 * time.Second):
		t.Fatalf("systemd heard no %s", want)
	}
}

// TestNotifiesSystemd: the daemon takes $NOTIFY_SOCKET from the process
// (the components' early READY=1 find none), tells systemd READY=1 once
// every component is ready, after Ready, and STOPPING=1 when it stops;
// the barrier passed, so AfterStop runs once the harness returned, and Run
// returns nil.
func TestNotifiesSystemd(t *testing.T) {
	states := systemdSocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ready, afterStop atomic.Int32
	d := Daemon{
		Prepare: func(context.Context) (*harness.Harness, error) {
			assert.Empty(t, os.Getenv("NOTIFY_SOCKET"), "taken before anything starts")
			return newHarness(t, nil, []string{"--feature-gates=Foo=true"}), nil
		},
		Ready:     func(logr.Logger, time.Duration) { ready.Add(1) },
		AfterStop: func(context.Context, logr.Logger) { afterStop.Add(1) },
	}
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx) }()
	expectState(t, states, "READY=1")
	assert.Equal(t, int32(1), ready.Load(), "Ready before READY=1")
	assert.Zero(t, afterStop.Load())
	cancel()
	expectState(t, states, "STOPPING=1")
	require.NoError(t, <-errc)
	assert.Equal(t, int32(1), afterStop.Load(), "AfterStop once the harness returned")
}

// TestNoAfterStopWhenTheBarrierFails: a conflict at the barrier starts
// nothing, so there is nothing to undo: AfterStop is not called, systemd
// hears no READY=1, and Run returns the conflict itself (one plain line,
// not an exit status after a logged error).
func TestNoAfterStopWhenTheBarrierFails(t *testing.T) {
	states := systemdSocket(t)
	var afterStop atomic.Int32
	err := Daemon{
		Prepare: func(context.Context) (*harness.Harness, error) {
			return newHarness(t, nil, []string{"--feature-gates=Foo=true"}, []string{"--feature-gates=Foo=false"}), nil
		},
		AfterStop: func(context.Context, logr.Logger) { afterStop.Add(1) },
	}.Run(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `feature gate "Foo"`)
	assert.False(t, errors.As(err, new(cli.ExitCode)), "the error itself: %v", err)
	assert.Zero(t, afterStop.Load(), "no AfterStop after a barrier that failed")
	expectState(t, states, "STOPPING=1")
	select {
	case s := <-states:
		t.Errorf("systemd heard %s after STOPPING=1", s)
	default:
	}
}

// TestAfterStopAfterAFailure: a component that fails once the barrier
// passed stops the run: AfterStop runs, and Run returns exit status 1
// (the error is logged).
func TestAfterStopAfterAFailure(t *testing.T) {
	var afterStop atomic.Int32
	err := Daemon{
		Prepare: func(context.Context) (*harness.Harness, error) {
			return newHarness(t, errors.New("broken"), nil), nil
		},
		AfterStop: func(context.Context, logr.Logger) { afterStop.Add(1) },
		Explain:   func(err error) error { return err },
	}.Run(context.Background())
	assert.Equal(t, cli.ExitCode(1), err)
	assert.Equal(t, int32(1), afterStop.Load())
}

// TestPrepareFails: an error of Prepare (an agent that cannot join) is
// Run's, and nothing runs.
func TestPrepareFails(t *testing.T) {
	var afterStop atomic.Int32
	err := Daemon{
		Prepare:   func(context.Context) (*harness.Harness, error) { return nil, errors.New("joining: no server") },
		AfterStop: func(context.Context, logr.Logger) { afterStop.Add(1) },
	}.Run(context.Background())
	assert.EqualError(t, err, "joining: no server")
	assert.Zero(t, afterStop.Load())
}

// runFuncHarness is a harness of one component, "one", whose Run is run.
func runFuncHarness(t *testing.T, stopTimeout time.Duration, run func(ctx context.Context) error) *harness.Harness {
	t.Helper()
	target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	require.NoError(t, err)
	h := &harness.Harness{Target: &target, StopTimeout: stopTimeout}
	require.NoError(t, h.Add(&harness.Func{
		ComponentName: "one",
		FlagsFunc:     func(s *scoping.Scope) error { s.AddFlags(); return nil },
		RunFunc:       run,
	}, nil))
	return h
}

// runUntilReady runs d, ends its context once every component is ready
// (the stop an operator asks for with SIGTERM), and returns Run's result.
func runUntilReady(t *testing.T, d Daemon) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	d.Ready = func(logr.Logger, time.Duration) { close(ready) }
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx) }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("Run returned before every component was ready: %v", err)
	}
	cancel()
	return <-errc
}

// TestRequestedStopExitStatus: the exit status of a stop that was asked
// for. A component that fails while stopping (its datastore lost its
// quorum as the other servers stopped: "etcdserver: no leader") does not
// make it fail: Run returns nil. One that fails before the stop was asked
// for does (exit status 1), and so does one that overran its stop
// timeout and was abandoned, and one that panicked while stopping.
func TestRequestedStopExitStatus(t *testing.T) {
	noLeader := errors.New("etcdserver: no leader")
	t.Run("a component fails while stopping", func(t *testing.T) {
		err := runUntilReady(t, Daemon{Prepare: func(context.Context) (*harness.Harness, error) {
			return runFuncHarness(t, 5*time.Second, func(ctx context.Context) error {
				<-ctx.Done()
				return noLeader
			}), nil
		}})
		assert.NoError(t, err)
	})
	t.Run("a component failed before the stop", func(t *testing.T) {
		failed := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			errc <- Daemon{Prepare: func(context.Context) (*harness.Harness, error) {
				return runFuncHarness(t, 5*time.Second, func(context.Context) error {
					defer close(failed)
					return noLeader
				}), nil
			}}.Run(ctx)
		}()
		<-failed
		cancel() // the stop is asked for after the failure
		assert.Equal(t, cli.ExitCode(1), <-errc)
	})
	t.Run("a component abandoned at its stop timeout", func(t *testing.T) {
		release := make(chan struct{})
		returned := make(chan struct{})
		err := runUntilReady(t, Daemon{Prepare: func(context.Context) (*harness.Harness, error) {
			return runFuncHarness(t, 200*time.Millisecond, func(ctx context.Context) error {
				defer close(returned)
				<-ctx.Done()
				<-release // ignores its stop
				return noLeader
			}), nil
		}})
		assert.Equal(t, cli.ExitCode(1), err)
		close(release)
		<-returned
	})
	t.Run("a component panics while stopping", func(t *testing.T) {
		err := runUntilReady(t, Daemon{Prepare: func(context.Context) (*harness.Harness, error) {
			return runFuncHarness(t, 5*time.Second, func(ctx context.Context) error {
				<-ctx.Done()
				panic("stopping")
			}), nil
		}})
		assert.Equal(t, cli.ExitCode(1), err)
	})
}

// TestRequestedStopOnly: only failures in phase stop that abandoned
// nothing are a requested stop's.
func TestRequestedStopOnly(t *testing.T) {
	stop := &harness.ComponentError{Component: "etcd", Phase: harness.PhaseStop, Err: errors.New("no leader")}
	run := &harness.ComponentError{Component: "etcd", Phase: harness.PhaseRun, Err: errors.New("no leader")}
	abandoned := &harness.ComponentError{Component: "kube-apiserver", Phase: harness.PhaseStop, Err: &harness.DeadlineError{Component: "kube-apiserver", What: "Run", Timeout: 8 * time.Second, Abandoned: true}}
	assert.True(t, requestedStopOnly(stop))
	assert.True(t, requestedStopOnly(errors.Join(stop, stop)))
	assert.False(t, requestedStopOnly(errors.Join(stop, run)), "a failure before the stop")
	assert.False(t, requestedStopOnly(errors.Join(stop, abandoned)), "a component abandoned")
	assert.False(t, requestedStopOnly(&harness.PhaseError{Phase: harness.PhaseStop, Err: errors.New("x")}), "not a component's")
	assert.False(t, requestedStopOnly(&harness.RecoveryError{Cause: run, Err: stop}), "a recovery that failed")
}
