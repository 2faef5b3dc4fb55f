package harness

import (
	"context"
	"fmt"
	"slices"
)

// notifyLocked wakes every waiter on a change; h.mu is held.
func (h *Harness) notifyLocked() {
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

// notify wakes every waiter: for a change no slot records (an instance's
// Run or Ready returned).
func (h *Harness) notify() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notifyLocked()
}

// changes returns a channel closed at the next change.
func (h *Harness) changes() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.changed
}

// await blocks until cond holds (true) or ctx ends (false). cond is checked
// at once, after every change — a slot's stage, a phase, an instance's Run
// or Ready returning — and once more when ctx ended: a cond that holds then
// wins. cond takes h.mu itself where it needs it.
func (h *Harness) await(ctx context.Context, cond func() bool) bool {
	for {
		changed := h.changes()    // before cond: a change in between is not missed
		ended := ctx.Err() != nil // before cond: its last check comes after the end
		if cond() {
			return true
		}
		if ended {
			return false
		}
		select {
		case <-changed:
		case <-ctx.Done():
		}
	}
}

// mustRetire reports whether s's running instance is to retire: it or a
// dependency of it is stopping.
func (h *Harness) mustRetire(s *slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return s.stage == Stopping || slices.ContainsFunc(s.depSlots, func(d *slot) bool { return d.stage == Stopping })
}

// depsReady reports whether every dependency of s is ready.
func (h *Harness) depsReady(s *slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !slices.ContainsFunc(s.depSlots, func(d *slot) bool { st, _ := d.state(); return st != Ready })
}

// anyUp reports whether any of slots has an instance up.
func (h *Harness) anyUp(slots []*slot) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(slots, (*slot).up)
}

// everyReadyOnce reports whether every slot had a ready instance once.
func (h *Harness) everyReadyOnce() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !slices.ContainsFunc(h.slots, func(s *slot) bool { return !s.wasReady })
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
	var err error
	if h.await(ctx, func() (done bool) { done, err = readyIn(h.Status(), names); return done }) {
		return err
	}
	return ctx.Err()
}

// readyIn is WaitReady's answer for one Status: done, with nil or the error
// to return, or not yet.
func readyIn(st Status, names []string) (done bool, err error) {
	for _, n := range names {
		if !slices.ContainsFunc(st.Components, func(c ComponentStatus) bool { return c.Name == n }) {
			return true, fmt.Errorf("harness: WaitReady: no component named %q", n)
		}
	}
	ready := len(st.Components) > 0
	for _, c := range st.Components {
		if len(names) > 0 && !slices.Contains(names, c.Name) {
			continue
		}
		if c.State == Failed {
			return true, fmt.Errorf("harness: %s failed: %s", c.Name, c.Error)
		}
		ready = ready && c.State == Ready
	}
	switch {
	case ready && st.Phase == PhaseRun:
		return true, nil
	case ready && len(names) > 0 && st.Phase == PhaseStart:
		return true, nil // the named ones are ready; the others may still start
	case st.Phase == PhaseDone:
		return true, fmt.Errorf("harness: the run ended before %v were ready", orAll(names))
	}
	return false, nil
}

func orAll(names []string) any {
	if len(names) == 0 {
		return "all components"
	}
	return names
}
