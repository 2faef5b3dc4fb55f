package components

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// stopGrace is how long a component's API requests may go on after it was
// asked to stop (or lost its lease) before requestFence ends them, and how
// long kube-apiserver's pre-shutdown clean-ups may wait for etcd
// (boundedReconciler). With the datastore answering, those requests and
// clean-ups take milliseconds; with it gone, they would wait for
// upstream's own bounds: a request timeout of 60 s, a token request with
// no context at all.
const stopGrace = time.Second

// requestFence ends the HTTP requests made through the rest.Configs it
// wrapped once it is closed: requests in flight fail with its cause and
// new ones fail at once. It exists because upstream code makes requests
// that no context of the component reaches: kube-controller-manager's
// per-controller credentials (--use-service-account-credentials) fetch
// their tokens with context.TODO(), and a controller worker blocked there
// keeps its controller, and so upstream's Run, from returning until the
// apiserver answers; kube-apiserver's pre-shutdown hooks (the identity
// lease controller's Stop) wait for loopback requests made under a
// context that is cancelled only after those hooks returned. With the
// datastore gone they answer only at their timeouts, after the stop
// deadline. A fence closed stopGrace after the stop ends them instead.
type requestFence struct {
	ctx   context.Context
	close context.CancelCauseFunc
}

// newRequestFence returns an open fence for component's clients.
func newRequestFence() *requestFence {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &requestFence{ctx: ctx, close: cancel}
}

// wrap makes every request through cfg (and copies of cfg made later) end
// when the fence closes. Clients built from cfg before wrap are not
// affected.
func (f *requestFence) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &fencedRoundTripper{fence: f.ctx, next: rt} })
}

// closeAfter closes the fence grace after ctx ended, with a cause naming
// component. The returned func cancels that (for when the component
// returned first); the fence then stays open until closed otherwise.
func (f *requestFence) closeAfter(ctx context.Context, component string, grace time.Duration) (stop func()) {
	var timer *time.Timer
	timerSet := make(chan struct{})
	unhook := context.AfterFunc(ctx, func() {
		defer close(timerSet)
		timer = time.AfterFunc(grace, func() {
			f.close(fmt.Errorf("%s was asked to stop %s ago: its API requests are ended", component, grace))
		})
	})
	return func() {
		if unhook() {
			return // ctx had not ended: no timer
		}
		<-timerSet
		timer.Stop()
	}
}

// fencedRoundTripper runs each request under a context that also ends when
// the fence closes.
type fencedRoundTripper struct {
	fence context.Context
	next  http.RoundTripper
}

// RoundTrip sends req under a context that ends with req's or the fence's,
// whichever first; the response body, when closed, releases it.
func (rt *fencedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := context.Cause(rt.fence); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	unhook := context.AfterFunc(rt.fence, func() { cancel(context.Cause(rt.fence)) })
	release := func() { unhook(); cancel(nil) }
	resp, err := rt.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && req.Context().Err() == nil {
			err = fmt.Errorf("%w (%w)", err, cause)
		}
		release()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: release}
	return resp, nil
}

// WrappedRoundTripper is utilnet.RoundTripperWrapper's: client-go finds the
// transport underneath through it.
func (rt *fencedRoundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

var _ utilnet.RoundTripperWrapper = &fencedRoundTripper{}

// releasingBody releases a fenced request's context when the body is
// closed.
type releasingBody struct {
	io.ReadCloser
	release func()
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}
