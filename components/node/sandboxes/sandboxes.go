// Package sandboxes removes a node's pod sandboxes through the CRI: what
// the node's runtime does at its stop, and what the node benchmark's
// supervisor does the same way. It imports the CRI API only, not the
// kubelet.
package sandboxes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Concurrency bounds how many sandboxes RemoveAll stops at once: each
// stop runs the CNI plugins' DEL (processes) and the runtime's kill, work
// for the CPUs; more at once only takes the CPUs from the rest of the
// process stopping at the same time.
func Concurrency() int { return 2 * runtime.NumCPU() }

// RemoveAll stops and removes every pod sandbox the CRI lists,
// Concurrency at a time, until ctx ends; it returns how many it removed
// and the errors joined, one per sandbox not removed (named), those not
// tried for ctx's end included.
func RemoveAll(ctx context.Context, client runtimeapi.RuntimeServiceClient, logger klog.Logger) (int, error) {
	resp, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return 0, fmt.Errorf("listing pod sandboxes: %w", err)
	}
	errs := make([]error, len(resp.Items))
	var (
		wg      sync.WaitGroup
		removed atomic.Int32
		slots   = make(chan struct{}, Concurrency())
	)
	for i, sb := range resp.Items {
		name := sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()
		if !acquire(ctx, slots) {
			errs[i] = fmt.Errorf("pod sandbox %s not stopped: %w", name, context.Cause(ctx))
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if _, err := client.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				errs[i] = fmt.Errorf("stopping pod sandbox %s: %w", name, err)
				return
			}
			if _, err := client.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
				errs[i] = fmt.Errorf("removing pod sandbox %s: %w", name, err)
				return
			}
			removed.Add(1)
			logger.V(2).Info("Removed pod sandbox", "pod", name)
		})
	}
	wg.Wait()
	return int(removed.Load()), errors.Join(errs...)
}

// acquire takes a slot unless ctx has ended: a slot freed at ctx's end
// (select picks at random among ready cases) is given back.
func acquire(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		if ctx.Err() != nil {
			<-slots
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}
