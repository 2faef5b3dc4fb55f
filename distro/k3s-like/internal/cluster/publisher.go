package cluster

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/harness"
)

// addPublisher adds a component named name, after the apiserver, that
// calls publish every 2 s until it succeeds (logging each new error once,
// "Publishing <what>; retrying"), is ready from then on and runs until
// stopped.
func addPublisher(h *harness.Harness, name, what string, publish func(context.Context) error) error {
	published := make(chan struct{})
	return h.Add(&harness.Func{
		ComponentName: name,
		RunFunc: func(ctx context.Context) error {
			var last string
			err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
				if err := publish(ctx); err != nil {
					if err.Error() != last {
						klog.FromContext(ctx).Info("Publishing "+what+"; retrying", "err", err)
						last = err.Error()
					}
					return false, nil
				}
				return true, nil
			})
			if err != nil {
				return nil // stopped before it could publish
			}
			close(published)
			<-ctx.Done()
			return nil
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
