package featurepub

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// retry calls f until it returns nil, waiting between attempts with
// exponential backoff from 500 ms up to maxBackoff (30 s if 0, jittered),
// logging each failure of action through ctx's logger; it reports false if
// ctx ended first.
func retry(ctx context.Context, action string, maxBackoff time.Duration, f func() error) bool {
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
		klog.FromContext(ctx).Info("Retrying", "action", action, "attempt", attempt, "err", err, "after", d.Round(time.Millisecond))
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
