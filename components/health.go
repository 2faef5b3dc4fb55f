package components

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	certutil "k8s.io/client-go/util/cert"
)

// servingProbe GETs a path of a component's own secure server (the
// scheduler's or the controller-manager's) over TLS. It trusts exactly the
// certificate the server is configured to present, read from the
// in-process serving configuration and pinned byte for byte, so it needs no
// CA and works with self-signed (in-memory) serving certificates. The paths
// it asks for (/healthz) are upstream's always-allowed paths, so it needs no
// credentials either.
type servingProbe struct {
	serving *genericapiserver.SecureServingInfo
	client  *http.Client
}

func newServingProbe(serving *genericapiserver.SecureServingInfo) *servingProbe {
	p := &servingProbe{serving: serving}
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

func (p *servingProbe) verifyPinned(raw [][]byte, _ [][]*x509.Certificate) error {
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

// get returns nil when path answers 200 "ok".
func (p *servingProbe) get(ctx context.Context, path string) error {
	status, body, err := p.fetch(ctx, path, 4096)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("%s: %d %s", path, status, bytes.TrimSpace(body))
	}
	return nil
}

// fetch GETs path and returns the status and up to limit bytes of the body.
func (p *servingProbe) fetch(ctx context.Context, path string, limit int64) (int, []byte, error) {
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

// waitOK polls path every 100 ms until it answers 200 or ctx ends.
func (p *servingProbe) waitOK(ctx context.Context, path string) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		last = p.get(ctx, path)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last probe: %v)", err, last)
	}
	return err
}

// waitHealthz waits until the component's own /healthz answers ok (see
// servingProbe); with no secure serving (--secure-port=0) at once.
func waitHealthz(ctx context.Context, serving *genericapiserver.SecureServingInfo) error {
	if serving == nil {
		return nil
	}
	return newServingProbe(serving).waitOK(ctx, "/healthz")
}

// waitControllersBuilt waits until kube-controller-manager has built its
// controllers: upstream's BuildControllers registers a /healthz check per
// controller it built, all at once after the last one, so the first
// verbose /healthz that lists a check named after one of known (upstream's
// KnownControllers) says the building is over. It polls every 250 ms until
// then (nil) or until ctx ends (its error). With no secure serving there
// is nothing to ask, and nothing to wait for: nil at once, as
// waitHealthz.
func waitControllersBuilt(ctx context.Context, serving *genericapiserver.SecureServingInfo, known []string) error {
	if serving == nil {
		return nil
	}
	names := make(map[string]bool, len(known))
	for _, n := range known {
		names[n] = true
	}
	p := newServingProbe(serving)
	return wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, body, err := p.fetch(ctx, "/healthz?verbose", 1<<16)
		return err == nil && listsCheck(string(body), names), nil
	})
}

// listsCheck reports whether a verbose /healthz body ("[+]name ok",
// "[-]name failed: …" lines) lists a check with one of names.
func listsCheck(body string, names map[string]bool) bool {
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, "[+]")
		if !ok {
			rest, ok = strings.CutPrefix(line, "[-]")
		}
		if name, _, _ := strings.Cut(rest, " "); ok && names[name] {
			return true
		}
	}
	return false
}
