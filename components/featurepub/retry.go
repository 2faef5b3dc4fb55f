package featurepub

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// retry calls f until it returns nil, waiting between attempts with
// exponential backoff from 500 ms up to maxBackoff (30 s if 0, jittered),
// logging each failure with name; it reports false if ctx ended first.
func retry(ctx context.Context, name string, maxBackoff time.Duration, logf func(string, ...any), f func() error) bool {
	if maxBackoff <= 0 {
		maxBackoff = 30 * time.Second
	}
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 1 << 30, Cap: maxBackoff}
	for attempt := 1; ; attempt++ {
		err := f()
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		d := backoff.Step()
		logf("%s: attempt %d: %v; retrying in %s", name, attempt, err, d.Round(time.Millisecond))
		if !sleep(ctx, d) {
			return false
		}
	}
}

// sleep waits d, or until ctx ends (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
