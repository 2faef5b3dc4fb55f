// Package fence bounds a component's API requests once the component was
// asked to stop: the Fence. See Fence for why upstream needs it.
package fence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// Fence bounds the HTTP requests made through the rest.Configs it
// wrapped once the component was asked to stop: from then on, a request
// in flight, or made later, fails if it has not answered within the
// fence's grace, with the stop as its cause. A request that
// answers in time is not touched, so a stop with the datastore answering
// changes nothing — a controller-manager stopped while it still builds its
// controllers builds them all, as upstream expects (failing those requests
// would make upstream's Run return without shutting down the work queues
// already made). It exists because upstream code makes requests that no
// context of the component reaches: kube-controller-manager's
// per-controller credentials (--use-service-account-credentials) fetch
// their tokens with context.TODO(), and a controller worker blocked there
// keeps its controller, and so upstream's Run, from returning until the
// apiserver answers; kube-apiserver's pre-shutdown hooks (the identity
// lease controller's Stop) wait for loopback requests made under a
// context that is cancelled only after those hooks returned. With the
// datastore gone those answer only at their timeouts (60 s), after any
// sensible stop deadline.
//
// A fence made to close (kube-apiserver's loopback clients) also fails
// every request made once the grace after the stop is over, at once: the
// identity lease controller's Stop waits for a renew that retries five
// updates one after the other, each of which would otherwise get its own
// grace. The apiserver is past its start-up by then (it stops only once it
// was ready), so only its stopping controllers make such requests.
//
// Handler bounds, the same way, the requests a server serves: kube-
// apiserver's own, whose graceful stop waits for each of them.
type Fence struct {
	grace   time.Duration
	stopped context.Context // ends, with its cause, when the component was asked to stop
	stop    context.CancelCauseFunc
	closed  context.Context // ends grace after stopped, if the fence closes; else never
	close   context.CancelCauseFunc
	held    <-chan struct{}                 // requests wait until it is closed; nil: no wait
	park    atomic.Pointer[<-chan struct{}] // while open, a request the stop ended parks (Park); nil: none does
	parked  chan struct{}                   // closed at the first parked request
	once    sync.Once                       // closes parked
	unpark  chan struct{}                   // parked requests return when closed: only tests close it
}

// New returns a fence whose requests get grace once stopped;
// with closes, requests made after that grace fail at once.
func New(grace time.Duration, closes bool) *Fence {
	stopped, stop := context.WithCancelCause(context.Background())
	closed, closeFn := context.WithCancelCause(context.Background())
	f := &Fence{grace: grace, stopped: stopped, stop: stop, closed: closed, close: closeFn, parked: make(chan struct{}), unpark: make(chan struct{})}
	if closes {
		context.AfterFunc(stopped, func() {
			time.AfterFunc(grace, func() { closeFn(context.Cause(stopped)) })
		})
	}
	return f
}

// Hold makes every request through the fence wait until open is closed
// (while its dependency starts: a component started early, see
// harness.EarlyStarter); a request still held when its context ends or
// the fence stops fails with that cause instead of being sent. Once open
// is closed, requests are sent and bounded as without a hold, after a stop
// too. Call it before any request is made through the fence.
func (f *Fence) Hold(open <-chan struct{}) { f.held = open }

// Park makes a request that the stop ended — its grace over, no answer —
// block instead of returning its error, for as long as the process lives,
// while until is open (nil: never): kube-controller-manager's build of its
// controllers, two of whose upstream constructors exit the process when a
// request fails (the pod certificate request cleaner's ClientOrDie and the
// namespace deleter's discovery: docs/components.md), stopped with the
// datastore not answering. Parked closes at the first such request; the
// caller then stops waiting for the code that made it (its goroutine is
// left blocked). A request answered in time, one the caller's context
// ended, and one the stop ends before Park was called or once until is
// closed are not parked. It may be called while requests are in flight
// (the controller-manager calls it as upstream's Run begins, once it
// leads: before that, its Config's requests must fail at the stop).
func (f *Fence) Park(until <-chan struct{}) { f.park.Store(&until) }

// Parked returns a channel closed once a request was parked (Park).
func (f *Fence) Parked() <-chan struct{} { return f.parked }

// Stopped returns a context that ends, with its cause, when the fence was
// marked stopped.
func (f *Fence) Stopped() context.Context { return f.stopped }

// Wrap bounds every request through cfg (and copies of cfg made later).
// Clients built from cfg before Wrap are not affected.
func (f *Fence) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &roundTripper{fence: f, next: rt} })
}

// WrapDelegatedAuth fences the clients upstream makes for delegated
// authentication and authorization (--authentication-kubeconfig,
// --authorization-kubeconfig): the scheduler's and controller-manager's
// Config reads the extension-apiserver-authentication ConfigMap through
// them with context.TODO(), so a stop while the datastore does not answer
// would wait for the apiserver's request timeout. A wrapper already set
// is kept, under this one.
func (f *Fence) WrapDelegatedAuth(authn *apiserveroptions.DelegatingAuthenticationOptions, authz *apiserveroptions.DelegatingAuthorizationOptions) {
	wrap := func(rt http.RoundTripper) http.RoundTripper { return &roundTripper{fence: f, next: rt} }
	if authn != nil {
		authn.CustomRoundTripperFn = transport.Wrappers(authn.CustomRoundTripperFn, wrap)
	}
	if authz != nil {
		authz.CustomRoundTripperFn = transport.Wrappers(authz.CustomRoundTripperFn, wrap)
	}
}

// MarkStopped starts the grace of every request, with a cause naming
// component and why. Later calls change nothing.
func (f *Fence) MarkStopped(component, why string) {
	f.stop(fmt.Errorf("%s %s: its API requests get %s to answer", component, why, f.grace))
}

// StopWhen marks the fence stopped when ctx ends (see MarkStopped). The
// returned func cancels that, for when the component returned first.
func (f *Fence) StopWhen(ctx context.Context, component string) (cancel func()) {
	return f.StopAfter(ctx, component, nil)
}

// StopAfter is StopWhen, but once ctx ended it waits for gate to be closed
// too (no wait with a nil gate): kube-controller-manager's lost lease
// while upstream still builds its controllers, whose requests must not
// fail then (the controller-manager adapter's Run). The returned func cancels it, the
// wait included.
func (f *Fence) StopAfter(ctx context.Context, component string, gate <-chan struct{}) (cancel func()) {
	cancelled := make(chan struct{})
	unhook := context.AfterFunc(ctx, func() {
		if gate != nil {
			select {
			case <-gate:
			case <-cancelled:
				return
			}
		}
		why := "was asked to stop"
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
			why = "stopped (" + cause.Error() + ")"
		}
		f.MarkStopped(component, why)
	})
	var once sync.Once
	return func() {
		unhook()
		once.Do(func() { close(cancelled) })
	}
}

// roundTripper gives each request grace once its fence is stopped.
type roundTripper struct {
	fence *Fence
	next  http.RoundTripper
}

// RoundTrip sends req under a context that also ends grace after the
// fence stopped (or after req was made, if later); the response body, when
// closed, releases it.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	f := rt.fence
	if err := context.Cause(f.closed); err != nil {
		return nil, err
	}
	if f.held != nil && !isClosed(f.held) {
		// Only a request still held fails once the fence stopped: with the
		// hold open, a select over both would pick the stop half the time,
		// failing at once a request the stop gives grace (a controller-
		// manager's build, stopped, would then fail at a constructor that
		// exits the process on a failed request).
		select {
		case <-f.held:
		case <-req.Context().Done():
			return nil, context.Cause(req.Context())
		case <-f.stopped.Done():
			return nil, context.Cause(f.stopped)
		}
	}
	ctx, release := f.bound(req.Context())
	resp, err := rt.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		endedByStop := false
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && req.Context().Err() == nil {
			err = fmt.Errorf("%w (%w)", err, cause)
			endedByStop = true
		}
		release()
		if until := f.park.Load(); endedByStop && until != nil && !isClosed(*until) {
			f.once.Do(func() { close(f.parked) })
			<-f.unpark // parked (Park): its caller must not see the error
		}
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// bound returns a context of parent's that also ends, with the fence's
// cause, grace after the fence stopped (or after bound was called, if
// later). release stops that and cancels the context; call it once the
// work under it is done.
func (f *Fence) bound(parent context.Context) (ctx context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(parent)
	var (
		mu       sync.Mutex
		timer    *time.Timer
		released bool
	)
	unhook := context.AfterFunc(f.stopped, func() {
		mu.Lock()
		defer mu.Unlock()
		if !released {
			timer = time.AfterFunc(f.grace, func() { cancel(context.Cause(f.stopped)) })
		}
	})
	return ctx, func() {
		unhook()
		mu.Lock()
		released = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel(nil)
	}
}

// Handler bounds each request h serves as bound does: once the fence
// stopped, a request still being served after the grace has its context
// cancelled, with the fence's cause. For kube-apiserver's own handler
// chain (the apiserver adapter's Run): upstream's graceful stop waits until every
// request in flight has returned — each bounded only by the request
// timeout (60 s) — and with the datastore gone, any client's write in
// flight at the SIGTERM (a kubelet's, kubectl's) waits in etcd's client
// for that long. Cancelling its context ends the etcd call, the handler
// answers with an error, and the drain completes.
func (f *Fence) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release := f.bound(r.Context())
		defer release()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// WrappedRoundTripper is utilnet.RoundTripperWrapper's: client-go finds the
// transport underneath through it.
func (rt *roundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

var _ utilnet.RoundTripperWrapper = &roundTripper{}

// releasingBody releases a fenced request's context when the body is
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

// Close closes the body and releases the request's context.
func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
