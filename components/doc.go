// Package components adapts the real kube-apiserver, kube-scheduler and
// kube-controller-manager of k8s.io/kubernetes (v1.37.2) to harness
// components, so that one process can run all three:
//
//	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(components.NewScheduler(), schedulerArgs, components.APIServerName)
//	h.Add(components.NewControllerManager(), kcmArgs, components.APIServerName)
//	err := h.Run(ctx) // parse, barrier, start in order with readiness, stop in reverse
//
// # The flow
//
// Each adapter takes exactly the flags of its upstream binary, parsed into
// its own scope (package scoping): its own pflag.FlagSet and its own
// ComponentGlobalsRegistry, injected into the upstream options before their
// flags are created. AddFlags only creates options and adds flags; nothing
// runs, listens or touches process-wide state before the barrier, so an
// unknown flag, a bad value or a conflicting feature gate in any component
// fails the harness in its parse or barrier phase, naming the component,
// before any port is opened. AfterBarrier then sets, once, the
// process-wide state the upstream commands would each set. Run builds the
// component the way upstream's own test servers do, never through
// NewXCommand (the commands install signal handlers, apply logging, and
// exit the process), and serves until its context ends.
//
// # The adapters
//
//   - APIServer: kube-apiserver, from options.NewServerRunOptions to the
//     server chain's Run; ready once its /readyz answered 200 over loopback.
//   - Scheduler: kube-scheduler, app.Setup and app.Run; out-of-tree
//     plugins as upstream's app.Option values.
//   - ControllerManager: kube-controller-manager, options.Config and
//     app.Run; its client configuration from --kubeconfig or, in memory,
//     WithRESTConfig (the scheduler cannot take one: see Scheduler).
//
// The three share one lifecycle (lifecycle.go): a value runs once, takes
// its process-wide informer name and fences its clients the same way,
// reports readiness once (a standby counts as ready; Ready does not watch
// Run, the harness does), and — the scheduler and the controller-manager —
// runs upstream's Run only while it holds its lease, taken the same way for
// both (LeaderElection, ErrLeaseLost, RecoverLostLease). Each keeps only its
// upstream wiring. Renew makes the next instance for harness.Restart and
// Harness.Recover. Upstream messages the adapters recognise by text are
// pinned in upstream_strings.go. The component names are in package names.
//
// Each adapter logs through the logger in its Run's context
// (klog.FromContext), with a "component" value; upstream code below it does
// the same where it is contextual. Harness.Logger, when set, is that
// logger; otherwise the caller's context of Harness.Run decides, and klog's
// global logger is the fallback.
//
// # Inside
//
//   - internal/fence: the Fence, which bounds a component's API requests
//     (and the requests kube-apiserver serves) once it was asked to stop.
//   - internal/guard: the Guard, which bounds kube-apiserver's
//     reconcilers' etcd calls at the stop.
//   - internal/election: the Elector, which runs work while it holds its
//     lease and never exits the process.
//   - internal/probe: the Probe of a component's own secure port (/healthz),
//     pinned to its serving certificate.
//
// # Process-wide state and faults
//
// A process runs one control plane at a time and can start it again after
// it stopped, with other flags and other feature gates
// (TestThreeStartsInOneProcess). What upstream shares in one process —
// feature gates and versions, logging, configz, metrics, client-go's
// warning handler, signals, process exit, informer names, capabilities,
// version, the flags not added — what each start leaves behind and what the
// adapters undo, and what waits when the datastore is gone at a stop or a
// lost lease, with what the adapters do about it and what was measured, is
// in docs/components.md at the repository root:
// https://github.com/kubeharness/kubeharness/blob/main/docs/components.md
//
// Related packages: etcd (the embedded datastore), controlplane (default
// flags and wiring of the three with etcd), featurepub (the feature
// publisher), pki (certificates), kubeargs (k3s-style argument merging),
// testenv (test helpers).
package components
