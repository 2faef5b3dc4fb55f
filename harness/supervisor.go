package harness

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

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
			r.change(s, func() { s.stage, s.wasReady, s.recovering = Ready, true, nil })
			ev = r.watch(r.runCtx, s, inst, nil)
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
	var inst *instance
	if !r.h.await(r.runCtx, func() bool { inst = r.claim(s); return inst != nil }) {
		return nil
	}
	r.launch(s, inst)
	return inst
}

// claim makes s's next instance current and s Starting, if the run goes on
// and every dependency allows it to start; else it returns nil.
func (r *run) claim(s *slot) *instance {
	h := r.h
	h.mu.Lock()
	inst := s.newest()
	if r.isStopping() || slices.ContainsFunc(s.depSlots, func(d *slot) bool { return !d.allows(inst) }) {
		h.mu.Unlock()
		return nil
	}
	logged := r.changeLocked(s, func() { s.inst, s.next, s.stage = inst, nil, Starting })
	h.mu.Unlock()
	logged()
	return inst
}

// allows reports whether d, a dependency, lets inst start: d's instance is
// up and staying, and ready — or inst starts early after d. h.mu is held.
func (d *slot) allows(inst *instance) bool {
	st, _ := d.state()
	return (d.stage == Starting || d.stage == Ready) && (st == Ready || inst.startsEarly(d.name))
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
		if r.h.await(wctx, func() bool { return r.h.depsReady(s) }) {
			return nil
		}
		return context.Cause(wctx)
	})
	inst.done = make(chan struct{})
	go func() {
		inst.err = safely(func() error { return labelled(ctx, s.name, inst.c.Run) })
		close(inst.done)
		r.h.notify()
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

// watch blocks until the wait on s's instance is interrupted, and says by
// what; or until until (if not nil) holds, or wake ends: evNone. The run's
// end interrupts it (evStop) when wake carries it.
func (r *run) watch(wake context.Context, s *slot, inst *instance, until func() bool) event {
	ev := evNone
	r.h.await(wake, func() bool {
		ev = r.interrupted(s, inst)
		return ev != evNone || until != nil && until()
	})
	return ev
}

// awaitReady waits until every dependency is ready (an EarlyStarter's may
// not be yet), then for inst's Ready: evReady, or evFailed with the error,
// or what interrupted the wait.
func (r *run) awaitReady(s *slot, inst *instance) (event, error) {
	if ev := r.watch(r.runCtx, s, inst, func() bool { return r.h.depsReady(s) }); ev != evNone {
		return ev, nil
	}
	if rd, ok := inst.c.(Readier); ok {
		return r.ready(s, inst, rd)
	}
	return evReady, nil
}

// ready calls inst's Ready, bounded by ReadyTimeout, and waits for it.
// Ready's context ends when Run returned, the harness stops or the
// instance is to retire; then, or at the timeout, Ready gets AbandonGrace
// to return.
func (r *run) ready(s *slot, inst *instance, rd Readier) (event, error) {
	timeout := cmp.Or(r.h.ReadyTimeout, DefaultReadyTimeout)
	ctx, cancel := context.WithTimeout(r.componentContext(context.WithoutCancel(r.ctx), s.name), timeout)
	defer cancel()
	readyc := r.call(func() error { return labelled(ctx, s.name, rd.Ready) })
	deadline, _ := ctx.Deadline()
	wake, cancelWake := context.WithDeadline(r.runCtx, deadline) // the run's end, or the timeout
	defer cancelWake()
	var err error
	returned, abandoned := false, false
	ev := r.watch(wake, s, inst, func() bool {
		select {
		case err = <-readyc:
			returned = true
		default:
		}
		return returned
	})
	switch {
	case ev != evNone: // interrupted
		cancel()
		_, abandoned = graceful(readyc)
	case !returned: // the timeout
		err, abandoned = graceful(readyc)
	}
	overrun := &DeadlineError{Component: s.name, What: "Ready", Timeout: timeout, Abandoned: abandoned}
	switch {
	case abandoned && ev == evStop: // the run ends anyway: named, not blamed
		r.addErr(&ComponentError{Component: s.name, Phase: PhaseStart, Err: overrun})
		return ev, nil
	case abandoned:
		return evFailed, overrun
	case ev != evNone:
		return ev, nil
	case err == nil:
		return evReady, nil
	case inst.exited():
		return evExited, nil
	case ctx.Err() != nil: // ended by the timeout: cancel was not called
		return evFailed, overrun
	}
	return evFailed, err
}

// retireForRestart retires s's instance for a restart of it or of a
// dependency; the supervisor then starts the next one. A failure to stop
// it stops the harness (false).
func (r *run) retireForRestart(s *slot, inst *instance) bool {
	err, stopped := r.retire(s, inst)
	if err == nil && stopped {
		err = runErrorOnStop(inst)
	}
	if err != nil {
		r.failed(s, &ComponentError{Component: s.name, Phase: PhaseStop, Err: err})
		r.move(s, Stopped)
		return false
	}
	r.move(s, WaitingForDependencies)
	return true
}

// exited handles a Run that returned before it was asked to stop. A
// failure Recover keeps is recovered, within RecoverPolicy: s and its
// dependents get new instances (as Restart gives them), the current ones
// retire, and after the policy's backoff the supervisor goes on (true).
// Any other failure stops the harness.
func (r *run) exited(s *slot, inst *instance, wasReady bool) bool {
	err := cmp.Or(inst.err, ErrExited)
	cerr := &ComponentError{Component: s.name, Phase: PhaseStart, Err: err}
	if wasReady {
		cerr.Phase = PhaseRun
	}
	set := withDependents(r.order, s)
	refusal := r.restartable(s.name, set)
	keep := r.h.Recover != nil && refusal == nil && r.h.Recover(s.name, err)
	var backoff time.Duration
	switch {
	case keep && r.isStopping():
		r.log.Info("Restart after a failure interrupted by the stop", "component", s.name, "err", err)
		keep = false
	case refusal != nil && r.h.Recover != nil:
		r.failed(s, errors.Join(cerr, refusal))
	case !keep:
		r.failed(s, cerr)
	default:
		backoff, keep = r.recover(s, set, cerr)
	}
	r.retire(s, inst) // its Run returned: this waits for the dependents' to be down
	if !keep {
		r.move(s, Stopped)
		return false
	}
	r.move(s, WaitingForDependencies)
	return r.pause(backoff)
}

// recover restarts set — s and its dependents — after a failure of s that
// Recover kept, cause: new instances for all, handed over, s's to start
// after backoff. false: the failure is beyond RecoverPolicy, or the new
// instances could not be made; s failed.
func (r *run) recover(s *slot, set []*slot, cause *ComponentError) (backoff time.Duration, ok bool) {
	backoff, err := r.recovered(s, cause)
	if err != nil {
		r.failWith(err)
		return 0, false
	}
	fresh, err := r.renew(set, r.h.argsOf(s))
	if err != nil {
		r.failed(s, err)
		return 0, false
	}
	r.handover(set, fresh)
	return backoff, true
}

// failed records s's failure — with the failure Recover kept before, for
// the first instance after a recovery — and stops the harness.
func (r *run) failed(s *slot, err error) {
	r.change(s, func() {
		if s.recovering != nil {
			err = &RecoveryError{Cause: s.recovering, Err: err}
		}
		s.failure = err
	})
	r.failWith(err)
}

// stop retires s's instance for good, as the harness stops: Stopping, then
// Stopped — or Failed with a *ComponentError in phase stop, recorded. A
// component that failed already stays Failed. A Run that returned an error
// before it was asked to stop is such a failure, unless Recover keeps it
// (no restart starts: the harness stops).
func (r *run) stop(s *slot, inst *instance) {
	failed := r.h.stateOf(s) == Failed
	err, stopped := r.retire(s, inst)
	if err == nil && !failed {
		err = runErrorOnStop(inst)
		if err != nil && !stopped && r.h.Recover != nil && r.h.Recover(s.name, err) {
			r.log.Info("Restart after a failure interrupted by the stop", "component", s.name, "err", err)
			err = nil
		}
	}
	var cerr error
	if err != nil {
		cerr = &ComponentError{Component: s.name, Phase: PhaseStop, Err: err}
		r.addErr(cerr)
	}
	r.change(s, func() {
		s.stage = Stopped
		if cerr != nil {
			s.failure = cerr
		}
	})
}

// retire takes s's instance down: s is Stopping (its dependents, seeing it,
// retire first); once every dependent's instance is down, its instance is
// stopped — or, if its Run returned already (stopped false), its context
// is cancelled. The caller then moves s on, down.
func (r *run) retire(s *slot, inst *instance) (err error, stopped bool) {
	r.move(s, Stopping)
	r.h.await(context.Background(), func() bool { return !r.h.anyUp(s.dependents) })
	if stopped = !inst.exited(); stopped {
		return r.stopInstance(s, inst), true
	}
	inst.cancel(errStopping) // what Run left running on its context ends too
	return nil, false
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
		errc := r.call(func() error { return labelled(sctx, s.name, st.Stop) })
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
		r.change(s, func() { s.abandoned = why })
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
