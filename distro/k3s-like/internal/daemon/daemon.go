package daemon

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/heldlog"
	"github.com/kubeharness/kubeharness/scoping"
)

// Daemon runs a harness as a service: the run of `k3s-like server` and
// `k3s-like agent`. Only Prepare is required.
type Daemon struct {
	// Prepare returns the harness to run, under the daemon's context
	// (SIGINT and SIGTERM end it): an agent joins its server here. Its
	// AfterBarrier hooks run after the daemon's own, which releases the
	// log lines held until the barrier configured logging.
	Prepare func(ctx context.Context) (*harness.Harness, error)
	// Ready says how to use the process once every component is ready,
	// before systemd hears READY=1; elapsed counts from Started.
	Ready func(log logr.Logger, elapsed time.Duration)
	// AfterStop undoes what the run left on the host (the node's mounts),
	// once the harness returned, and only if its barrier passed: before
	// it, nothing was started or written.
	AfterStop func(ctx context.Context, log logr.Logger)
	// Explain turns the run's error into what to do about it.
	Explain func(error) error
	// Started is when the command began; zero is when Run was called.
	Started time.Time
}

// Run runs the harness until ctx ends, SIGINT or SIGTERM arrives, or a
// component fails. It tells systemd (Type=notify) READY=1 once every
// component is ready and STOPPING=1 when the stop begins. An error before
// the barrier passed is returned as it is, one plain line (logging is not
// configured); a failure after it is logged, and Run returns
// cli.ExitCode(1). A requested stop (ctx ended: a signal) whose only
// errors are components that failed while stopping (requestedStopOnly:
// the last server of an embedded etcd cluster, its datastore gone with
// the others) returns nil, the errors logged; one that abandoned a
// component (it overran its stop timeout) or panicked does not.
func (d Daemon) Run(ctx context.Context) error {
	started := d.Started
	if started.IsZero() {
		started = time.Now()
	}
	log := cli.Logger()
	systemd := takeNotifySocket()
	// STOPPING=1 is sent before Run returns: stop() ends ctx, and the
	// deferred wait (run after it) holds the return until it is sent, so
	// that an exit right after Run cannot drop it.
	notified := make(chan struct{})
	defer func() { <-notified }()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, func() {
		defer close(notified)
		if err := systemd.notify("STOPPING=1"); err != nil {
			log.Error(err, "Telling systemd the process stops")
		}
	})
	h, err := d.Prepare(ctx)
	if err != nil {
		return err
	}
	// The harness's lines from before the barrier wait for the format it
	// configures (package heldlog).
	var release func()
	h.Logger, release = heldlog.New()
	defer release()
	var passed atomic.Bool
	h.AfterBarrier = append([]harness.BarrierHook{func(*scoping.Plan) error {
		passed.Store(true)
		release()
		return nil
	}}, h.AfterBarrier...)
	readyCtx, readyDone := context.WithCancel(ctx)
	var announcing sync.WaitGroup
	announcing.Go(func() { d.announceReady(readyCtx, h, log, started, systemd) })
	err = h.Run(ctx)
	readyDone()
	announcing.Wait()
	if passed.Load() && d.AfterStop != nil {
		d.AfterStop(context.WithoutCancel(ctx), log)
	}
	if err != nil && passed.Load() && ctx.Err() != nil && requestedStopOnly(err) {
		log.Error(err, "Components failed while stopping; the stop was asked for and nothing was left running")
		log.Info("Stopped")
		return nil
	}
	if err != nil {
		if d.Explain != nil {
			err = d.Explain(err)
		}
		if !passed.Load() {
			release()
			return err // logging is not configured: one plain line, the last
		}
		log.Error(err, "Stopped")
		return cli.ExitCode(1)
	}
	log.Info("Stopped")
	return nil
}

// announceReady calls Ready once every component is ready, and tells
// systemd.
func (d Daemon) announceReady(ctx context.Context, h *harness.Harness, log logr.Logger, started time.Time, systemd notifier) {
	if h.WaitReady(ctx) != nil {
		return
	}
	if d.Ready != nil {
		d.Ready(log, time.Since(started))
	}
	if err := systemd.notify("READY=1"); err != nil {
		log.Error(err, "Telling systemd the process is ready")
	}
}

// requestedStopOnly reports whether every error of err (a harness's Run,
// errors joined) is a component that failed while the harness stopped
// (a *harness.ComponentError in phase stop) and left nothing behind: no
// *harness.DeadlineError (a component abandoned, its goroutines still
// running) and no *harness.PanicError.
func requestedStopOnly(err error) bool {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *harness.ComponentError
		if !errors.As(e, &ce) || ce.Phase != harness.PhaseStop {
			return false
		}
		var de *harness.DeadlineError
		var pe *harness.PanicError
		if errors.As(e, &de) || errors.As(e, &pe) {
			return false
		}
	}
	return len(errs) > 0
}
