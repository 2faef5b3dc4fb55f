package harness

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrExited is the cause when a component's Run returned nil before the
// harness asked it to stop: a control plane whose apiserver quietly went
// away is not running.
var ErrExited = errors.New("Run returned before the harness asked the component to stop")

// ComponentError says which component failed in which phase. Run returns it
// (joined with any others) and errors.As extracts it. A Run that returned
// an error once the harness was stopping it, or waiting to (its dependents
// stop first), is in PhaseStop, as is a stop that overran; one that
// returned before is in PhaseStart or PhaseRun, even if the stop began
// meanwhile (a caller that asked for the stop tells the two apart by it).
type ComponentError struct {
	Component string
	Phase     Phase
	Err       error
}

// Error reads like "kube-scheduler failed in phase start: ...".
func (e *ComponentError) Error() string {
	return fmt.Sprintf("%s failed in phase %s: %v", e.Component, e.Phase, e.Err)
}

// Unwrap returns the cause.
func (e *ComponentError) Unwrap() error { return e.Err }

// PhaseError is a failure of the harness itself in a phase, not of one
// component: a dependency cycle, conflicts at the barrier.
type PhaseError struct {
	Phase Phase
	Err   error
}

// Error reads like "harness phase barrier: ...".
func (e *PhaseError) Error() string { return fmt.Sprintf("harness phase %s: %v", e.Phase, e.Err) }

// Unwrap returns the cause.
func (e *PhaseError) Unwrap() error { return e.Err }

// PanicError is a panic recovered in a component's goroutine, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

// Error gives the panic value and the stack of the panicking goroutine.
func (e *PanicError) Error() string {
	return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack)
}

// DeadlineError is a component that did not become ready, or did not stop,
// within its deadline. What names the call that overran: "Ready" (bounded
// by ReadyTimeout), "Stop" (bounded by half of StopTimeout) or "Run" (not
// returned within StopTimeout of the stop's start). Abandoned says the
// goroutine making that call had still not returned (AbandonGrace after its
// context ended) and was left behind: Run, Ready or Stop ignored its context.
type DeadlineError struct {
	Component string
	What      string
	Timeout   time.Duration
	Abandoned bool
}

// Error reads like "Stop did not return within 2.5s; its goroutine was
// abandoned" or "not ready within 10s"; the *ComponentError wrapping it
// names the component.
func (e *DeadlineError) Error() string {
	switch {
	case e.What == "Ready" && !e.Abandoned:
		return fmt.Sprintf("not ready within %s", e.Timeout)
	case e.What == "Ready":
		return fmt.Sprintf("not ready within %s, and Ready ignored its context; its goroutine was abandoned", e.Timeout)
	case e.What == "Run":
		return fmt.Sprintf("Run did not return within %s of the stop; its goroutines were abandoned", e.Timeout)
	}
	return fmt.Sprintf("%s did not return within %s; its goroutine was abandoned", e.What, e.Timeout)
}

// DependencyError is a dependency declared on a name no component has, or
// a dependency cycle (Cycle lists it, first name repeated at the end).
type DependencyError struct {
	Component  string
	Dependency string
	Cycle      []string
}

// Error names the component and the dependency, or the cycle.
func (e *DependencyError) Error() string {
	if len(e.Cycle) > 0 {
		return "dependency cycle: " + strings.Join(e.Cycle, " → ")
	}
	return fmt.Sprintf("%s depends on %q, which is not a component of this harness", e.Component, e.Dependency)
}

// ErrNotRenewer and ErrStartsOnce are why a *RestartError refused a
// restart (errors.Is finds them).
var (
	ErrNotRenewer = errors.New("does not implement harness.Renewer")
	ErrStartsOnce = errors.New("starts once per process")
)

// RestartError is a restart refused before anything stopped — Restart's, or
// the one Harness.Recover would have made: Blocker, the component to
// restart or one of its dependents, cannot start a new instance. Err is
// ErrNotRenewer or ErrStartsOnce; Reason is the component's own word for a
// Once.
type RestartError struct {
	Component string
	Blocker   string
	Err       error
	Reason    string
}

// Error reads like "harness: cannot restart kube-apiserver: its dependent
// kubelet starts once per process: informers on wait.NeverStop" or
// "harness: cannot restart x: it does not implement harness.Renewer".
func (e *RestartError) Error() string {
	who := "it"
	if e.Blocker != e.Component {
		who = "its dependent " + e.Blocker
	}
	msg := fmt.Sprintf("harness: cannot restart %s: %s %v", e.Component, who, e.Err)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Unwrap returns Err.
func (e *RestartError) Unwrap() error { return e.Err }

// RecoveryError is a component that Harness.Recover was restarting and
// whose new instance failed before it was ready with a failure Recover did
// not keep (or could not be made): Cause is the failure Recover kept, Err
// the new one. errors.Is and errors.As find either.
type RecoveryError struct {
	Cause *ComponentError
	Err   error
}

// Error reads like "kube-scheduler failed in phase run: lost the lease;
// restarting it failed: kube-scheduler failed in phase start: not ready
// within 2m0s".
func (e *RecoveryError) Error() string {
	return fmt.Sprintf("%v; restarting it failed: %v", e.Cause, e.Err)
}

// Unwrap returns Cause and Err.
func (e *RecoveryError) Unwrap() []error { return []error{e.Cause, e.Err} }

// IntensityError is a component whose failures came faster than
// Harness.RecoverPolicy allows: Failures of them, every one kept by
// Recover, within Period. The last one was not restarted again; it stopped
// the harness. Err is that failure (errors.Is and errors.As find it).
type IntensityError struct {
	Component string
	Failures  int
	Period    time.Duration
	Err       error
}

// Error reads like "kube-scheduler failed 6 times within 1m0s; not
// restarted again (Harness.RecoverPolicy): kube-scheduler failed in phase
// run: lost the lease".
func (e *IntensityError) Error() string {
	return fmt.Sprintf("%s failed %d times within %s; not restarted again (Harness.RecoverPolicy): %v", e.Component, e.Failures, e.Period, e.Err)
}

// Unwrap returns Err.
func (e *IntensityError) Unwrap() error { return e.Err }
