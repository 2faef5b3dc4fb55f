package harness

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// notifyLocked wakes every waiter on a change; h.mu is held.
func (h *Harness) notifyLocked() {
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

// changes returns a channel closed at the next state or phase change. Take
// it before reading what it guards, so that a change in between is not
// missed.
func (h *Harness) changes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// update changes slot fields under h.mu and wakes the waiters.
func (h *Harness) update(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
	h.notifyLocked()
}

// setState records s's state and logs it.
func (r *run) setState(s *slot, st State, err error) {
	r.h.mu.Lock()
	logged := r.setStateLocked(s, st, err)
	r.h.mu.Unlock()
	logged()
}

// setStateLocked records s's state (h.mu held) and returns the function
// that logs it, to call once h.mu is released. While a failure Recover kept
// is being recovered, waiting, starting and stopping are all Recovering.
// The first time every slot was ready, Run enters PhaseRun.
func (r *run) setStateLocked(s *slot, st State, err error) (log func()) {
	h := r.h
	if s.recovering != nil {
		switch st {
		case WaitingForDependencies, Starting, Stopping:
			st, err = Recovering, s.recovering
		case Ready, Failed, Stopped:
			s.recovering = nil
		}
	}
	same := s.state == st && s.err == err
	if !same {
		s.state, s.err, s.since = st, err, time.Now()
	}
	run := false
	if st == Ready {
		s.wasReady = true
		run = h.phase == PhaseStart && !slices.ContainsFunc(h.slots, func(o *slot) bool { return !o.wasReady })
		if run {
			h.enterLocked(PhaseRun)
		}
	}
	h.notifyLocked()
	return func() {
		if !same {
			r.logState(s, st, err)
		}
		if run {
			r.log.Info("Harness phase", "phase", PhaseRun)
		}
	}
}

func (r *run) logState(s *slot, st State, err error) {
	if err != nil {
		r.log.Error(err, "Component state", "component", s.name, "state", st)
		return
	}
	r.log.Info("Component state", "component", s.name, "state", st)
}

// recovered counts a recovery of s, which failed with cause, makes it
// Recovering, and returns how many recoveries it had.
func (h *Harness) recovered(s *slot, cause *ComponentError) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.recoveries++
	s.lastRecov = &Recovery{At: time.Now(), Cause: cause.Err.Error()}
	s.recovering = cause
	s.state, s.err, s.since = Recovering, cause, time.Now()
	h.notifyLocked()
	return s.recoveries
}

func (h *Harness) stateOf(s *slot) State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.state
}

func (h *Harness) argsOf(s *slot) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.args
}

func (h *Harness) componentOf(s *slot) Component {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.inst.c
}

// mustRetire reports whether s's running instance is to retire: it or a
// dependency of it is leaving.
func (h *Harness) mustRetire(s *slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.leaving || slices.ContainsFunc(s.depSlots, func(d *slot) bool { return d.leaving })
}

// depsReady reports whether every dependency of s is ready and staying.
func (h *Harness) depsReady(s *slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !slices.ContainsFunc(s.depSlots, func(d *slot) bool { return d.state != Ready || d.leaving })
}

// anyUp reports whether any of slots has an instance up.
func (h *Harness) anyUp(slots []*slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(slots, func(s *slot) bool { return s.up })
}

// WaitReady blocks until the named components (every component, if none is
// named) are all Ready at once — for every component, with Run in PhaseRun
// (Status.Ready), so Restart may follow — and returns nil; or until ctx ends (its
// error), or the run ended or one of them failed (an error naming it). It
// is the notification a binary waits on instead of polling Status — after
// Run started it, and again after a Restart. A component that is
// Recovering is waited for, not an error. A component not added is an
// error at once.
func (h *Harness) WaitReady(ctx context.Context, names ...string) error {
	for {
		changed := h.changes()
		st := h.Status()
		for _, n := range names {
			if !slices.ContainsFunc(st.Components, func(c ComponentStatus) bool { return c.Name == n }) {
				return fmt.Errorf("harness: WaitReady: no component named %q", n)
			}
		}
		ready := len(st.Components) > 0
		for _, c := range st.Components {
			if len(names) > 0 && !slices.Contains(names, c.Name) {
				continue
			}
			if c.State == Failed {
				return fmt.Errorf("harness: %s failed: %s", c.Name, c.Error)
			}
			ready = ready && c.State == Ready
		}
		switch {
		case ready && st.Phase == PhaseRun:
			return nil
		case ready && len(names) > 0 && st.Phase == PhaseStart:
			return nil // the named ones are ready; the others may still start
		case st.Phase == PhaseDone:
			return fmt.Errorf("harness: the run ended before %v were ready", orAll(names))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func orAll(names []string) any {
	if len(names) == 0 {
		return "all components"
	}
	return names
}
