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
// Run goes through its phases in order, as data (see Phase):
//
//   - validate: names are unique, every dependency exists, no cycle.
//   - parse: a scoping.Scope per component; each adds its flags and parses
//     its arguments, all concurrently.
//   - barrier: scoping reconciles every scope — every conflict reported at
//     once — and applies the result once to the process-wide gate and
//     registry; then the AfterBarrier hooks run, in order. If a parse fails
//     or the barrier finds conflicts, no component's Run is ever called.
//   - start: each component waits until its dependencies are ready, then its
//     Run is called in a goroutine of its own and its Ready (if it is a
//     Readier) is awaited, bounded by ReadyTimeout. An EarlyStarter's Run is
//     called as soon as the dependencies it names were started (their
//     start-ups overlap); its Ready still waits for them to be ready.
//   - run: wait for ctx to end or the first failure: an error or panic in a
//     Run, a Run that returns early, a Ready that fails or times out. With
//     Harness.Recover, a Run failure it keeps restarts that component (and
//     its dependents) instead, once every component started — also a
//     failure before the component was ready, unless a dependent was
//     launched early against it.
//   - stop: in reverse dependency order — a component once every component
//     depending on it has stopped, so components that do not depend on each
//     other stop concurrently — each started component gets Stop (if
//     it is a Stopper) with half of StopTimeout, then its context is
//     cancelled (at the latest when Stop's half ends), and the harness waits
//     for its Run to return until StopTimeout. A Ready, Stop or Run that
//     overruns is named in a *DeadlineError and its goroutine abandoned
//     after AbandonGrace; the harness never hangs.
//
// Run returns nil when ctx was cancelled and everything stopped; otherwise
// every failure, first one first, as *ComponentError (component and phase) or
// *PhaseError, matchable with errors.As. A panic is a *PanicError carrying the
// stack. Run returns only after every goroutine it started has returned,
// except those of a component that overran its stop deadline.
//
// Each component's code runs under the pprof label component=<its name>
// (ProfileLabel), set with runtime/pprof.Do: its Run, Ready and Stop — a
// restarted instance's too — and its AddFlags and parse in the parse phase.
// Every goroutine started from them, directly or not, keeps the label for
// life. A CPU profile of the process (net/http/pprof's
// /debug/pprof/profile, say) then splits by component (go tool pprof -tags,
// or -tagfocus=component=kube-scheduler), and a goroutine profile counts
// each component's goroutines. The harness's own goroutines and the
// AfterBarrier hooks carry no component label; nor does work a component
// hands to a goroutine that was started outside its code (a process-wide
// pool, a package's init), which shows up unlabelled. Heap profiles carry
// no labels at all (a Go limitation).
//
// While Run is in PhaseRun, Restart stops one component (and whatever
// depends on it) and starts a new instance with new arguments, the others
// running on; a restart that would change a process-wide setting is refused
// with a *scoping.ConflictError before anything stops.
//
// Status and Handler report each component's State, the phase timings and
// the feature plan the barrier made: /components and /features; /livez,
// /readyz and /healthz with a check per component, as kube-apiserver serves
// them (k8s.io/apiserver's healthz: /readyz/NAME, ?verbose, ?exclude=NAME);
// and /metrics, the kubeharness_* metrics in Prometheus text format from a
// registry of the handler's own. Flags gives each component's effective
// flags, secret values redacted, for a binary's /flagz. The library never
// installs signal handlers and never exits the process: signals belong to
// the binary.
package harness
