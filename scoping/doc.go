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
//	err = plan.Apply()                                    // once: process gate, process "kube" version, every scope; then sealed
//
// A scope's gate is a deep copy of the process gate taken when the barrier
// was created, so one scope's settings never leak into another's. Parse
// records each kube feature the component set (the gate's ExplicitlySet), its
// kube emulated and min-compatibility versions, and -v, --vmodule and
// --logging-format, each with the flag text that set it.
//
// Reconcile merges the requests. Two components asking for the same value is
// fine; different values are a Conflict naming the setting, every component
// and its flag text. A component that did not set something accepts what the
// others set. Requests that are valid alone but not together (a feature locked
// or not yet available at the version another component emulates) are
// conflicts too. An emulated version more than one minor below the binary
// gives a warning in Plan.Warnings.
//
// Apply validates the plan on a copy of the process gate, applies logging
// settings (ProcessTarget uses logsapi, once per process), then sets the
// process gate, the process registry's "kube" effective version (the
// apiserver reads it for storage encoding) and every scope's gate and version
// to the same values, and seals the scopes. It is the only place this
// package writes process-wide state. Registry components a distro registers
// under its own name (not "kube") stay private to their scope.
package scoping
