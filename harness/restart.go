package harness

import (
	"context"
	"fmt"
	"slices"

	"github.com/kubeharness/kubeharness/scoping"
)

// Restart stops one running component and starts a new instance of it with
// new arguments while the others keep running — a distro reloading the
// scheduler's configuration without restarting the apiserver. The
// components that depend on it, directly or not, are restarted after it,
// with their arguments unchanged.
//
// Before anything stops, each new instance (from Renewer.Renew) gets a new
// scope, its flags are parsed, and the scope is reconciled against the
// running plan (scoping.Barrier.Admit): a process-wide setting that would
// change — a kube feature, the emulated version, -v — is a
// *scoping.ConflictError, a bad argument a *ComponentError in phase parse,
// and in both cases the running components are left untouched. Then the
// old instances stop in reverse dependency order (each within StopTimeout)
// and the new ones start in dependency order, each waiting for its own
// readiness (ReadyTimeout) before the next. A failure there is a failure of
// the harness, as at the first start: it is returned, and the harness stops
// everything — unless Harness.Recover keeps it (a new instance's Run failed
// before it was ready, a lease lost again): then Restart returns nil, and
// the harness restarts that instance once more, as it recovers any.
//
// Restart works only while Run is in PhaseRun (every component started),
// one restart at a time; every component restarted must implement Renewer.
// ctx bounds the wait for the harness to be free; once stopping began, the
// restart completes (or fails) under the harness's own deadlines.
func (h *Harness) Restart(ctx context.Context, name string, args []string) error {
	h.mu.Lock()
	r, phase := h.cur, h.phase
	h.mu.Unlock()
	if r == nil || phase != PhaseRun {
		return fmt.Errorf("harness: cannot restart %s: the harness is not running (phase %s)", name, phase)
	}
	select { // one restart at a time; stop waits for it too
	case r.restart <- struct{}{}:
		defer func() { <-r.restart }()
	case <-ctx.Done():
		return ctx.Err()
	case <-r.runCtx.Done():
		return fmt.Errorf("harness: cannot restart %s: the harness is stopping", name)
	}
	if r.runCtx.Err() != nil {
		return fmt.Errorf("harness: cannot restart %s: the harness is stopping", name)
	}
	set, err := r.restartSet(name)
	if err != nil {
		return err
	}

	// Parse and admit every new instance before anything stops.
	fresh := make([]*unit, len(set))
	scopes := make([]*scoping.Scope, len(set))
	for i, old := range set {
		u := newUnit(old.c.(Renewer).Renew(), old.args, old.deps)
		if i == 0 {
			u.args = slices.Clone(args)
		}
		if u.c.Name() != old.c.Name() {
			return fmt.Errorf("harness: cannot restart %s: Renew returned a component named %q", old.c.Name(), u.c.Name())
		}
		if u.scope, err = r.barrier.Rescope(u.c.Name()); err != nil {
			return &ComponentError{Component: u.c.Name(), Phase: PhaseParse, Err: err}
		}
		if err := r.parseUnit(u); err != nil {
			return &ComponentError{Component: u.c.Name(), Phase: PhaseParse, Err: err}
		}
		fresh[i], scopes[i] = u, u.scope
	}
	if err := r.barrier.Admit(scopes...); err != nil {
		r.h.countConflicts(err)
		return err
	}

	r.log.Info("Restarting", "component", name, "dependents", len(set)-1)
	for _, old := range slices.Backward(set) {
		if old.done == nil {
			continue // never launched: nothing to stop
		}
		if err := r.stopLaunched(old); err != nil {
			r.failWith(err)
			return err
		}
	}
	r.replace(set, fresh)
	for _, u := range fresh {
		r.setState(u, WaitingForDependencies, nil)
	}
	for _, u := range fresh {
		if err := r.startUnit(r.runCtx, u); err != nil {
			r.failWith(err)
			return err
		}
		if r.runCtx.Err() != nil {
			return fmt.Errorf("harness: restart of %s interrupted: the harness is stopping: %w", name, context.Cause(r.runCtx))
		}
	}
	for _, u := range fresh {
		select {
		case <-u.ready:
		default:
			// Its Run failed before it was ready, and Harness.Recover kept
			// the failure: it restarts it (and the dependents that did not
			// start) once this restart is over.
			r.log.Info("Restarted, but a new instance failed before it was ready; Harness.Recover restarts it", "component", name, "failed", u.c.Name())
			return nil
		}
	}
	r.log.Info("Restarted", "component", name)
	return nil
}

// restartSet is the named unit and every unit that depends on it, directly
// or not, in dependency order; each must be a Renewer.
func (r *run) restartSet(name string) ([]*unit, error) {
	i := slices.IndexFunc(r.order, func(u *unit) bool { return u.c.Name() == name })
	if i < 0 {
		return nil, fmt.Errorf("harness: cannot restart %s: no such component", name)
	}
	set := withDependents(r.order, r.order[i])
	for _, u := range set {
		if _, ok := u.c.(Renewer); !ok {
			why := "it does not implement harness.Renewer"
			if u != set[0] {
				why = fmt.Sprintf("its dependent %s does not implement harness.Renewer", u.c.Name())
			}
			return nil, fmt.Errorf("harness: cannot restart %s: %s", name, why)
		}
		r.h.mu.Lock()
		st, recovering := u.state, u.recovering
		r.h.mu.Unlock()
		// A dependent whose dependency failed before it was ready never
		// started (startUnit): it starts with the new instance.
		if st != Ready && !(u == set[0] && recovering) && !(u != set[0] && unstarted(u)) {
			return nil, fmt.Errorf("harness: cannot restart %s: %s is %s, not ready", name, u.c.Name(), st)
		}
	}
	return set, nil
}

// withDependents returns u and every unit of order (a dependency order, u
// in it) that depends on u, directly or not, in that order: u first.
func withDependents(order []*unit, u *unit) []*unit {
	in := map[*unit]bool{u: true}
	set := []*unit{u}
	for _, o := range order { // dependency order: dependents come after
		if o != u && slices.ContainsFunc(o.depUnits, func(d *unit) bool { return in[d] }) {
			in[o] = true
			set = append(set, o)
		}
	}
	return set
}

// unstarted reports whether u is an instance that will not start: a
// dependency of it failed before it was ready, and is to be restarted.
func unstarted(u *unit) bool {
	select {
	case <-u.unstarted:
		return u.done == nil
	default:
		return false
	}
}

// replace puts the new units in the old ones' places, in the run order and
// the harness's list, and points every dependency at the new units.
func (r *run) replace(old, fresh []*unit) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	swap := map[*unit]*unit{}
	for i := range old {
		swap[old[i]] = fresh[i]
	}
	for _, list := range [][]*unit{r.order, r.h.units} {
		for i, u := range list {
			if n := swap[u]; n != nil {
				list[i] = n
			}
		}
	}
	for i, f := range fresh {
		f.depUnits = slices.Clone(old[i].depUnits)
		f.restarts = old[i].restarts + 1
		f.recoveries, f.lastRecov = old[i].recoveries, old[i].lastRecov
	}
	for _, u := range r.order {
		for i, d := range u.depUnits {
			if n := swap[d]; n != nil {
				u.depUnits[i] = n
			}
		}
	}
}
