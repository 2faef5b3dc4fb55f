package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	certutil "k8s.io/client-go/util/cert"
)

// Probe GETs paths of a component's own server. The paths it asks for
// (/healthz, /readyz) are upstream's always-allowed paths, so it needs no
// credentials.
type Probe struct {
	base   func() string // scheme://host:port
	client *http.Client
}

// New returns a probe of the secure server serving describes (the
// scheduler's or the controller-manager's). It trusts exactly the
// certificate the server is configured to present, read from the
// in-process serving configuration and pinned byte for byte, so it needs
// no CA and works with self-signed (in-memory) serving certificates.
func New(serving *genericapiserver.SecureServingInfo) *Probe {
	pin := func(raw [][]byte, _ [][]*x509.Certificate) error { return verifyPinned(serving, raw) }
	return &Probe{
		base: func() string { return "https://" + serving.Listener.Addr().String() },
		client: newClient(&tls.Config{
			MinVersion: tls.VersionTLS12,
			// Verification is the pin, not a CA chain.
			InsecureSkipVerify:    true, //nolint:gosec // pinned in VerifyPeerCertificate
			VerifyPeerCertificate: pin,
		}),
	}
}

// NewHTTP returns a probe of the plain HTTP server at addr (the kubelet's
// or kube-proxy's /healthz); an unspecified host is asked on loopback.
func NewHTTP(addr string) *Probe {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "127.0.0.1"
			if ip != nil && ip.To4() == nil {
				host = "::1"
			}
		}
		addr = net.JoinHostPort(host, port)
	}
	return &Probe{base: func() string { return "http://" + addr }, client: newClient(nil)}
}

func newClient(tlsConfig *tls.Config) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		// No idle connections outlive a probe: nothing to leak.
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConfig},
	}
}

func verifyPinned(serving *genericapiserver.SecureServingInfo, raw [][]byte) error {
	if len(raw) == 0 {
		return errors.New("no server certificate")
	}
	certPEM, _ := serving.Cert.CurrentCertKeyContent()
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return fmt.Errorf("reading the configured serving certificate: %w", err)
	}
	for _, c := range certs {
		if bytes.Equal(c.Raw, raw[0]) {
			return nil
		}
	}
	return errors.New("the server presented a certificate other than the one this component is configured to serve")
}

// Get returns nil when path answers 200.
func (p *Probe) Get(ctx context.Context, path string) error {
	status, body, err := p.Fetch(ctx, path, 4096)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: %d %s", path, status, bytes.TrimSpace(body))
	}
	return nil
}

// Fetch GETs path and returns the status and up to limit bytes of the body.
func (p *Probe) Fetch(ctx context.Context, path string, limit int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base()+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, body, err
}

// WaitOK polls path every 100 ms until it answers 200 (nil) or ctx ends.
func (p *Probe) WaitOK(ctx context.Context, path string) error {
	return Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error { return p.Get(ctx, path) })
}

// WaitHealthz waits until the component's own /healthz answers 200 (see
// New); with no secure serving (--secure-port=0) at once.
func WaitHealthz(ctx context.Context, serving *genericapiserver.SecureServingInfo) error {
	if serving == nil {
		return nil
	}
	return New(serving).WaitOK(ctx, "/healthz")
}
