package harness

import "fmt"

// State is where a component is in its lifecycle.
type State int

const (
	// Pending: added, nothing done yet.
	Pending State = iota
	// Parsing: its flags are being added and parsed in its scope.
	Parsing
	// Parsed: its arguments parsed; waiting for the barrier.
	Parsed
	// WaitingForDependencies: the barrier passed; its dependencies are not ready yet.
	WaitingForDependencies
	// Starting: Run was called; waiting for it to report ready.
	Starting
	// Ready: running and ready; dependents may start.
	Ready
	// Stopping: asked to stop; waiting for Run to return.
	Stopping
	// Stopped: Run returned after the harness asked it to stop, or it never ran.
	Stopped
	// Failed: it failed; ComponentStatus.Error says how.
	Failed
	// Recovering: it failed, Harness.Recover kept the failure
	// (ComponentStatus.Error says which), and a new instance is on its way:
	// alive, not ready. It lasts until that instance is ready.
	Recovering
)

// String is the lower-case name used in logs and status.
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Parsing:
		return "parsing"
	case Parsed:
		return "parsed"
	case WaitingForDependencies:
		return "waiting-for-dependencies"
	case Starting:
		return "starting"
	case Ready:
		return "ready"
	case Stopping:
		return "stopping"
	case Stopped:
		return "stopped"
	case Failed:
		return "failed"
	case Recovering:
		return "recovering"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// MarshalText makes State a string in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Phase is a step of Harness.Run. Run goes through them in order; stop
// follows whichever phase ended the run.
type Phase string

const (
	PhaseValidate Phase = "validate" // names unique, dependencies known, no cycle
	PhaseParse    Phase = "parse"    // a scope per component; flags added and parsed concurrently
	PhaseBarrier  Phase = "barrier"  // reconcile every scope; apply once to the process
	PhaseStart    Phase = "start"    // start in dependency order, each after its dependencies are ready
	PhaseRun      Phase = "run"      // all ready; wait for ctx or the first failure
	PhaseStop     Phase = "stop"     // stop in reverse dependency order, each with a deadline
	PhaseDone     Phase = "done"     // Run returned
)

// UnmarshalText parses the names String gives, for clients of the status
// handler.
func (s *State) UnmarshalText(b []byte) error {
	for st := Pending; st <= Recovering; st++ {
		if st.String() == string(b) {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("unknown component state %q", b)
}
