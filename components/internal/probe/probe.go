// Package probe asks a component's own secure server (the scheduler's or
// the controller-manager's) over TLS pinned to the certificate the server
// is configured to present: a Probe.
package probe

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	certutil "k8s.io/client-go/util/cert"
)

// Probe GETs a path of a component's own secure server (the
// scheduler's or the controller-manager's) over TLS. It trusts exactly the
// certificate the server is configured to present, read from the
// in-process serving configuration and pinned byte for byte, so it needs no
// CA and works with self-signed (in-memory) serving certificates. The paths
// it asks for (/healthz) are upstream's always-allowed paths, so it needs no
// credentials either.
type Probe struct {
	serving *genericapiserver.SecureServingInfo
	client  *http.Client
}

// New returns a probe of the server serving describes.
func New(serving *genericapiserver.SecureServingInfo) *Probe {
	p := &Probe{serving: serving}
	p.client = &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			// No idle connections outlive a probe: nothing to leak.
			DisableKeepAlives: true,
			TLSClientConfig: &tls.Config{
				MinVersion: tls.VersionTLS12,
				// Verification is the pin below, not a CA chain.
				InsecureSkipVerify:    true, //nolint:gosec // pinned in VerifyPeerCertificate
				VerifyPeerCertificate: p.verifyPinned,
			},
		},
	}
	return p
}

func (p *Probe) verifyPinned(raw [][]byte, _ [][]*x509.Certificate) error {
	if len(raw) == 0 {
		return errors.New("no server certificate")
	}
	certPEM, _ := p.serving.Cert.CurrentCertKeyContent()
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

// Get returns nil when path answers 200 "ok".
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+p.serving.Listener.Addr().String()+path, nil)
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

// WaitOK polls path every 100 ms until it answers 200 or ctx ends.
func (p *Probe) WaitOK(ctx context.Context, path string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = p.Get(ctx, path)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last probe: %v)", err, last)
	}
	return err
}

// WaitHealthz waits until the component's own /healthz answers ok (see
// Probe); with no secure serving (--secure-port=0) at once.
func WaitHealthz(ctx context.Context, serving *genericapiserver.SecureServingInfo) error {
	if serving == nil {
		return nil
	}
	return New(serving).WaitOK(ctx, "/healthz")
}
