package inproc

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// NotServingError is a request's error while its Server has no handler:
// before Serve, or once Stop began.
type NotServingError struct{ Server string }

func (e *NotServingError) Error() string {
	return fmt.Sprintf("%s: not serving in this process", e.Server)
}

// errAborted ends a response whose handler panicked after its header was
// sent, as a reset stream would.
var errAborted = errors.New("the handler aborted the response")

// Server serves requests with a handler between Serve and Stop. Its zero
// value serves nothing; Name names it in errors.
type Server struct {
	Name string

	mu      sync.Mutex
	handler http.Handler
	labels  context.Context // Serve's: its profiler labels are the handlers'
	ctx     context.Context // ends at Stop: every request's context
	cancel  context.CancelFunc
	flight  sync.WaitGroup
}

// Serve makes h serve the requests made from now on until Stop. Handlers
// run with the profiler labels of ctx (the server component's), not the
// client's; ctx is not otherwise used.
func (s *Server) Serve(ctx context.Context, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
	s.labels = ctx
	s.ctx, s.cancel = context.WithCancel(context.Background())
}

// Stop refuses the requests made from now on, ends the context of every
// request in flight and waits up to grace for their handlers to return.
// It reports whether they all did.
func (s *Server) Stop(grace time.Duration) bool {
	s.mu.Lock()
	s.handler = nil
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.flight.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(grace):
		return false
	}
}

// acquire returns the handler and the server's context for one request,
// counted in flight until release.
func (s *Server) acquire() (h http.Handler, serverCtx, labels context.Context, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handler == nil {
		return nil, nil, nil, &NotServingError{Server: s.Name}
	}
	s.flight.Add(1)
	return s.handler, s.ctx, s.labels, nil
}

// Wrap makes cfg's requests go to s, innermost of cfg's transport
// wrappers. Each request carries cfg's client
// certificate (CertData or CertFile), if any, as its TLS peer certificate;
// its credentials in headers (a bearer token, basic auth) are added by
// client-go as before. cfg's TLS settings stay for what still goes over the
// network: upgrades, and the clients client-go derives from cfg without
// its transport wrappers (rest.AnonymousClientConfig).
func Wrap(cfg *rest.Config, s *Server) error {
	peer, err := peerCertificates(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%s: the client configuration's host %q is not a URL", s.Name, cfg.Host)
	}
	remote := "127.0.0.1"
	if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
		remote = ip.String()
	}
	state := &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true, NegotiatedProtocol: "h2",
		ServerName: u.Hostname(), PeerCertificates: peer}
	in := func(rt http.RoundTripper) http.RoundTripper {
		return &roundTripper{server: s, network: rt, tls: state, remoteAddr: net.JoinHostPort(remote, "0")}
	}
	cfg.WrapTransport = transport.Wrappers(in, cfg.WrapTransport)
	return nil
}

// peerCertificates are cfg's client certificate chain, nil without one.
func peerCertificates(cfg *rest.Config) ([]*x509.Certificate, error) {
	data := cfg.CertData
	if len(data) == 0 && cfg.CertFile != "" {
		var err error
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, fmt.Errorf("the client certificate: %w", err)
		}
	}
	var certs []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("the client certificate: %w", err)
		}
		certs = append(certs, c)
	}
	if len(data) > 0 && len(certs) == 0 {
		return nil, errors.New("the client certificate: no PEM certificate in it")
	}
	return certs, nil
}

type roundTripper struct {
	server     *Server
	network    http.RoundTripper // upgrades
	tls        *tls.ConnectionState
	remoteAddr string
}

// RoundTrip serves req with the server's handler in a goroutine of its
// own and returns once the handler sent its header (its first write, a
// flush, or its return): the body streams through a pipe, each write
// handed to the reader as it reads. Closing the body, or req's context
// ending, ends the handler's request context; a write after that fails.
func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Upgrade") != "" {
		return t.network.RoundTrip(req)
	}
	h, serverCtx, labels, err := t.server.acquire()
	if err != nil {
		closeBody(req)
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(req.Context())
	stopWithServer := context.AfterFunc(serverCtx, func() { cancel(&NotServingError{Server: t.server.Name}) })
	pr, pw := io.Pipe()
	endBody := context.AfterFunc(ctx, func() { pw.CloseWithError(context.Cause(ctx)) })
	w := &responseWriter{header: http.Header{}, body: pw, ctx: ctx, sent: make(chan struct{})}
	sreq := t.serverRequest(ctx, req)
	go func() {
		pprof.SetGoroutineLabels(labels)
		defer t.server.flight.Done()
		defer stopWithServer()
		defer cancel(nil) // as net/http's, once the handler returned
		defer closeBody(sreq)
		defer func() {
			p := recover()
			if p == nil {
				endBody()
				if ctx.Err() != nil { // ended first: its cause, not a clean end
					pw.CloseWithError(context.Cause(ctx))
					return
				}
				w.finish()
				pw.Close()
				return
			}
			if p != http.ErrAbortHandler {
				klog.Background().Error(fmt.Errorf("%v", p), "Panic serving an in-process request", "server", t.server.Name, "method", req.Method, "path", req.URL.Path)
			}
			w.abort()
			pw.CloseWithError(errAborted)
		}()
		h.ServeHTTP(w, sreq)
	}()

	select {
	case <-w.sent:
	case <-ctx.Done():
		select {
		case <-w.sent: // both: the header wins, as on a connection
		default:
			pr.CloseWithError(context.Cause(ctx))
			return nil, context.Cause(ctx)
		}
	}
	if w.aborted {
		pr.CloseWithError(errAborted)
		return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, errAborted)
	}
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode:    w.status,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        w.sentHeader,
		Body:          &responseBody{pr: pr, cancel: func() { cancel(context.Canceled) }},
		ContentLength: -1,
		Request:       req,
	}
	if n, err := strconv.ParseInt(w.sentHeader.Get("Content-Length"), 10, 64); err == nil {
		resp.ContentLength = n
	}
	if req.Method == http.MethodHead || !bodyAllowed(w.status) {
		resp.ContentLength = 0
	}
	return resp, nil
}

// CancelRequest does nothing: the caller ends the request's context too
// (http.Client's timeout, client-go's wrappers), which RoundTrip follows.
func (t *roundTripper) CancelRequest(*http.Request) {}

// serverRequest is req as a server's handler gets it.
func (t *roundTripper) serverRequest(ctx context.Context, req *http.Request) *http.Request {
	body := req.Body
	if body == nil {
		body = http.NoBody
	}
	header := req.Header.Clone()
	if header == nil {
		header = http.Header{}
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	u := &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	state := *t.tls
	return (&http.Request{
		Method:        req.Method,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        header,
		Body:          body,
		ContentLength: req.ContentLength,
		Host:          host,
		RemoteAddr:    t.remoteAddr,
		RequestURI:    u.RequestURI(),
		TLS:           &state,
	}).WithContext(ctx)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// responseWriter is the handler's side: it implements http.Flusher and
// http.CloseNotifier, as net/http's HTTP/2 writer does (the apiserver's
// wrappers look for both).
type responseWriter struct {
	ctx    context.Context
	body   *io.PipeWriter
	header http.Header

	mu          sync.Mutex
	status      int // WriteHeader's, until sent
	sentHeader  http.Header
	sent        chan struct{} // closed once the status and header are the client's
	aborted     bool
	closeNotify chan bool
}

func (w *responseWriter) Header() http.Header { return w.header }

// WriteHeader records code; the header is sent with the first write, a
// flush or the handler's return. Informational codes are not sent.
func (w *responseWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sentHeader != nil || w.status != 0 || code < 200 {
		return
	}
	w.status = code
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.sendLocked(p)
	w.mu.Unlock()
	if len(p) == 0 {
		return 0, nil
	}
	return w.body.Write(p)
}

// Flush sends the header; the body is the client's as it is written.
func (w *responseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(nil)
}

// CloseNotify is closed-and-true once the request's context ended.
func (w *responseWriter) CloseNotify() <-chan bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closeNotify == nil {
		w.closeNotify = make(chan bool, 1)
		context.AfterFunc(w.ctx, func() { w.closeNotify <- true })
	}
	return w.closeNotify
}

// sendLocked sends the status and a copy of the header, with
// net/http's default status and content sniffing, once.
func (w *responseWriter) sendLocked(first []byte) {
	if w.sentHeader != nil {
		return
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	h := w.header.Clone()
	if _, ok := h["Content-Type"]; !ok && len(first) > 0 && bodyAllowed(w.status) {
		h.Set("Content-Type", http.DetectContentType(first))
	}
	w.sentHeader = h
	close(w.sent)
}

// finish sends the header of a handler that returned without writing.
func (w *responseWriter) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sendLocked(nil)
}

// abort marks a response whose handler panicked before its header went.
func (w *responseWriter) abort() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.sentHeader == nil {
		w.aborted = true
		w.sentHeader = http.Header{}
		close(w.sent)
	}
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified
}

// responseBody is the client's side of the pipe; Close ends the
// handler's request.
type responseBody struct {
	pr     *io.PipeReader
	cancel func()
}

func (b *responseBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *responseBody) Close() error {
	b.pr.Close()
	b.cancel()
	return nil
}
