package harness

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kubeharness/kubeharness/scoping"
)

// slot is one added component for the whole of Run: a stable place whose
// supervisor owns the current instance and replaces it on a restart or a
// recovery.
type slot struct {
	name       string
	deps       []string
	depSlots   []*slot // set by validate
	dependents []*slot // the slots that depend on it directly, set by validate

	// guarded by Harness.mu
	inst       *instance // the current instance
	next       *instance // the instance to start once inst retired (a restart)
	gens       int       // instances made for this slot so far
	args       []string  // the arguments of the newest instance
	flags      map[string]string
	state      State
	err        error
	since      time.Time
	up         bool // inst's Run was called and inst has not retired yet
	leaving    bool // inst is to retire: its dependents retire first
	wasReady   bool // an instance was ready once: PhaseRun begins when every slot's was
	restarts   int
	recoveries int
	lastRecov  *Recovery
	recovering *ComponentError // the failure Recover kept, until a new instance is ready
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
	return &slot{name: c.Name(), deps: deps, args: args, inst: &instance{c: c, args: args}}
}

// exited reports whether inst's Run returned.
func (inst *instance) exited() bool {
	select {
	case <-inst.done:
		return true
	default:
		return false
	}
}

// event is what ended a supervisor's wait on its instance.
type event int

const (
	evNone   event = iota
	evReady        // Ready returned nil (at once for a component that is no Readier)
	evExited       // Run returned before the harness asked it to stop
	evFailed       // Ready failed or overran ReadyTimeout, Run still running
	evRetire       // a restart of it or of a dependency: retire, then start the next instance
	evStop         // the harness stops
)

// supervise is a slot's supervisor for the whole start, run and stop. It
// loops: start the current instance once the dependencies allow, wait until
// it is ready, wait until it exits or is asked to retire, then retire it
// (after its dependents) and start the next instance — a restart, a
// recovery — or return: the harness stops, or the component failed.
func (r *run) supervise(s *slot) {
	for {
		inst := r.launchWhenAllowed(s)
		if inst == nil {
			return // the harness stops before it started: Run marks it stopped
		}
		ev, err := r.awaitReady(s, inst)
		wasReady := ev == evReady
		if wasReady {
			r.setState(s, Ready, nil)
			ev = r.watch(s, inst, nil)
		}
		switch ev {
		case evRetire:
			if r.retireForRestart(s, inst) {
				continue
			}
		case evExited:
			if r.exited(s, inst, wasReady) {
				continue
			}
		case evFailed:
			r.failed(s, &ComponentError{Component: s.name, Phase: PhaseStart, Err: err})
			r.stop(s, inst)
		case evStop:
			r.stop(s, inst)
		}
		return
	}
}

// launchWhenAllowed waits until s may start its next instance — every
// dependency ready, or up for one that s starts early after — then makes
// it the current instance and calls its Run. nil: the harness stops first.
func (r *run) launchWhenAllowed(s *slot) *instance {
	for {
		changed := r.h.changes()
		if r.isStopping() {
			return nil
		}
		if inst := r.claim(s); inst != nil {
			r.launch(s, inst)
			return inst
		}
		select {
		case <-changed:
		case <-r.runCtx.Done():
		}
	}
}

// claim makes s's next instance current and marks it up, if every
// dependency allows it to start; else it returns nil.
func (r *run) claim(s *slot) *instance {
	h := r.h
	h.mu.Lock()
	inst := cmp.Or(s.next, s.inst)
	for _, d := range s.depSlots {
		if !d.up || d.leaving || (d.state != Ready && !inst.startsEarly(d.name)) {
			h.mu.Unlock()
			return nil
		}
	}
	s.inst, s.next, s.up = inst, nil, true
	logged := r.setStateLocked(s, Starting, nil)
	h.mu.Unlock()
	logged()
	return inst
}

// startsEarly asks an EarlyStarter, once per dependency, whether it starts
// as soon as that dependency is up; h.mu is held.
func (inst *instance) startsEarly(dep string) bool {
	e, ok := inst.c.(EarlyStarter)
	if !ok {
		return false
	}
	if inst.early == nil {
		inst.early = map[string]bool{}
	}
	early, asked := inst.early[dep]
	if !asked {
		early = e.StartsEarly(dep)
		inst.early[dep] = early
	}
	return early
}

// launch calls inst's Run in a goroutine with a context of its own: the
// caller's values, cancelled only when the harness stops this instance.
func (r *run) launch(s *slot, inst *instance) {
	var ctx context.Context
	ctx, inst.cancel = context.WithCancelCause(r.componentContext(context.WithoutCancel(r.ctx), s.name))
	ctx = context.WithValue(ctx, dependenciesKey{}, func(wctx context.Context) error {
		for {
			changed := r.h.changes()
			if r.h.depsReady(s) {
				return nil
			}
			select {
			case <-changed:
			case <-wctx.Done():
				return context.Cause(wctx)
			}
		}
	})
	inst.done = make(chan struct{})
	go func() {
		defer close(inst.done)
		inst.err = safely(func() error { return labelled(ctx, s.name, inst.c.Run) })
	}()
}

// interrupted says what, if anything, ends a wait on s's instance: its Run
// returned, the harness stops, or it is to retire.
func (r *run) interrupted(s *slot, inst *instance) event {
	switch {
	case inst.exited():
		return evExited
	case r.isStopping():
		return evStop
	case r.h.mustRetire(s):
		return evRetire
	}
	return evNone
}

// watch blocks until until (if not nil) holds — evNone — or the wait is
// interrupted, and says by what.
func (r *run) watch(s *slot, inst *instance, until func() bool) event {
	for {
		changed := r.h.changes()
		if ev := r.interrupted(s, inst); ev != evNone {
			return ev
		}
		if until != nil && until() {
			return evNone
		}
		select {
		case <-changed:
		case <-inst.done:
		case <-r.runCtx.Done():
		}
	}
}

// awaitReady waits until every dependency is ready (an EarlyStarter's may
// not be yet), then for inst's Ready, bounded by ReadyTimeout: evReady, or
// evFailed with the error, or what interrupted the wait. Ready's context
// ends when Run returned, the harness stops or the instance is to retire.
func (r *run) awaitReady(s *slot, inst *instance) (event, error) {
	if ev := r.watch(s, inst, func() bool { return r.h.depsReady(s) }); ev != evNone {
		return ev, nil
	}
	rd, ok := inst.c.(Readier)
	if !ok {
		return evReady, nil
	}
	timeout := cmp.Or(r.h.ReadyTimeout, DefaultReadyTimeout)
	ctx, cancel := context.WithCancel(r.componentContext(context.WithoutCancel(r.ctx), s.name))
	defer cancel()
	tctx, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	readyc := call(func() error { return labelled(tctx, s.name, rd.Ready) })
	deadline := func(abandoned bool) error {
		return &DeadlineError{Component: s.name, What: "Ready", Timeout: timeout, Abandoned: abandoned}
	}
	// outcome is what Ready's result means: tctx ended only by the timeout.
	outcome := func(err error, abandoned bool) (event, error) {
		switch {
		case abandoned:
			return evFailed, deadline(true)
		case err == nil:
			return evReady, nil
		case inst.exited():
			return evExited, nil
		case tctx.Err() != nil:
			return evFailed, deadline(false)
		}
		return evFailed, err
	}
	for {
		changed := r.h.changes()
		if ev := r.interrupted(s, inst); ev != evNone {
			cancel()
			if _, abandoned := graceful(readyc); abandoned {
				err := &ComponentError{Component: s.name, Phase: PhaseStart, Err: deadline(true)}
				if ev != evStop {
					return evFailed, err.Err
				}
				r.addErr(err) // the run ends anyway: named, not blamed
			}
			return ev, nil
		}
		select {
		case err := <-readyc:
			return outcome(err, false)
		case <-tctx.Done():
			return outcome(graceful(readyc))
		case <-changed:
		case <-inst.done:
		case <-r.runCtx.Done():
		}
	}
}

// retireForRestart retires s's instance for a restart of it or of a
// dependency; the supervisor then starts the next one. A failure to stop
// it stops the harness (false).
func (r *run) retireForRestart(s *slot, inst *instance) bool {
	r.setState(s, Stopping, nil)
	err, stopped := r.retire(s, inst)
	if err == nil && stopped {
		err = runErrorOnStop(inst)
	}
	if err != nil {
		r.failed(s, &ComponentError{Component: s.name, Phase: PhaseStop, Err: err})
		return false
	}
	r.setState(s, WaitingForDependencies, nil)
	return true
}

// exited handles a Run that returned before it was asked to stop. A
// failure Recover keeps is recovered: s and its dependents get new
// instances (as Restart gives them), the current ones retire, and the
// supervisor goes on (true). Any other failure stops the harness.
func (r *run) exited(s *slot, inst *instance, wasReady bool) bool {
	err := inst.err
	if err == nil {
		err = ErrExited
	}
	cerr := &ComponentError{Component: s.name, Phase: PhaseStart, Err: err}
	if wasReady {
		cerr.Phase = PhaseRun
	}
	set := withDependents(r.order, s)
	refusal := r.restartable(s.name, set)
	keep := r.h.Recover != nil && refusal == nil && r.h.Recover(s.name, err)
	stopping := keep && r.isStopping()
	switch {
	case stopping:
		r.log.Info("Restart after a failure interrupted by the stop", "component", s.name, "err", err)
	case !keep && r.h.Recover != nil && refusal != nil:
		r.failed(s, errors.Join(cerr, refusal))
	case !keep:
		r.failed(s, cerr)
	default:
		n := r.h.recovered(s, cerr)
		r.logState(s, Recovering, cerr)
		r.log.Info("Component failed; restarting it (Harness.Recover)", "component", s.name, "recoveries", n, "err", err)
		fresh, err := r.renew(set, r.h.argsOf(s))
		if err != nil {
			r.failed(s, err)
			keep = false
			break
		}
		r.handover(set, fresh)
	}
	r.retire(s, inst) // its Run returned: this waits for the dependents' to be down
	if stopping {
		r.setState(s, Stopped, nil)
	}
	return keep && !stopping
}

// failed records s's failure — with the failure Recover kept before, for
// the first instance after a recovery — and stops the harness.
func (r *run) failed(s *slot, err error) {
	r.h.mu.Lock()
	if s.recovering != nil {
		err = &RecoveryError{Cause: s.recovering, Err: err}
	}
	logged := r.setStateLocked(s, Failed, err)
	r.h.mu.Unlock()
	logged()
	r.failWith(err)
}

// stop retires s's instance for good, as the harness stops: Stopping, then
// Stopped — or Failed with a *ComponentError in phase stop, recorded. A
// component that failed already stays Failed. A Run that returned an error
// before it was asked to stop is such a failure, unless Recover keeps it
// (no restart starts: the harness stops).
func (r *run) stop(s *slot, inst *instance) {
	failed := r.h.stateOf(s) == Failed
	if !failed {
		r.setState(s, Stopping, nil)
	}
	err, stopped := r.retire(s, inst)
	if err == nil && !failed {
		err = runErrorOnStop(inst)
		if err != nil && !stopped && r.h.Recover != nil && r.h.Recover(s.name, err) {
			r.log.Info("Restart after a failure interrupted by the stop", "component", s.name, "err", err)
			err = nil
		}
	}
	switch {
	case err != nil:
		cerr := &ComponentError{Component: s.name, Phase: PhaseStop, Err: err}
		r.setState(s, Failed, cerr)
		r.addErr(cerr)
	case !failed:
		r.setState(s, Stopped, nil)
	}
}

// retire takes s's instance down: marked leaving, it waits until every
// dependent's instance is down, then it is stopped — or, if its Run
// returned already (stopped false), its context is cancelled — and marked
// down.
func (r *run) retire(s *slot, inst *instance) (err error, stopped bool) {
	r.h.update(func() { s.leaving = true })
	for {
		changed := r.h.changes()
		if !r.h.anyUp(s.dependents) {
			break
		}
		<-changed
	}
	if stopped = !inst.exited(); stopped {
		err = r.stopInstance(s, inst)
	} else {
		inst.cancel(errStopping) // what Run left running on its context ends too
	}
	r.h.update(func() { s.up, s.leaving = false, false })
	return err, stopped
}

// stopInstance stops a running instance within StopTimeout: Stop (if it is
// a Stopper) gets the first half, with a context whose deadline is that
// share; Run's context is cancelled as soon as Stop returned, and at the
// latest when Stop's share ended, and Run gets the rest of the timeout to
// return. What overran — Stop, Run or both — is named in a *DeadlineError;
// for a Once, a Run that overran is left running and named in its status
// instead (it cannot stop).
func (r *run) stopInstance(s *slot, inst *instance) error {
	timeout := cmp.Or(r.h.StopTimeout, DefaultStopTimeout)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var stopErr error
	if st, ok := inst.c.(Stopper); !ok {
		inst.cancel(errStopping)
	} else {
		share := timeout / 2
		sctx, cancel := context.WithTimeout(r.componentContext(context.WithoutCancel(r.ctx), s.name), share)
		errc := call(func() error { return labelled(sctx, s.name, st.Stop) })
		select {
		case stopErr = <-errc:
			inst.cancel(errStopping)
		case <-sctx.Done():
			// Stop's share is over: Run's context is cancelled now, whatever
			// Stop does; Stop gets AbandonGrace more to return.
			inst.cancel(errStopping)
			var abandoned bool
			if stopErr, abandoned = graceful(errc); abandoned {
				stopErr = &DeadlineError{Component: s.name, What: "Stop", Timeout: share, Abandoned: true}
			}
		}
		cancel()
	}
	select {
	case <-inst.done:
		return stopErr
	case <-deadline.C:
	}
	overrun := &DeadlineError{Component: s.name, What: "Run", Timeout: timeout, Abandoned: true}
	if once, ok := inst.c.(Once); ok {
		why := overrun.Error() + " (it " + ErrStartsOnce.Error() + ": " + once.StartsOnce() + ")"
		r.h.update(func() { s.abandoned = why })
		r.log.Info("Component left running: it starts once per process", "component", s.name, "reason", why)
		return stopErr
	}
	return errors.Join(stopErr, overrun)
}

// runErrorOnStop is the error a stopped instance's Run returned, unless it
// is the stop's own cancellation. Call it once Run returned.
func runErrorOnStop(inst *instance) error {
	if !inst.exited() || errors.Is(inst.err, context.Canceled) || errors.Is(inst.err, errStopping) {
		return nil
	}
	return inst.err
}

var errStopping = errors.New("harness: stopping")

// withDependents returns s and every slot of order (a dependency order, s
// in it) that depends on s, directly or not, in that order: s first.
func withDependents(order []*slot, s *slot) []*slot {
	set := []*slot{s}
	for _, o := range order[slices.Index(order, s)+1:] { // dependents come after
		if slices.ContainsFunc(o.depSlots, func(d *slot) bool { return slices.Contains(set, d) }) {
			set = append(set, o)
		}
	}
	return set
}
