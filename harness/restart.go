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
// components that depend on it, directly or not, are restarted with it,
// their arguments unchanged: they stop before it and start after it.
//
// Before anything stops, each new instance (from Renewer.Renew) gets a new
// scope, its flags are parsed, and the scope is reconciled against the
// running plan (scoping.Barrier.Admit): a process-wide setting that would
// change — a kube feature, the emulated version, -v — is a
// *scoping.ConflictError, a bad argument a *ComponentError in phase parse,
// a component that cannot start again a *RestartError, and in each case the
// running components are left untouched. Then each component's supervisor
// retires its instance (after its dependents', within StopTimeout) and
// starts the new one once its dependencies are ready again (ReadyTimeout).
// A failure there is a failure of the harness, as at the first start: it is
// returned, and the harness stops everything — unless Harness.Recover
// keeps it (a new instance's Run failed before it was ready, a lease lost
// again): then Restart returns nil, and the harness recovers that
// component as it recovers any.
//
// Restart works only while Run is in PhaseRun with every component to
// restart ready, one restart at a time; Recover's restarts take the same
// path. ctx bounds the wait for the harness to be free; once stopping
// began, the restart completes (or fails) under the harness's own
// deadlines.
func (h *Harness) Restart(ctx context.Context, name string, args []string) error {
	h.mu.Lock()
	r, phase := h.cur, h.phase
	h.mu.Unlock()
	if phase != PhaseRun {
		return fmt.Errorf("harness: cannot restart %s: the harness is not running (phase %s)", name, phase)
	}
	select { // one restart at a time
	case r.restarts <- struct{}{}:
		defer func() { <-r.restarts }()
	case <-ctx.Done():
		return ctx.Err()
	case <-r.runCtx.Done():
	}
	if r.isStopping() {
		return fmt.Errorf("harness: cannot restart %s: the harness is stopping", name)
	}
	i := slices.IndexFunc(r.order, func(s *slot) bool { return s.name == name })
	if i < 0 {
		return fmt.Errorf("harness: cannot restart %s: no such component", name)
	}
	set := withDependents(r.order, r.order[i])
	if err := r.restartable(name, set); err != nil {
		return err
	}
	for _, s := range set {
		if st := h.stateOf(s); st != Ready {
			return fmt.Errorf("harness: cannot restart %s: %s is %s, not ready", name, s.name, st)
		}
	}
	fresh, err := r.renew(set, slices.Clone(args))
	if err != nil {
		return err
	}
	r.log.Info("Restarting", "component", name, "dependents", len(set)-1)
	recoveries := r.handover(set, fresh)
	if !h.await(r.runCtx, func() (done bool) { done, err = r.handedOver(set, fresh, recoveries); return done }) {
		return fmt.Errorf("harness: restart of %s interrupted: the harness is stopping: %w", name, context.Cause(r.runCtx))
	}
	return err
}

// restartable returns a *RestartError if a slot of set (name and its
// dependents) cannot start a new instance: it is a Once, or no Renewer.
func (r *run) restartable(name string, set []*slot) error {
	for _, s := range set {
		c := r.h.componentOf(s)
		if once, ok := c.(Once); ok {
			return &RestartError{Component: name, Blocker: s.name, Err: ErrStartsOnce, Reason: once.StartsOnce()}
		}
		if _, ok := c.(Renewer); !ok {
			return &RestartError{Component: name, Blocker: s.name, Err: ErrNotRenewer}
		}
	}
	return nil
}

// renew makes the new instances of a restart of set[0] with args, its
// dependents keeping theirs: for each, a new value (Renewer.Renew), a new
// scope, its arguments parsed; then every new scope is admitted against
// the running plan. Nothing running is touched.
func (r *run) renew(set []*slot, args []string) ([]*instance, error) {
	fresh := make([]*instance, len(set))
	scopes := make([]*scoping.Scope, len(set))
	for i, s := range set {
		c := r.h.componentOf(s).(Renewer).Renew()
		if c.Name() != s.name {
			return nil, fmt.Errorf("harness: cannot restart %s: Renew returned a component named %q", s.name, c.Name())
		}
		inst := &instance{c: c, args: args}
		if i > 0 {
			inst.args = r.h.argsOf(s)
		}
		var err error
		if inst.scope, err = r.barrier.Rescope(s.name); err == nil {
			err = r.parseInstance(inst)
		}
		if err != nil {
			return nil, &ComponentError{Component: s.name, Phase: PhaseParse, Err: err}
		}
		inst.flags = effectiveFlags(inst.scope)
		fresh[i], scopes[i] = inst, inst.scope
	}
	if err := r.barrier.Admit(scopes...); err != nil {
		r.h.countConflicts(err)
		return nil, err
	}
	return fresh, nil
}

// handover makes fresh the next instances of set's slots and the ones up
// Stopping: each supervisor retires its instance (after its dependents')
// and starts the new one once its dependencies are ready again. It returns
// each slot's recoveries so far, for handedOver.
func (r *run) handover(set []*slot, fresh []*instance) (recoveries []int) {
	var logs []func()
	r.h.mu.Lock()
	for i, s := range set {
		logs = append(logs, r.changeLocked(s, func() {
			s.restarts++
			fresh[i].gen = s.restarts
			s.next = fresh[i]
			if s.up() {
				s.stage = Stopping
			}
		}))
		recoveries = append(recoveries, s.recoveries)
	}
	r.h.mu.Unlock()
	for _, logged := range logs {
		logged()
	}
	return recoveries
}

// handedOver reports whether a handover ended: every new instance (or a
// later one) ready (nil); a slot failed (its error); or a new instance
// failed and Harness.Recover recovers it (nil).
func (r *run) handedOver(set []*slot, fresh []*instance, recoveries []int) (bool, error) {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	ready := true
	for i, s := range set {
		switch st, err := s.state(); {
		case st == Failed:
			return true, err
		case s.recoveries > recoveries[i]:
			r.log.Info("Restarted, but a new instance failed before it was ready; Harness.Recover restarts it", "component", set[0].name, "failed", s.name)
			return true, nil
		case s.inst.gen < fresh[i].gen || st != Ready:
			ready = false
		}
	}
	if ready {
		r.log.Info("Restarted", "component", set[0].name)
	}
	return ready, nil
}
