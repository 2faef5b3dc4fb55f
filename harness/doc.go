// Package harness runs the components of a single-binary control plane as
// goroutines of one process, in order, and stops them cleanly.
//
// A Harness is ready to use as its zero value. Add each component with its
// arguments (exactly what its upstream binary would take) and the names of
// the components it depends on, then call Run:
//
//	var h harness.Harness
//	h.Add(apiserver, apiserverArgs)
//	h.Add(scheduler, schedulerArgs, "kube-apiserver")
//	h.Add(controllerManager, kcmArgs, "kube-apiserver")
//	err := h.Run(ctx) // returns when ctx is cancelled or a component fails
//
// Run first goes through three phases, as data (see Phase): validate (names
// unique, dependencies known, no cycle), parse (a scoping.Scope per
// component; each adds its flags and parses its arguments, all
// concurrently) and barrier (scoping reconciles every scope, every
// conflict reported at once, applies the result once to the process, then
// the AfterBarrier hooks run). If any fails, no component's Run is called.
//
// Then every component gets a supervisor: one goroutine for the whole run,
// after OTP's rest_for_one. It loops:
//
//   - start: once every dependency is ready (an EarlyStarter: up), the
//     current instance's Run is called in a goroutine of its own (an
//     EarlyStarter's Run waits for the rest with AwaitDependencies) and its
//     Ready, once every dependency is ready, is awaited (ReadyTimeout);
//   - watch: until its Run returns, the run stops, or it or a dependency is
//     to be replaced;
//   - retire: it waits until every dependent's instance is down, then stops
//     its own (Stopper.Stop with half of StopTimeout, then its context is
//     cancelled, and Run must return by StopTimeout);
//   - then start the next instance (Restart's, or Recover's after its
//     backoff), or return.
//
// Run is in PhaseStart until every component was ready once, then in
// PhaseRun until ctx ends or a component fails — an error or panic in Run,
// a Run that returns early, a Ready that fails or times out — and then in
// PhaseStop, where every supervisor retires its instance after its
// dependents'. With Harness.Recover, a Run failure it keeps restarts that
// component and its dependents instead: the component is Recovering (alive,
// not ready) until its new instance is ready. Harness.RecoverPolicy bounds
// those restarts, after OTP's restart intensity: a component failing more
// than Intensity times within Period is not restarted again (an
// *IntensityError), and a restart after a repeated failure first waits a
// backoff, which a stop does not wait for. Restart restarts the same way
// on request, uncounted, with new arguments, after admitting them against
// the running plan. A component that upstream cannot start twice in one
// process is a Once: neither restarts it, and a stop it cannot honour is
// bounded and reported, not waited for. A Ready, Stop or Run that overruns
// its bound is named in a *DeadlineError and its goroutine abandoned after
// AbandonGrace; the harness never hangs.
//
// Run returns nil when ctx was cancelled and everything stopped; otherwise
// every failure, first one first (errors.As finds *ComponentError,
// *PhaseError, *PanicError, *DeadlineError, *RestartError, *RecoveryError,
// *IntensityError). It returns only after every goroutine it started
// returned, except those it names as abandoned.
//
// Each component's code runs under the pprof label component=<its name>
// (ProfileLabel): its AddFlags, parse, Run, Ready and Stop, and every
// goroutine they start. The harness's goroutines carry none; heap profiles
// carry no labels at all (a Go limitation).
//
// Status and Handler report each component's State, the phase timings and
// the feature plan: /components, /features, /livez, /readyz and /healthz
// (k8s.io/apiserver's healthz, a check per component) and /metrics. Flags
// gives each component's effective flags, secrets redacted. The library
// never installs signal handlers and never exits the process: signals
// belong to the binary.
package harness
