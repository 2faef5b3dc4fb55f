package status

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"time"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
)

// statusWriteTimeout bounds every response of the status endpoint: a
// little more than the longest profile (statusProfileMaxSeconds).
const statusWriteTimeout = (statusProfileMaxSeconds + 10) * time.Second

// Endpoint is a server's status endpoint (--status-address).
type Endpoint struct {
	Address string // --status-address
	TLS     string // --status-tls
	// Layout is the server's PKI: the serving certificate and the client CA
	// of a TLS endpoint.
	Layout          pki.Layout
	AdminKubeconfig string // asks the apiserver who may read what
	EnablePprof     bool   // --enable-pprof
	Harness         *harness.Harness
	// LeaderElection reports each elected component's leader election
	// (/leader-election); nil reports none.
	LeaderElection func() map[string]components.LeaderElection
	// Summaries are the node summarizer's last summaries, by gate
	// (/features/nodes); nil, or nil returned, serves none.
	Summaries func() map[string]featurepub.Summary
}

// Serve serves Handler until ctx ends: over TLS to whom statusGuard
// allows. It returns once it listens.
func (e Endpoint) Serve(ctx context.Context) error {
	useTLS, err := UsesTLS(e.Address, e.TLS)
	if err != nil {
		return err
	}
	guard := statusGuard{next: e.Handler()}
	var tlsConfig *tls.Config
	if useTLS {
		if tlsConfig, err = statusServerTLS(e.Layout); err != nil {
			return fmt.Errorf("--status-address %s needs TLS: %w", e.Address, err)
		}
		if guard.authz, err = statusAuthorizer(e.AdminKubeconfig); err != nil {
			return fmt.Errorf("--status-address %s: %w", e.Address, err)
		}
	}
	ln, err := net.Listen("tcp", e.Address)
	if err != nil {
		return fmt.Errorf("--status-address %s: %w", e.Address, err)
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
