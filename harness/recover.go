package harness

import "time"

// recovered records a failure of s that Recover kept, cause: s is
// Recovering.
func (r *run) recovered(s *slot, cause *ComponentError) {
	now, n := time.Now(), 0
	r.change(s, func() {
		s.recoveries++
		n = s.recoveries
		s.lastRecov = &Recovery{At: now, Cause: cause.Err.Error()}
		s.recovering = cause
	})
	r.log.Info("Component failed; restarting it (Harness.Recover)", "component", s.name, "recoveries", n, "err", cause.Err)
}
