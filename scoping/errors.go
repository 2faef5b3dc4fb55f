package scoping

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSealed is returned by NewScope, Parse, Reconcile and Apply once the
// barrier applied its plan: process-wide state is applied once per barrier
// and final by then (a restart of one component goes through Rescope and
// Admit; a new control-plane start, through a new barrier).
var ErrSealed = errors.New("scoping: the barrier has already applied its plan; scopes are sealed")

// FlagError is bad input in one component's arguments: an unknown flag, a
// malformed value, an unknown feature or registry component, a version out
// of range. Component is the scope's name; Flag is the flag as the user wrote
// it ("--feature-gates") when it is known; Value is the text given to it.
type FlagError struct {
	Component string
	Flag      string
	Value     string
	Err       error
}

// Error reads like "kube-scheduler: --feature-gates=Foo=maybe: invalid value ...".
func (e *FlagError) Error() string {
	switch {
	case e.Flag == "":
		return fmt.Sprintf("%s: %v", e.Component, e.Err)
	case e.Value == "":
		return fmt.Sprintf("%s: %s: %v", e.Component, e.Flag, e.Err)
	default:
		return fmt.Sprintf("%s: %s=%s: %v", e.Component, e.Flag, e.Value, e.Err)
	}
}

// Unwrap returns the underlying error.
func (e *FlagError) Unwrap() error { return e.Err }

// ConflictKind says which process-wide setting a Conflict is about.
type ConflictKind int

const (
	// FeatureGateConflict: components asked for different values of one kube feature.
	FeatureGateConflict ConflictKind = iota
	// EmulatedVersionConflict: components asked for different kube emulated versions.
	EmulatedVersionConflict
	// MinCompatibilityVersionConflict: different kube min-compatibility versions,
	// or a min-compatibility version above the emulated version another component set.
	MinCompatibilityVersionConflict
	// LoggingConflict: different -v, --vmodule or --logging-format.
	LoggingConflict
	// CombinationConflict: each component's request is valid alone, but not
	// together (a feature one component enables is locked, pre-alpha or missing a
	// dependency at the version another component emulates).
	CombinationConflict
)

// String names the kind.
func (k ConflictKind) String() string {
	switch k {
	case FeatureGateConflict:
		return "FeatureGate"
	case EmulatedVersionConflict:
		return "EmulatedVersion"
	case MinCompatibilityVersionConflict:
		return "MinCompatibilityVersion"
	case LoggingConflict:
		return "Logging"
	case CombinationConflict:
		return "Combination"
	}
	return fmt.Sprintf("ConflictKind(%d)", int(k))
}

// Conflict is one process-wide setting that the components disagree on.
// Setting names it (`feature gate "Foo"`, "--emulated-version", "-v");
// Requests holds every component's request, sorted by component; Reason,
// when set, says why requests that are not simply different do not fit.
type Conflict struct {
	Kind     ConflictKind
	Setting  string
	Requests []Request
	Reason   string
}

// Error reads like `feature gate "Foo": kube-apiserver sets true
// (--feature-gates=Foo=true), kube-scheduler sets false (--feature-gates=Foo=false)`.
func (c *Conflict) Error() string {
	parts := make([]string, len(c.Requests))
	for i, r := range c.Requests {
		parts[i] = r.String()
	}
	s := c.Setting + ": " + strings.Join(parts, ", ")
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// Components lists the components involved, in order.
func (c *Conflict) Components() []string {
	out := make([]string, len(c.Requests))
	for i, r := range c.Requests {
		out[i] = r.Component
	}
	return out
}

// ConflictError is every conflict the barrier found, reported at once.
// errors.As matches it and, through Unwrap, each *Conflict.
type ConflictError struct {
	Conflicts []*Conflict
}

// Error lists every conflict on its own line.
func (e *ConflictError) Error() string {
	var b strings.Builder
	if len(e.Conflicts) == 1 {
		b.WriteString("components conflict on 1 process-wide setting:")
	} else {
		fmt.Fprintf(&b, "components conflict on %d process-wide settings:", len(e.Conflicts))
	}
	for _, c := range e.Conflicts {
		b.WriteString("\n  ")
		b.WriteString(c.Error())
	}
	return b.String()
}

// Unwrap returns each conflict, for errors.As and errors.Is.
func (e *ConflictError) Unwrap() []error {
	out := make([]error, len(e.Conflicts))
	for i, c := range e.Conflicts {
		out[i] = c
	}
	return out
}

// LoggingError is the barrier failing to apply the reconciled logging
// settings. Logging is process-wide and applied once per process: a later
// start may repeat the settings an earlier one applied (a no-op) but not
// change them. Settings holds who asked for which flag (empty: the defaults).
type LoggingError struct {
	Settings map[string][]Request
	Err      error
}

// Error reads like "scoping: applying logging settings --v=3 (kube-scheduler):
// logging was applied earlier in this process with other settings; ...".
func (e *LoggingError) Error() string {
	var asked []string
	for _, name := range loggingFlags {
		for _, r := range e.Settings[name] {
			asked = append(asked, r.Flag+" ("+r.Component+")")
		}
	}
	what := "the defaults (no component sets -v, --vmodule or --logging-format)"
	if len(asked) > 0 {
		what = strings.Join(asked, ", ")
	}
	return fmt.Sprintf("scoping: applying logging settings %s: %v", what, e.Err)
}

// Unwrap returns the cause.
func (e *LoggingError) Unwrap() error { return e.Err }
