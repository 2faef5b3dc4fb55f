package cluster

import (
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
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

// BootstrapKubeconfig is the kubelet's --bootstrap-kubeconfig on an agent.
func BootstrapKubeconfig(l pki.Layout) string {
	return filepath.Join(l.Dir, "bootstrap-kubelet.kubeconfig")
}

// Join makes what an agent's kubelet needs to join the server at u: the
// cluster CA pinned by the token (written to l.ServerCA), the server's
// agent settings (the client CA written to l.ClientCA) and the bootstrap
// kubeconfig with the server's current bootstrap token, both read with
// the token's join credential (Token.JoinCredential). The kubelet asks for its serving
// certificate itself (the server's approver). It retries until the server
// answers and has published the settings, or ctx ends; a CA that does not
// match the token is an error at once.
func Join(ctx context.Context, log logr.Logger, u *url.URL, tok Token, l pki.Layout, name string) (Settings, error) {
	log = log.WithName("join")
	var ca []byte
	var settings map[string]string
	var bootstrap, last string
	retry := func(err error) (bool, error) {
		if err.Error() != last {
			log.Info("Joining the server; retrying", "server", u.String(), "err", err)
			last = err.Error()
		}
		return false, nil
	}
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if ca == nil {
			var err error
			if ca, err = pinServerCA(ctx, u, tok); err != nil {
				var pe *caPinError
				if errors.As(err, &pe) {
					return false, err
				}
				return retry(err)
			}
		}
		client, err := kubernetes.NewForConfig(&rest.Config{
			Host: u.String(), BearerToken: tok.JoinCredential(), UserAgent: "k3s-like-agent",
			TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		})
		if err != nil {
			return false, err
		}
		cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
		if apierrors.IsUnauthorized(err) {
			return retry(fmt.Errorf("the server does not accept the token yet (or the token is another cluster's, or the server's release is older than the agent's: upgrade servers first): %w", err))
		}
		if err != nil {
			return retry(err)
		}
		if bootstrap, err = bootstrapToken(ctx, client, cm.Data[settingBootstrapToken], time.Now()); err != nil {
			return retry(err)
		}
		settings = cm.Data
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return Settings{}, fmt.Errorf("joining %s: stopped before the server answered (last: %s)", u, last)
		}
		return Settings{}, err
	}
	if _, err := certutil.ParseCertsPEM([]byte(settings[settingClientCA])); err != nil {
		return Settings{}, fmt.Errorf("the server's agent settings (kube-system/%s): %s: %w", agentSettings, settingClientCA, err)
	}
	if cidr := settings[settingClusterCIDR]; cidr != "" {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return Settings{}, fmt.Errorf("the server's agent settings (kube-system/%s): %s=%s: %w", agentSettings, settingClusterCIDR, cidr, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(l.NodeLayout(name).Kubeconfig()), 0o700); err != nil {
		return Settings{}, err
	}
	if err := atomicfile.Write(l.ServerCA().CertFile, ca, 0o644); err != nil {
		return Settings{}, err
	}
	if err := atomicfile.Write(l.ClientCA().CertFile, []byte(settings[settingClientCA]), 0o644); err != nil {
		return Settings{}, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["server"] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthority: l.ServerCA().CertFile}
	kc.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: bootstrap}
	kc.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "server", AuthInfo: "bootstrap"}
	kc.CurrentContext = "bootstrap"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return Settings{}, err
	}
	if err := atomicfile.Write(BootstrapKubeconfig(l), b, 0o600); err != nil {
		return Settings{}, err
	}
	log.Info("Joined: the cluster CA is the one the token pins", "server", u.String(), "caSHA256", tok.CAHash)
	return Settings{ClusterDNS: settings[settingClusterDNS], ClusterDomain: settings[settingClusterDomain], ClusterCIDR: settings[settingClusterCIDR],
		FlannelBackend: settings[settingFlannel]}, nil
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
