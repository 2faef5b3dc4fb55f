package harness

import (
	"context"

	"github.com/kubeharness/kubeharness/scoping"
)

// Component is one thing the harness runs as goroutines of the process:
// kube-apiserver, kube-scheduler, a distro's own controller.
type Component interface {
	// Name is unique in a harness; errors, logs and status use it.
	Name() string
	// AddFlags adds the component's flags to its scope's FlagSet, with any
	// upstream options bound to s.Registry(). It is called once, before Parse.
	AddFlags(s *scoping.Scope) error
	// Run blocks until ctx is cancelled (return nil) or the component fails
	// (return the error). It is called only after the barrier applied and
	// every dependency reported ready (for an EarlyStarter, the ones it
	// starts early: were started).
	Run(ctx context.Context) error
}

// EarlyStarter is implemented by components whose Run tolerates some
// dependencies being started but not ready yet — it waits for them or
// retries, as the upstream binaries do when a supervisor starts them all at
// once (kube-apiserver while etcd elects itself a leader). For such a
// dependency the harness calls Run as soon as the dependency's Run was
// called, so that their start-ups overlap; Ready is still called only once
// every dependency is ready (ReadyTimeout counts from then), and the stop
// order does not change. A restart or recovery of such a dependency
// retires the early-started component first, as any dependent.
// StartsEarly is called once per dependency (its name) and instance, when
// the instance is to start.
type EarlyStarter interface {
	StartsEarly(dependency string) bool
}

// dependenciesKey is the key of the wait AwaitDependencies calls in the
// context the harness gives Run.
type dependenciesKey struct{}

// AwaitDependencies blocks until every dependency of the component whose
// Run was given ctx (or a context made from it) is ready, and returns nil;
// or until ctx ends (its cause). For an EarlyStarter's Run: do the work
// that needs no dependency first, then wait here before what does. Outside
// a harness — ctx not from a Run — it returns nil at once.
func AwaitDependencies(ctx context.Context) error {
	wait, ok := ctx.Value(dependenciesKey{}).(func(context.Context) error)
	if !ok {
		return nil
	}
	return wait(ctx)
}

// Readier is implemented by components that are not ready as soon as Run is
// called. A component that is not a Readier counts as ready as soon as the
// goroutine calling its Run is started. Ready blocks until the component is ready (nil) or ctx ends (an
// error); the harness bounds it with ReadyTimeout, and ends ctx when the
// component's Run returned. Dependents start only after it returned nil.
type Readier interface {
	Ready(ctx context.Context) error
}

// Completer is implemented by components whose flags name more settings
// than they hold: a configuration file (the kubelet's --config and
// --config-dir). Complete is called once the component's arguments were
// parsed into s, before the barrier, in the parse phase; what it sets with
// s.SetFeatures is reconciled with the other components' requests. It must
// not start anything or touch process-wide state; an error fails the parse
// phase, naming the component.
type Completer interface {
	Complete(s *scoping.Scope) error
}

// Stopper is implemented by components that need more than the cancellation
// of Run's context to stop (an http.Server's Shutdown, say). The harness
// calls Stop with a context that carries the stop deadline, then cancels Run's
// context, and waits for Run to return until the deadline.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Func adapts functions to a Component, for the simple case. Only RunFunc is
// required. Func is not a Renewer: its functions may hold the state of one
// run, so Harness.Restart cannot start it again.
type Func struct {
	ComponentName string
	// FlagsFunc adds flags to the scope; nil adds none.
	FlagsFunc func(s *scoping.Scope) error
	// RunFunc is Component.Run.
	RunFunc func(ctx context.Context) error
	// ReadyFunc is Readier.Ready; nil means ready as soon as RunFunc's
	// goroutine is started (RunFunc may not have begun to execute yet).
	ReadyFunc func(ctx context.Context) error
}

// Name returns ComponentName.
func (f *Func) Name() string { return f.ComponentName }

// AddFlags calls FlagsFunc, if set.
func (f *Func) AddFlags(s *scoping.Scope) error {
	if f.FlagsFunc == nil {
		return nil
	}
	return f.FlagsFunc(s)
}

// Run calls RunFunc.
func (f *Func) Run(ctx context.Context) error { return f.RunFunc(ctx) }

// Ready calls ReadyFunc, if set.
func (f *Func) Ready(ctx context.Context) error {
	if f.ReadyFunc == nil {
		return nil
	}
	return f.ReadyFunc(ctx)
}

// Renewer is implemented by components that Harness.Restart can start
// again. A component value runs once; Renew returns a new, unstarted value
// of the same component — the same name and construction options, none of
// the run state — for the restart to add flags to, parse and run. It is
// called while the old value still runs and must not touch it.
type Renewer interface {
	Renew() Component
}

// Once is implemented by components that upstream cannot start a second
// time in one process, nor stop completely (the kubelet and kube-proxy run
// informers on wait.NeverStop and servers that ignore their context; a
// second start binds a taken port and exits the process). StartsOnce says
// why, in a few words. Restart, and Harness.Recover, refuse to restart
// such a component or a component it depends on with a *RestartError
// (ErrStartsOnce); its stop is what the harness can do within StopTimeout
// (Stop, then cancelling Run's context), and a Run that outlives it is left
// running, named in ComponentStatus.Abandoned rather than failing Run. The
// package providing such a component lists the goroutines it leaves behind
// for its users' goleak options; the harness ignores none.
type Once interface {
	StartsOnce() (why string)
}
