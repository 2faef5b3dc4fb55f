package harness

import (
	"cmp"
	"slices"
	"time"
)

// The RecoverPolicy defaults: five restarts of a component within a
// minute, the second one a second after its failure, each further one
// twice as long after. A component failing at once on every start is
// stopped 15 s in; one losing its leader-election lease again and again
// (each loss takes the renew deadline, 10 s upstream) never is.
const (
	DefaultRecoverIntensity = 5
	DefaultRecoverPeriod    = time.Minute
	DefaultRecoverBackoff   = time.Second
)

// RecoverPolicy bounds the restarts Harness.Recover makes of each component,
// after OTP's restart intensity (MaxR in MaxT) and suture's backoff. Only
// failures Recover keeps count; Restart's restarts do not.
type RecoverPolicy struct {
	// Intensity is how many failures of one component Recover may keep
	// within Period: one more is not restarted, and Run fails with an
	// *IntensityError. Zero means DefaultRecoverIntensity; negative, no
	// limit.
	Intensity int
	// Period is the window Intensity counts in: a failure Period or more
	// ago no longer counts. Zero or less means DefaultRecoverPeriod.
	Period time.Duration
	// Backoff delays the restart after a failure that is not the first
	// within Period: Backoff, doubled for each further failure within it,
	// at most Period. The first failure after a quiet Period restarts at
	// once. A stop does not wait for it. Zero means DefaultRecoverBackoff;
	// negative, no delay.
	Backoff time.Duration
}

// delay is how long the restart after a failure waits when earlier
// failures of the component within Period were kept before it.
func (p RecoverPolicy) delay(earlier int) time.Duration {
	b := cmp.Or(p.Backoff, DefaultRecoverBackoff)
	if earlier == 0 || b < 0 {
		return 0
	}
	d := min(b, p.period())
	for range earlier - 1 {
		d += min(d, p.period()-d) // doubled, at most Period, without overflow
	}
	return d
}

func (p RecoverPolicy) period() time.Duration {
	if p.Period <= 0 {
		return DefaultRecoverPeriod
	}
	return p.Period
}

// recovered records a failure of s that Recover kept, cause: within the
// policy, s is Recovering and its next instance waits delay; beyond it, s
// is Failed with err, an *IntensityError, and will not be restarted.
func (r *run) recovered(s *slot, cause *ComponentError) (delay time.Duration, err error) {
	p, now, n := r.h.RecoverPolicy, time.Now(), 0
	r.change(s, func() {
		s.kept = slices.DeleteFunc(s.kept, func(t time.Time) bool { return now.Sub(t) >= p.period() })
		if intensity := cmp.Or(p.Intensity, DefaultRecoverIntensity); intensity > 0 && len(s.kept) >= intensity {
			err = &IntensityError{Component: s.name, Failures: len(s.kept) + 1, Period: p.period(), Err: cause}
			s.failure = err
			return
		}
		delay = p.delay(len(s.kept))
		s.kept = append(s.kept, now)
		s.recoveries++
		n = s.recoveries
		s.lastRecov = &Recovery{At: now, Cause: cause.Err.Error()}
		s.recovering = cause
	})
	if err == nil {
		r.log.Info("Component failed; restarting it (Harness.Recover)", "component", s.name, "recoveries", n, "backoff", delay, "err", cause.Err)
	}
	return delay, err
}

// pause waits d, or until the run stops (false).
func (r *run) pause(d time.Duration) bool {
	if d <= 0 {
		return !r.isStopping()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.runCtx.Done():
		return false
	}
}
