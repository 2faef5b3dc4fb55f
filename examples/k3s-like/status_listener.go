package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
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
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

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
