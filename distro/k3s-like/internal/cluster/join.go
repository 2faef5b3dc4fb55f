package cluster

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// Settings are what a server publishes for its agents' nodes (the
// ConfigMap kube-system/k3s-like-agent), besides the client CA.
type Settings struct {
	ClusterDNS    string
	ClusterDomain string
	ClusterCIDR   string // the Pods' CIDR, for kube-proxy and flannel
	// FlannelBackend is the server's --flannel-backend ("" from a server
	// that does not publish it).
	FlannelBackend string
}

// BootstrapKubeconfig is where an older release wrote the kubelet's
// --bootstrap-kubeconfig on an agent (with a bootstrap token): Join
// removes it.
func BootstrapKubeconfig(l pki.Layout) string {
	return filepath.Join(l.Dir, "bootstrap-kubelet.kubeconfig")
}

// Joined is what Join returns: the server's settings, and a client of the
// server (its CA pinned) that authenticates with a bootstrap token, for
// the node's client certificate (NodeClient.Ensure).
type Joined struct {
	Settings
	Bootstrap kubernetes.Interface
}

// JoinTimeout bounds Join's retries of a server that answers with the
// pinned CA but refuses the token: the join credentials are in the
// apiserver's token file from its start and a bootstrap token is known
// within a second of its creation, so a refusal that lasts is a wrong,
// rotated or expired token.
const JoinTimeout = 15 * time.Second

// JoinError is an agent that cannot join through the server it was
// given: a CA the token does not pin, or a token the server does not
// accept (for JoinTimeout once it answers). Nothing was written.
type JoinError struct {
	Server string
	Err    error
}

func (e *JoinError) Error() string {
	return fmt.Sprintf("joining the cluster through %s: %v", e.Server, e.Err)
}

func (e *JoinError) Unwrap() error { return e.Err }

// Join makes what an agent's node needs to join the server at u: the
// cluster CA pinned by the token (written to l.ServerCA) and the server's
// agent settings (the client CA written to l.ClientCA), signed by that CA
// (verifySettings: settings it did not sign are retried), read with the
// token's join credential (Token.JoinCredential: a server or agent
// token's), or with the token itself if it is a bootstrap token; with the
// former it also reads the server's current bootstrap token. It returns a
// client that authenticates with that bootstrap token. The kubelet asks
// for its serving certificate itself (the server's approver). It retries
// until the server answers and has published the settings, or ctx ends; a
// CA that does not match the token is a *JoinError at once, and so is a
// token the server, once it answered with the pinned CA, still does not
// accept after JoinTimeout. It removes the bootstrap kubeconfig of
// an older release.
func Join(ctx context.Context, log logr.Logger, u *url.URL, tok Token, l pki.Layout) (Joined, error) {
	log = log.WithName("join")
	credential := tok.JoinCredential()
	if tok.Kind == BootstrapToken {
		credential = tok.Secret
	}
	var (
		client       kubernetes.Interface
		ca           []byte
		pinned       *x509.Certificate
		settings     map[string]string
		bootstrap    string
		last         string
		unauthorized time.Time
	)
	retry := func(err error) (bool, error) {
		if err.Error() != last {
			log.Info("Joining the server; retrying", "server", u.String(), "err", err)
			last = err.Error()
		}
		return false, nil
	}
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if client == nil {
			if client, ca, err = pinnedClient(ctx, u, tok, credential, "k3s-like-agent"); err != nil {
				var pe *caPinError
				if errors.As(err, &pe) {
					return false, &JoinError{Server: u.String(), Err: err}
				}
				return retry(err)
			}
			certs, err := certutil.ParseCertsPEM(ca)
			if err != nil {
				return false, &JoinError{Server: u.String(), Err: fmt.Errorf("the pinned CA: %w", err)}
			}
			pinned = certs[0]
		}
		cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
		if apierrors.IsUnauthorized(err) {
			if unauthorized.IsZero() {
				unauthorized = time.Now()
			}
			why := "the server does not accept the token (another cluster's, one rotated away, or the server's release is older than the agent's: upgrade servers first)"
			if tok.Kind == BootstrapToken {
				id, _, _ := strings.Cut(tok.Secret, ".")
				why = fmt.Sprintf("the server does not accept the bootstrap token %s: it expired, was deleted, or was never made (k3s-like token create makes one)", id)
			}
			if time.Since(unauthorized) > JoinTimeout {
				return false, &JoinError{Server: u.String(), Err: fmt.Errorf("%s: %w", why, err)}
			}
			return retry(fmt.Errorf("%s: %w", why, err))
		}
		unauthorized = time.Time{}
		if err != nil {
			return retry(err)
		}
		// The settings, the kubelet's client CA among them, count only if
		// the CA the token pins signed them: kube-system's ConfigMaps are
		// not the agent's trust.
		if err := verifySettings(pinned, cm.Data); err != nil {
			return retry(err)
		}
		if tok.Kind == BootstrapToken {
			bootstrap = tok.Secret
		} else if bootstrap, err = bootstrapToken(ctx, client, cm.Data[settingBootstrapToken], time.Now()); err != nil {
			return retry(err)
		}
		settings = cm.Data
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return Joined{}, &JoinError{Server: u.String(), Err: fmt.Errorf("stopped before the server answered (last: %s)", last)}
		}
		return Joined{}, err
	}
	if _, err := certutil.ParseCertsPEM([]byte(settings[settingClientCA])); err != nil {
		return Joined{}, fmt.Errorf("the server's agent settings (kube-system/%s): %s: %w", agentSettings, settingClientCA, err)
	}
	if cidr := settings[settingClusterCIDR]; cidr != "" {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return Joined{}, fmt.Errorf("the server's agent settings (kube-system/%s): %s=%s: %w", agentSettings, settingClusterCIDR, cidr, err)
		}
	}
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return Joined{}, err
	}
	if err := atomicfile.Write(l.ServerCA().CertFile, ca, 0o644); err != nil {
		return Joined{}, err
	}
	if err := atomicfile.Write(l.ClientCA().CertFile, []byte(settings[settingClientCA]), 0o644); err != nil {
		return Joined{}, err
	}
	if err := os.Remove(BootstrapKubeconfig(l)); err != nil && !os.IsNotExist(err) {
		return Joined{}, err
	}
	bc, err := newPinnedClient(u, ca, bootstrap, "k3s-like-agent")
	if err != nil {
		return Joined{}, err
	}
	log.Info("Joined: the cluster CA is the one the token pins", "server", u.String(), "caSHA256", tok.CAHash, "token", string(cmp.Or(tok.Kind, ServerToken)))
	return Joined{Bootstrap: bc, Settings: Settings{ClusterDNS: settings[settingClusterDNS], ClusterDomain: settings[settingClusterDomain], ClusterCIDR: settings[settingClusterCIDR],
		FlannelBackend: settings[settingFlannel]}}, nil
}

// pinnedClient is a client of the server at u that trusts only the CA
// the token pins (pinServerCA: nothing is sent before) and authenticates
// with the bearer credential, and that CA (PEM); a *caPinError for a
// server that does not show it.
func pinnedClient(ctx context.Context, u *url.URL, tok Token, credential, userAgent string) (kubernetes.Interface, []byte, error) {
	ca, err := pinServerCA(ctx, u, tok)
	if err != nil {
		return nil, nil, err
	}
	c, err := newPinnedClient(u, ca, credential, userAgent)
	return c, ca, err
}

// newPinnedClient is a client of the server at u trusting ca only.
func newPinnedClient(u *url.URL, ca []byte, credential, userAgent string) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(&rest.Config{
		Host: u.String(), BearerToken: credential, UserAgent: userAgent,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
	})
}

// bootstrapToken reads the bootstrap token id (ID.SECRET) and checks it
// has not expired at now; its errors never carry the secret.
func bootstrapToken(ctx context.Context, client kubernetes.Interface, id string, now time.Time) (string, error) {
	if id == "" {
		return "", fmt.Errorf("the server's agent settings (kube-system/%s) name no bootstrap token yet (%s)", agentSettings, settingBootstrapToken)
	}
	s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, bootstrapSecretPrefix+id, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the bootstrap token %s: %w", id, err)
	}
	secret := string(s.Data["token-secret"])
	if s.Type != corev1.SecretTypeBootstrapToken || string(s.Data["token-id"]) != id || secret == "" {
		return "", fmt.Errorf("kube-system/%s%s is not the bootstrap token %s", bootstrapSecretPrefix, id, id)
	}
	exp, err := time.Parse(time.RFC3339, string(s.Data["expiration"]))
	if err != nil {
		return "", fmt.Errorf("kube-system/%s%s: expiration=%q: %w", bootstrapSecretPrefix, id, s.Data["expiration"], err)
	}
	if !exp.After(now) {
		return "", fmt.Errorf("the bootstrap token %s expired at %s; waiting for the server to renew it", id, exp.Format(time.RFC3339))
	}
	return id + "." + secret, nil
}

// caPinError is a server whose TLS handshake carries no CA the token pins,
// or whose certificate that CA did not sign: not retried.
type caPinError struct {
	Server string
	Reason string
}

// Example: the server https://192.0.2.10:6443 sent no certificate with the
// sha256 the token pins (3f2a…): another cluster's token, or a server whose
// serving certificate does not carry its CA
func (e *caPinError) Error() string {
	return fmt.Sprintf("the server %s %s", e.Server, e.Reason)
}

// pinServerCA opens a TLS connection to the server at u and returns, PEM
// encoded, the certificate of its handshake whose PEM has the sha256 the
// token pins, once the server's certificate is checked against it for u's
// host. Nothing is sent over the connection.
func pinServerCA(ctx context.Context, u *url.URL, tok Token) ([]byte, error) {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	var pinned []byte
	d := tls.Dialer{Config: &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verified by VerifyConnection, against the CA the token pins.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &caPinError{Server: u.String(), Reason: "sent no certificate"}
			}
			for _, c := range cs.PeerCertificates {
				p := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
				if CAHashOf(p) != tok.CAHash {
					continue
				}
				roots := x509.NewCertPool()
				roots.AddCert(c)
				if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: u.Hostname()}); err != nil {
					return &caPinError{Server: u.String(), Reason: fmt.Sprintf("has a certificate the pinned CA does not vouch for as %s: %v", u.Hostname(), err)}
				}
				pinned = p
				return nil
			}
			return &caPinError{Server: u.String(), Reason: fmt.Sprintf("sent no certificate with the sha256 the token pins (%s): another cluster's token, or a server whose serving certificate does not carry its CA", tok.CAHash)}
		},
	}}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		var pe *caPinError
		if errors.As(err, &pe) {
			return nil, pe
		}
		return nil, err
	}
	conn.Close()
	return pinned, nil
}
