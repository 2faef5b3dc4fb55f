package components

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/internal/election"
	"github.com/kubeharness/kubeharness/components/internal/fence"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/harness"
)

// stopGrace is how long each of a component's API requests may take once
// the component was asked to stop (or lost its lease) before its fence
// (package internal/fence) ends it, and how long each of kube-apiserver's
// reconciler writes may take then (package internal/guard). With the
// datastore answering, those requests and clean-ups take milliseconds;
// with it gone, they would wait for upstream's own bounds: a request
// timeout of 60 s, a token request with no context at all.
const stopGrace = time.Second

// servedGrace is how long each request kube-apiserver serves may still
// take once it was asked to stop (fence.Fence.Handler): longer than
// stopGrace, so that a client's request that answers in a few seconds with
// the datastore answering still does, and short enough that the
// apiserver's stop, which waits for every request in flight, fits its
// stop timeout (8 s in k3s-like) with the datastore gone.
const servedGrace = 3 * time.Second

// lifecycle is what the three adapters share around their upstream wiring:
// a value runs once (run), takes its informer name (takeInformerName),
// fences its clients (clientFence), reports readiness once (ready,
// Ready), and, for the scheduler and the controller-manager, runs
// upstream's Run only while it holds its lease (runElected). Each adapter
// embeds one, made by newLifecycle.
type lifecycle struct {
	name    string
	elector *election.Elector // nil: the component has no leader election

	ready probe.Readiness

	// mu guards the embedding adapter's own run state.
	mu sync.Mutex
}

// newLifecycle returns the lifecycle of the component name; e is its
// elector, or nil.
func newLifecycle(name string, e *election.Elector) *lifecycle {
	return &lifecycle{name: name, elector: e}
}

// run is Component.Run's bookkeeping around body, the adapter's upstream
// wiring: it refuses to run an adapter whose AddFlags was not called
// (configured false); it returns nil without calling body when ctx is
// already cancelled (stopped before it started: nothing to undo). The
// harness has put the component's name in the context's logger.
func (l *lifecycle) run(ctx context.Context, configured bool, body func(context.Context) error) error {
	if !configured {
		return fmt.Errorf("%s: Run before AddFlags", l.name)
	}
	if ctx.Err() != nil {
		return nil
	}
	return body(ctx)
}

// Ready blocks until the component was marked ready or its elector saw
// another instance hold the lease (a standby counts as ready), and returns
// nil; or until ctx ended (ctx's error). It does not watch Run: the harness
// ends Ready's context when Run returned, and it alone decides that Run
// returned before Ready.
func (l *lifecycle) Ready(ctx context.Context) error {
	var standby <-chan struct{} // nil: never
	if l.elector != nil {
		standby = l.elector.Standby()
	}
	select {
	case <-l.ready.Done():
		return nil
	case <-standby:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeInformerName registers the component's client-go informer name,
// which is process-wide (cache.NewInformerName), and returns it with its
// release. The error names the component, then hint.
func (l *lifecycle) takeInformerName(hint string) (*cache.InformerName, func(), error) {
	n, err := cache.NewInformerName(l.name)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w%s", l.name, err, hint)
	}
	return n, n.Release, nil
}

// clientFence returns the fence (stopGrace) of a component's clients,
// marked stopped when ctx ends, with upstream's delegated-authentication
// and -authorization clients already fenced: the scheduler's and
// controller-manager's Config read the extension-apiserver-authentication
// ConfigMap through them with context.TODO(). Its requests are held until
// apiServerUp is closed (fence.Hold). Call done when Run's body returns.
func (l *lifecycle) clientFence(ctx context.Context, apiServerUp <-chan struct{}, authn *apiserveroptions.DelegatingAuthenticationOptions, authz *apiserveroptions.DelegatingAuthorizationOptions) (f *fence.Fence, done func()) {
	f = fence.New(stopGrace, false)
	f.Hold(apiServerUp)
	unhook := f.StopWhen(ctx, l.name)
	f.WrapDelegatedAuth(authn, authz)
	return f, func() {
		unhook()
		f.MarkStopped(l.name, "returned")
	}
}

// startsEarly is harness.EarlyStarter's for the scheduler and the
// controller-manager: they start while kube-apiserver is still coming up,
// so that what their start needs no apiserver for (self-signed serving
// certificates, options, the scheduler's framework) overlaps its start;
// every request they make waits until it is ready (dependenciesReady).
func startsEarly(dependency string) bool { return dependency == APIServerName }

// dependenciesReady returns a channel closed once the harness reports
// every dependency of the component whose Run was given ctx ready
// (harness.AwaitDependencies; at once outside a harness); never closed if
// ctx ends first. Its goroutine returns by then.
func dependenciesReady(ctx context.Context) <-chan struct{} {
	up := make(chan struct{})
	go func() {
		if harness.AwaitDependencies(ctx) == nil {
			close(up)
		}
	}()
	return up
}

// awaitAPIServer is what an early starter (startsEarly) does once its
// setup — upstream's Setup or Config, its requests held by the fence until
// the apiserver is ready — returned setupErr: it waits until the apiserver
// is ready (up closed: proceed) unless ctx ends first, when it closes what
// the setup opened (unserved) and the component returns nil. A setup that
// failed because the component was asked to stop while its requests were
// held is that stop (nil) too; any other setup error is returned.
func awaitAPIServer(ctx context.Context, up <-chan struct{}, setupErr error, unserved func()) (proceed bool, err error) {
	if setupErr != nil {
		if ctx.Err() != nil {
			klog.FromContext(ctx).Info("Stopped while starting", "err", setupErr)
			return false, nil
		}
		return false, setupErr
	}
	select {
	case <-up:
		return true, nil
	case <-ctx.Done():
		unserved()
		return false, nil
	}
}

// upstreamSays reports whether err is upstream's error with message msg
// (one of upstream_strings.go): upstream returns those as plain strings,
// with no sentinel or type to match instead.
func upstreamSays(err error, msg string) bool {
	return err != nil && strings.Contains(err.Error(), msg)
}

// upstreamRun is an upstream component's Run, for runElected.
type upstreamRun struct {
	// run is upstream's Run; it returns when its context ends.
	run func(ctx context.Context) error
	// ready blocks until the running component is ready (nil) or ctx ends.
	ready func(ctx context.Context) error
	// configz is the configz name upstream's Run registers and never deletes.
	configz string
	// election is the leader election the adapter resolved; with it
	// enabled, the lease's lock uses kubeconfig (see election.Settings.Lease).
	election   election.Settings
	kubeconfig *rest.Config
	// events and eventSource record the lease's events (see
	// election.RecordEvents): a client configuration, and the source.
	events      *rest.Config
	eventSource string
	// unserved closes what upstream's Run owns once called (a bound secure
	// port, an event broadcaster), for when it is not called: a
	// leader-election set-up error, a standby that never led, a stop
	// before the lease. nil: nothing.
	unserved func()
	// stopMessages are upstream's errors (upstream_strings.go) that mean a
	// clean stop when run returns them after its context ended; for each,
	// note, if set, is logged then.
	stopMessages []upstreamMessage
	// failMessages are upstream's errors that, returned before the stop,
	// are wrapped with cause.
	failMessages []upstreamMessage
}

// upstreamMessage is one of upstream's error messages and what runElected
// makes of it (upstreamRun).
type upstreamMessage struct {
	text  string
	note  func(klog.Logger) // stopMessages: logged when matched
	cause error             // failMessages: wrapped when matched
}

// runElected runs u.run while the component holds its lease — through the
// lifecycle's elector (see election.Elector.Run), with the lease built
// from u.election the one way both elected adapters take theirs — or at
// once if leader election is off. It records u.election in the elector,
// for the adapters' LeaderElection methods. While u.run runs, the
// component is marked ready once u.ready returned nil. When u.run
// returned, u.configz is deleted, so that a later start can register it
// again; if u.run was never called, u.unserved is. A u.run that returns
// nil before its context ended is an error; an error it returns after its
// context ended is logged, not returned (the stop interrupted its
// start-up), or, if it is one of u.stopMessages, that message's note.
func (l *lifecycle) runElected(ctx context.Context, u upstreamRun) error {
	ran := false
	defer func() {
		if !ran && u.unserved != nil {
			u.unserved()
		}
	}()
	work := func(wctx context.Context) error {
		ran = true
		defer configz.Delete(u.configz)
		stopProbe := l.ready.MarkWhen(wctx, u.ready)
		defer stopProbe()
		return l.upstreamResult(wctx, u, u.run(wctx))
	}
	le := u.election
	var lease *leaderelection.LeaderElectionConfig
	if le.Enabled {
		var err error
		if lease, err = le.Lease(l.name, u.kubeconfig); err != nil {
			return err
		}
	}
	l.elector.SetSettings(le)
	if lease == nil {
		return work(ctx)
	}
	stopEvents := election.RecordEvents(ctx, lease.Lock, u.events, u.eventSource)
	defer stopEvents()
	return l.elector.Run(ctx, *lease, work)
}

// upstreamResult is what runElected makes of err, upstream's Run's
// return under wctx.
func (l *lifecycle) upstreamResult(wctx context.Context, u upstreamRun, err error) error {
	logger := klog.FromContext(wctx)
	switch {
	case err == nil && wctx.Err() == nil:
		return fmt.Errorf("%s: Run returned before it was asked to stop", l.name)
	case err != nil && wctx.Err() != nil:
		for _, m := range u.stopMessages {
			if upstreamSays(err, m.text) {
				if m.note != nil {
					m.note(logger)
				}
				return nil
			}
		}
		// Asked to stop while it was still starting: upstream's start-up
		// returns whatever its cancelled waits say (kube-controller-
		// manager's node IPAM: "failed to list all nodes in 10m0s,
		// cannot proceed without updating CIDR map"). That is the stop
		// that was asked for, not the component failing.
		logger.Info("Stopped while starting", "err", err)
		return nil
	case err != nil:
		for _, m := range u.failMessages {
			if upstreamSays(err, m.text) {
				return fmt.Errorf("%s: %w: %w", l.name, m.cause, err)
			}
		}
	}
	return err
}

// closeUnusedListener closes the secure port upstream bound for a server
// that was never served (serving nil: none).
func closeUnusedListener(serving *genericapiserver.SecureServingInfo) {
	if serving != nil && serving.Listener != nil {
		_ = serving.Listener.Close()
	}
}
