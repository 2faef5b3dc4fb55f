// Package scoping gives each component of a single-binary control plane its
// own flags and compatibility globals, and reconciles them once, at a
// barrier, before anything runs.
//
// Upstream, kube-apiserver, kube-scheduler and kube-controller-manager all
// bind --feature-gates, --emulated-version and --min-compatibility-version to
// one process-wide ComponentGlobalsRegistry and one feature gate. Built into
// one process, they overwrite or merge each other's settings, race on the
// registry's flag map, and nobody is told (k3s#11853). This package makes
// that impossible:
//
//	b, _ := scoping.NewBarrier(scoping.ProcessTarget()) // pristine copy of the process gate
//	s, _ := b.NewScope("kube-scheduler")                  // own FlagSet, registry, gate copy, effective version
//	opts.AddFlags(s.FlagSet())                            // the component's upstream flags, bound to s.Registry()
//	err := s.Parse(args)                                  // parse + scoped Set(); records what was asked, with flag text
//	...                                                   // one scope per component; parse them concurrently
//	plan, err := b.Reconcile()                            // *ConflictError with every conflict, or the plan
//	err = b.Apply(plan)                                   // once: process gate, process "kube" version, every scope; then sealed
//
// A scope's gate is a deep copy of the process gate at its defaults, taken
// when the barrier was created: every explicit value reset, the versions at
// the binary's defaults. So one scope's settings never leak into another's,
// and a second control-plane start in the same process is computed from the
// defaults, not from what the first applied. Parse records each kube feature
// the component set by flag (the gate's ExplicitlySet), its kube emulated and
// min-compatibility versions, and -v, --vmodule and --logging-format, each
// with the flag text that set it.
//
// Reconcile merges the requests in steps. What a component's own code
// changed in its scope's gate (a value it set, a default it overrode) is a
// request too, with Source "code". AllAlpha and AllBeta stand for every
// alpha (beta) feature at the reconciled version that the component did not
// set itself. Two components asking for the same value is fine; different
// values are a Conflict naming the setting, every component and its flag
// text. A component that did not set something accepts what the others set.
// Requests that are valid alone but not together (a feature locked or not
// yet available at the version another component emulates, a dependency
// another component disables) are conflicts too. An emulated version more
// than one minor below the binary gives a warning in Plan.Warnings.
//
// Apply validates the plan on a copy of the process gate, applies logging
// settings (ProcessTarget uses logsapi: applied once per process, a later
// start may repeat them but not change them), then resets the process gate
// to its defaults and sets it, the process registry's "kube" effective
// version (the apiserver reads it for storage encoding) and every scope's
// gate and version to the same values, and seals the scopes. After Apply,
// every view answers the same for every kube feature. It is the only place
// this package writes process-wide state. Registry components a distro
// registers under its own name (not "kube") stay private to their scope.
//
// To start one component again while the others run (harness.Restart),
// Rescope gives it a new scope from the same defaults; Admit reconciles it
// against the plan in force: a process-wide setting it would change is a
// conflict, component-local flags are free.
package scoping
