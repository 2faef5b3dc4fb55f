package cluster

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/harness"
)

// publishRetry is how long a publisher waits after a failed publish.
const publishRetry = 2 * time.Second

// addPublisher adds a component named name, after the apiserver, that
// calls publish until it succeeds (every publishRetry, logging each new
// error once, "Publishing <what>; retrying"), is ready from then on, and,
// with every > 0, publishes again every that long until stopped.
func addPublisher(h *harness.Harness, name, what string, every time.Duration, publish func(context.Context) error) error {
	published := make(chan struct{})
	return h.Add(&harness.Func{
		ComponentName: name,
		RunFunc: func(ctx context.Context) error {
			var last string
			ready := false
			for {
				next := publishRetry
				err := publish(ctx)
				switch {
				case err == nil:
					if !ready {
						close(published)
						ready = true
					}
					if every <= 0 {
						<-ctx.Done()
						return nil
					}
					last, next = "", every
				case ctx.Err() != nil:
					return nil // stopped
				case err.Error() != last:
					klog.FromContext(ctx).Info("Publishing "+what+"; retrying", "err", err)
					last = err.Error()
				}
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(next):
				}
			}
		},
		ReadyFunc: func(ctx context.Context) error {
			select {
			case <-published:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}, nil, components.APIServerName)
}
