package components

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
)

// lifecycle is what the three adapters share around their upstream wiring:
// a value runs once (run), reports readiness once (markReady, Ready), and,
// for the scheduler and the controller-manager, runs upstream's Run only
// while it holds its lease (runElected). Each adapter embeds one, made by
// newLifecycle.
type lifecycle struct {
	name    string
	elector *elector // nil: the component has no leader election

	ready     chan struct{} // closed by markReady
	readyOnce sync.Once

	// mu guards the embedding adapter's own run state.
	mu sync.Mutex
}

// newLifecycle returns the lifecycle of the component name; e is its
// elector, or nil.
func newLifecycle(name string, e *elector) *lifecycle {
	return &lifecycle{name: name, elector: e, ready: make(chan struct{})}
}

// run is Component.Run's bookkeeping around body, the adapter's upstream
// wiring: it refuses to run an adapter whose AddFlags was not called
// (configured false); it returns nil without calling body when ctx is
// already cancelled (stopped before it started: nothing to undo); and it
// gives body a context whose logger carries the component's name.
func (l *lifecycle) run(ctx context.Context, configured bool, body func(context.Context) error) error {
	if !configured {
		return fmt.Errorf("%s: Run before AddFlags", l.name)
	}
	if ctx.Err() != nil {
		return nil
	}
	return body(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("component", l.name)))
}

// markReady reports the component ready; later calls do nothing.
func (l *lifecycle) markReady() { l.readyOnce.Do(func() { close(l.ready) }) }

// Ready blocks until the component was marked ready or its elector saw
// another instance hold the lease (a standby counts as ready), and returns
// nil; or until ctx ended (ctx's error). It does not watch Run: the harness
// ends Ready's context when Run returned, and it alone decides that Run
// returned before Ready.
func (l *lifecycle) Ready(ctx context.Context) error {
	var standby <-chan struct{} // nil: never
	if l.elector != nil {
		standby = l.elector.standby
	}
	select {
	case <-l.ready:
		return nil
	case <-standby:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// upstreamRun is an upstream component's Run, for runElected.
type upstreamRun struct {
	// run is upstream's Run; it returns when its context ends.
	run func(ctx context.Context) error
	// ready blocks until the running component is ready (nil) or ctx ends.
	ready func(ctx context.Context) error
	// configz is the configz name upstream's Run registers and never deletes.
	configz string
	// events and eventSource record the lease's events (see
	// recordLeaderEvents): a client configuration, and the source.
	events      *rest.Config
	eventSource string
}

// runElected runs u.run while the component holds lease — through the
// lifecycle's elector (see elector.run) — or at once if lease is nil
// (leader election off), and reports whether u.run was called. While u.run
// runs, the component is marked ready once u.ready returned nil. When u.run
// returned, u.configz is deleted, so that a later start can register it
// again. A u.run that returns nil before its context ended is an error; an
// error it returns after its context ended is logged, not returned (the
// stop interrupted its start-up).
func (l *lifecycle) runElected(ctx context.Context, lease *leaderelection.LeaderElectionConfig, u upstreamRun) (ran bool, err error) {
	work := func(wctx context.Context) error {
		ran = true
		defer configz.Delete(u.configz)
		watchCtx, stopWatch := context.WithCancel(wctx)
		defer stopWatch()
		go func() {
			if u.ready(watchCtx) == nil {
				l.markReady()
			}
		}()
		err := u.run(wctx)
		switch {
		case err == nil && wctx.Err() == nil:
			err = fmt.Errorf("%s: Run returned before it was asked to stop", l.name)
		case err != nil && wctx.Err() != nil:
			// Asked to stop while it was still starting: upstream's start-up
			// returns whatever its cancelled waits say (kube-controller-
			// manager's node IPAM: "failed to list all nodes in 10m0s,
			// cannot proceed without updating CIDR map"). That is the stop
			// that was asked for, not the component failing.
			klog.FromContext(wctx).Info("Stopped while starting", "err", err)
			err = nil
		}
		return err
	}
	if lease == nil {
		err = work(ctx)
		return ran, err
	}
	stopEvents := recordLeaderEvents(ctx, lease.Lock, u.events, u.eventSource)
	err = l.elector.run(ctx, *lease, work)
	stopEvents()
	return ran, err
}
