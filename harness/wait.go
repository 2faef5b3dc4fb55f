package harness

import (
	"context"
	"fmt"
	"slices"
)

// notifyLocked wakes every WaitReady; h.mu is held.
func (h *Harness) notifyLocked() {
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

// changes returns a channel closed at the next state or phase change, and
// the status as of now. The channel is taken before the status is read, so
// a change between the two closes it and is not missed.
func (h *Harness) changes() (<-chan struct{}, Status) {
	h.mu.Lock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	changed := h.changed
	h.mu.Unlock()
	return changed, h.Status()
}

// WaitReady blocks until the named components (every component, if none is
// named) are all Ready at once — for every component, with Run in PhaseRun
// (Status.Ready), so Restart may follow — and returns nil; or until ctx ends (its
// error), or the run ended or one of them failed (an error naming it). It
// is the notification a binary waits on instead of polling Status — after
// Run started it, and again after a Restart. A component that failed and
// that Harness.Recover restarts is waited for, not an error (a lease lost
// while the others still start: the restart follows once Run is in
// PhaseRun). A component not added is an error at once.
func (h *Harness) WaitReady(ctx context.Context, names ...string) error {
	for {
		changed, st := h.changes()
		if len(names) > 0 {
			for _, n := range names {
				if !slices.ContainsFunc(st.Components, func(c ComponentStatus) bool { return c.Name == n }) {
					return fmt.Errorf("harness: WaitReady: no component named %q", n)
				}
			}
		}
		ready := len(st.Components) > 0
		for _, c := range st.Components {
			if len(names) > 0 && !slices.Contains(names, c.Name) {
				continue
			}
			if c.State == Failed && !c.recovering { // Harness.Recover restarts it: not ready yet
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
