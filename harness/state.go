package harness

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/kubeharness/kubeharness/scoping"
)

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

// slot is one added component for the whole of Run: a stable place whose
// supervisor owns the current instance and replaces it on a restart or a
// recovery.
type slot struct {
	name       string
	deps       []string
	depSlots   []*slot // set by validate
	dependents []*slot // the slots that depend on it directly, set by validate

	// guarded by Harness.mu
	stage      State           // where it is; never Failed or Recovering (see state)
	failure    error           // why it failed: it is Failed from then on
	recovering *ComponentError // the failure Recover kept, until a new instance is ready
	since      time.Time       // when its State last changed
	inst       *instance       // the current instance
	next       *instance       // the instance to start once inst retired (a restart)
	wasReady   bool            // an instance was ready once: PhaseRun begins when every slot's was
	restarts   int             // instances made after the first; the newest one's gen
	recoveries int
	lastRecov  *Recovery
	kept       []time.Time // when the failures Recover kept within RecoverPolicy.Period were
	abandoned  string
}

// instance is one value of a component and its one run.
type instance struct {
	c     Component
	args  []string
	scope *scoping.Scope
	gen   int
	flags map[string]string // the effective flags, once parsed
	early map[string]bool   // the dependencies it starts early after, once asked

	cancel context.CancelCauseFunc // ends Run's context, once launched
	done   chan struct{}           // closed when Run returned, once launched
	err    error                   // Run's result, once done is closed
}

func newSlot(c Component, args, deps []string) *slot {
	return &slot{name: c.Name(), deps: deps, inst: &instance{c: c, args: args}}
}

// state is s's public State and the error it shows, derived from its stage:
// Failed once it failed; Recovering while a failure Recover kept is being
// recovered and no new instance is ready; else its stage. h.mu is held.
func (s *slot) state() (State, error) {
	switch {
	case s.failure != nil:
		return Failed, s.failure
	case s.recovering != nil && s.stage != Ready && s.stage != Stopped:
		return Recovering, s.recovering
	}
	return s.stage, nil
}

// up reports whether s's instance is up: its Run was called and it has not
// retired yet. h.mu is held.
func (s *slot) up() bool { return s.stage == Starting || s.stage == Ready || s.stage == Stopping }

// newest is the instance whose arguments and flags s reports: the next one,
// else the current one. h.mu is held.
func (s *slot) newest() *instance { return cmp.Or(s.next, s.inst) }

// change applies f to s under h.mu, wakes the waiters and logs s's State if
// it changed. Every change of a slot's stage goes through it.
func (r *run) change(s *slot, f func()) {
	r.h.mu.Lock()
	logged := r.changeLocked(s, f)
	r.h.mu.Unlock()
	logged()
}

// move changes s's stage.
func (r *run) move(s *slot, to State) { r.change(s, func() { s.stage = to }) }

// changeLocked is change with h.mu held: it returns the function that logs,
// to call once h.mu is released.
func (r *run) changeLocked(s *slot, f func()) (log func()) {
	was, wasErr := s.state()
	f()
	st, err := s.state()
	r.h.notifyLocked()
	if st == was && err == wasErr {
		return func() {}
	}
	s.since = time.Now()
	return func() {
		if err != nil {
			r.log.Error(err, "Component state", "component", s.name, "state", st)
			return
		}
		r.log.Info("Component state", "component", s.name, "state", st)
	}
}

func (h *Harness) stateOf(s *slot) State {
	h.mu.Lock()
	defer h.mu.Unlock()
	st, _ := s.state()
	return st
}

// argsOf is the arguments s's newest instance has.
func (h *Harness) argsOf(s *slot) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.newest().args
}

func (h *Harness) componentOf(s *slot) Component {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.inst.c
}
