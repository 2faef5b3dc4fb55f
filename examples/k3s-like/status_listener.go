package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveStatus serves the harness status handler, and /leader-election,
// until ctx ends.
func (o *serverOptions) serveStatus(ctx context.Context, cp *controlPlane) error {
	useTLS, err := statusUsesTLS(o.statusAddress, o.statusTLS)
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if useTLS {
		if tlsConfig, err = statusServerTLS(o.layout()); err != nil {
			return fmt.Errorf("--status-address %s needs TLS: %w", o.statusAddress, err)
		}
	}
	ln, err := net.Listen("tcp", o.statusAddress)
	if err != nil {
		return fmt.Errorf("--status-address %s: %w", o.statusAddress, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: o.statusHandler(cp), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}
