package main

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
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/heldlog"
	"github.com/kubeharness/kubeharness/scoping"
)

// agentOptions are the flags of `k3s-like agent`, named as k3s names them.
type agentOptions struct {
	server      string
	token       string
	tokenFile   string
	dataDir     string
	nodeName    string
	node        nodeOptions
	logging     logging
	stopTimeout time.Duration

	protectFiles bool // --protect-files: a token file open to group or others is an error, not a warning
}

func newAgentCommand() *cobra.Command {
	cmd, _ := newAgentCommandWithOptions()
	return cmd
}

func newAgentCommandWithOptions() (*cobra.Command, *agentOptions) {
	a := &agentOptions{}
	home, _ := os.UserHomeDir()
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run a node (the kubelet and containerd) that joins a k3s-like server: --server URL --token-file FILE",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkFileModes(cmd.ErrOrStderr(), os.Getenv); err != nil {
				return err
			}
			return a.run(cmd.Context(), os.Getenv)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&a.server, "server", "s", "", "The server to join, https://HOST:6443 (also $K3S_LIKE_URL)")
	f.StringVarP(&a.token, "token", "t", "", "The cluster's full token, K10…::server:… (visible to every local user in the process's arguments: prefer --token-file; also $K3S_LIKE_TOKEN)")
	f.StringVar(&a.tokenFile, "token-file", "", "File holding the cluster's full token: a server's DATA_DIR/token (also $K3S_LIKE_TOKEN_FILE)")
	f.BoolVar(&a.protectFiles, "protect-files", false, "Refuse to start, instead of warning, when the token file (--token-file, $K3S_LIKE_TOKEN_FILE) is readable or writable by group or others")
	f.StringVarP(&a.dataDir, "data-dir", "d", defaultDataDir(os.Geteuid(), home), "Folder for the node's state: certificates, containerd's images and the kubelet's directory")
	hostname, _ := os.Hostname()
	f.StringVar(&a.nodeName, "node-name", hostname, "The node's name (default the hostname)")
	addNodeFlags(f, &a.node, false)
	f.StringVarP(&a.logging.verbosity, "v", "v", "", "Log verbosity (a number) for the whole process")
	f.StringVar(&a.logging.vmodule, "vmodule", "", "Per-file log verbosity, pattern=N,... (klog's)")
	f.StringVar(&a.logging.format, "logging-format", "", "Log format, text or json (default text)")
	f.StringVarP(&a.logging.file, "log", "l", "", "Write the log here (appended, created 0600) instead of stderr")
	f.DurationVar(&a.stopTimeout, "stop-timeout", 8*time.Second, "How long each component may take to stop")
	return cmd, a
}

// check checks the flags and finds the token; each error is one line
// naming the flag, never the token.
func (a *agentOptions) check(getenv func(string) string) (*url.URL, clusterToken, error) {
	if a.server == "" {
		a.server = getenv("K3S_LIKE_URL")
	}
	if a.server == "" {
		return nil, clusterToken{}, errors.New("--server is required: the URL of a k3s-like server, https://HOST:6443")
	}
	u, err := url.Parse(a.server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, clusterToken{}, fmt.Errorf("--server=%s: want https://HOST:PORT", a.server)
	}
	tok, source, found, err := resolveToken(a.token, a.tokenFile, "", getenv)
	if err != nil {
		return nil, clusterToken{}, err
	}
	if !found {
		return nil, clusterToken{}, errors.New("--token-file is required: a server's DATA_DIR/token")
	}
	if tok.caHash == "" {
		return nil, clusterToken{}, fmt.Errorf("the token (%s) is a bare secret: an agent needs the full token (K10…::server:…) of a server's DATA_DIR/token, which pins the cluster CA", source)
	}
	if _, err := kubeargs.Parse("kubelet-arg", a.node.kubeletArgs); err != nil {
		return nil, clusterToken{}, err
	}
	if _, err := kubeargs.Parse("kube-proxy-arg", a.node.kubeProxyArgs); err != nil {
		return nil, clusterToken{}, err
	}
	return u, tok, nil
}

// run joins the server and runs the node until ctx ends or it fails.
func (a *agentOptions) run(ctx context.Context, getenv func(string) string) error {
	u, tok, err := a.check(getenv)
	if err != nil {
		return err
	}
	short, err := a.logging.shorthands()
	if err != nil {
		return err
	}
	if err := a.logging.redirect(); err != nil {
		return err
	}
	if err := checkWritable(a.dataDir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := logger()
	c := nodeConfig{dataDir: a.dataDir, name: a.nodeName, opts: a.node, layout: pki.Layout{Dir: filepath.Join(a.dataDir, "agent", "pki")}}
	settings, err := join(ctx, u, tok, c.layout, a.nodeName)
	if err != nil {
		return err
	}
	c.clusterDNS, c.clusterDomain = settings[settingClusterDNS], settings[settingClusterDomain]
	c.kubeletDefaults = []kubeargs.Arg{
		{Key: "bootstrap-kubeconfig", Value: bootstrapKubeconfig(c.layout)},
		{Key: "rotate-certificates", Value: "true"},
	}
	c.clusterCIDR = settings[settingClusterCIDR]
	c.servingBootstrap = true
	args, err := c.nodeArgs(short)
	if err != nil {
		return err
	}
	h := &harness.Harness{StopTimeout: a.stopTimeout}
	var release func()
	h.Logger, release = heldlog.New()
	defer release()
	h.AfterBarrier = []harness.BarrierHook{components.AfterBarrier, func(*scoping.Plan) error {
		release()
		return c.prepareRuntime()
	}}
	if err := c.addNode(h, args); err != nil {
		return err
	}
	go func() {
		if h.WaitReady(ctx) == nil {
			log.Info("Agent ready", "node", a.nodeName, "server", u.String())
		}
	}()
	err = h.Run(ctx)
	c.afterStop(context.WithoutCancel(ctx), log)
	if err != nil {
		release()
		log.Error(err, "Stopped")
		return exitCode(1)
	}
	log.Info("Stopped")
	return nil
}

// bootstrapKubeconfig is the kubelet's --bootstrap-kubeconfig on an agent.
func bootstrapKubeconfig(l pki.Layout) string {
	return filepath.Join(l.Dir, "bootstrap-kubelet.kubeconfig")
}

// join makes what an agent's kubelet needs to join the server at u: the
// cluster CA pinned by the token (written to l.ServerCA), the bootstrap
// kubeconfig with the token's bootstrap token, the server's agent settings
// (the client CA written to l.ClientCA). The kubelet asks for its serving
// certificate itself (the server's approver). It retries until the server
// answers and has published the settings, or ctx ends; a CA that does not
// match the token is an error at once.
func join(ctx context.Context, u *url.URL, tok clusterToken, l pki.Layout, name string) (map[string]string, error) {
	log := logger().WithName("join")
	var ca []byte
	var settings map[string]string
	var last string
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
		id, secret := tok.bootstrapToken()
		client, err := kubernetes.NewForConfig(&rest.Config{
			Host: u.String(), BearerToken: id + "." + secret, UserAgent: "k3s-like-agent",
			TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		})
		if err != nil {
			return false, err
		}
		cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
		if apierrors.IsUnauthorized(err) {
			return retry(fmt.Errorf("the server does not accept the token's bootstrap token yet (or the token is another cluster's): %w", err))
		}
		if err != nil {
			return retry(err)
		}
		settings = cm.Data
		return true, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("joining %s: stopped before the server answered (last: %s)", u, last)
		}
		return nil, err
	}
	if _, err := certutil.ParseCertsPEM([]byte(settings[settingClientCA])); err != nil {
		return nil, fmt.Errorf("the server's agent settings (kube-system/%s): %s: %w", agentSettings, settingClientCA, err)
	}
	if cidr := settings[settingClusterCIDR]; cidr != "" {
		if _, err := netip.ParsePrefix(cidr); err != nil {
			return nil, fmt.Errorf("the server's agent settings (kube-system/%s): %s=%s: %w", agentSettings, settingClusterCIDR, cidr, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(l.NodeLayout(name).Kubeconfig()), 0o700); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(l.ServerCA().CertFile, ca, 0o644); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(l.ClientCA().CertFile, []byte(settings[settingClientCA]), 0o644); err != nil {
		return nil, err
	}
	id, secret := tok.bootstrapToken()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["server"] = &clientcmdapi.Cluster{Server: u.String(), CertificateAuthority: l.ServerCA().CertFile}
	kc.AuthInfos["bootstrap"] = &clientcmdapi.AuthInfo{Token: id + "." + secret}
	kc.Contexts["bootstrap"] = &clientcmdapi.Context{Cluster: "server", AuthInfo: "bootstrap"}
	kc.CurrentContext = "bootstrap"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(bootstrapKubeconfig(l), b, 0o600); err != nil {
		return nil, err
	}
	log.Info("Joined: the cluster CA is the one the token pins", "server", u.String(), "caSHA256", tok.caHash)
	return settings, nil
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
func pinServerCA(ctx context.Context, u *url.URL, tok clusterToken) ([]byte, error) {
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
				if caHashOf(p) != tok.caHash {
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
			return &caPinError{Server: u.String(), Reason: fmt.Sprintf("sent no certificate with the sha256 the token pins (%s): another cluster's token, or a server whose serving certificate does not carry its CA", tok.caHash)}
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
