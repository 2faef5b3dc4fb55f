package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"github.com/kubeharness/kubeharness/harness"
)

// statusWriteTimeout bounds every response of the status endpoint: a
// little more than the longest profile (statusProfileMaxSeconds).
const statusWriteTimeout = (statusProfileMaxSeconds + 10) * time.Second

// serveStatus serves the harness status handler, and /leader-election,
// until ctx ends: over TLS to whom statusGuard allows.
func (o *serverOptions) serveStatus(ctx context.Context, cp *controlPlane) error {
	useTLS, err := statusUsesTLS(o.statusAddress, o.statusTLS)
	if err != nil {
		return err
	}
	guard := statusGuard{next: o.statusHandler(cp)}
	var tlsConfig *tls.Config
	if useTLS {
		if tlsConfig, err = statusServerTLS(o.layout()); err != nil {
			return fmt.Errorf("--status-address %s needs TLS: %w", o.statusAddress, err)
		}
		if guard.authz, err = statusAuthorizer(o.adminKubeconfig()); err != nil {
			return fmt.Errorf("--status-address %s: %w", o.statusAddress, err)
		}
	}
	ln, err := net.Listen("tcp", o.statusAddress)
	if err != nil {
		return fmt.Errorf("--status-address %s: %w", o.statusAddress, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := newStatusServer(guard)
	// Its goroutines carry the pprof label component=status-endpoint, as a
	// component's do (harness.ProfileLabel), so that a profile taken through
	// it names what serving it costs.
	go pprof.Do(context.WithoutCancel(ctx), pprof.Labels(harness.ProfileLabel, statusEndpointLabel), func(context.Context) { _ = srv.Serve(ln) })
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// statusEndpointLabel is the pprof label value of the status endpoint's
// goroutines.
const statusEndpointLabel = "status-endpoint"

// newStatusServer is the status endpoint's server: every request read and
// answered within bounds (a TLS handshake too).
func newStatusServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      statusWriteTimeout,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}
