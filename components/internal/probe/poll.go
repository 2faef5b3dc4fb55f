package probe

import (
	"context"
	"fmt"
	"time"
)

// Poll calls check at once, then every interval, until it returns nil
// (nil) or ctx ends: ctx's error, with check's last error.
func Poll(ctx context.Context, interval time.Duration, check func(context.Context) error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		last := check(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-tick.C:
		}
	}
}
