package agent

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/loadbalancer"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/daemon"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// options are the flags of `k3s-like agent`, named as k3s names them.
type options struct {
	cli.Options // shared with the server: data dir, node name, token, logging, …
	server      string
	lbPort      int
	node        node.Options
}

// NewCommand is `k3s-like agent`.
func NewCommand() *cobra.Command {
	cmd, _ := newCommandWithOptions()
	return cmd
}

// newCommandWithOptions is NewCommand, with the options its flags fill
// (for tests).
func newCommandWithOptions() (*cobra.Command, *options) {
	a := &options{Options: cli.Options{Command: cli.Agent}}
	cmd := a.NewCommand("Run a node (the kubelet and containerd) that joins a k3s-like server: --server URL --token-file FILE",
		func(cmd *cobra.Command) error { return a.run(cmd.Context(), os.Getenv) })
	f := cmd.Flags()
	f.StringVarP(&a.server, "server", "s", "", "The server to join, https://HOST:6443 (also $K3S_LIKE_URL)")
	f.IntVar(&a.lbPort, "lb-server-port", loadbalancer.DefaultPort, "Port on 127.0.0.1 of the agent's client-side load balancer: the kubelet, kube-proxy and the node's other clients reach the apiservers through it, the server joined through and every one the kubernetes Service's endpoints name, so that the loss of one does not take the node down")
	a.node.AddFlags(f, false)
	return cmd, a
}

// check checks the flags and finds the token; each error is one line
// naming the flag, never the token.
func (a *options) check(getenv func(string) string) (*url.URL, cluster.Token, error) {
	if a.server == "" {
		a.server = getenv("K3S_LIKE_URL")
	}
	if a.server == "" {
		return nil, cluster.Token{}, errors.New("--server is required: the URL of a k3s-like server, https://HOST:6443")
	}
	u, err := url.Parse(a.server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
		return nil, cluster.Token{}, fmt.Errorf("--server=%s: want https://HOST:PORT", a.server)
	}
	tok, source, found, err := a.ResolveToken(getenv)
	if err != nil {
		return nil, cluster.Token{}, err
	}
	if !found {
		return nil, cluster.Token{}, errors.New("--token-file is required: a server's DATA_DIR/agent-token (or DATA_DIR/token), or a token of k3s-like token create")
	}
	if tok.CAHash == "" {
		return nil, cluster.Token{}, fmt.Errorf("the token (%s) is a bare secret: an agent needs a full token (K10…::…), which pins the cluster CA: a server's DATA_DIR/token or DATA_DIR/agent-token, or one of k3s-like token create", source)
	}
	if err := a.node.Check(); err != nil {
		return nil, cluster.Token{}, err
	}
	return u, tok, nil
}

// run joins the server and runs the node until ctx ends or it fails.
func (a *options) run(ctx context.Context, getenv func(string) string) error {
	u, tok, err := a.check(getenv)
	if err != nil {
		return err
	}
	short, err := a.Logging.Shorthands()
	if err != nil {
		return err
	}
	if err := a.Logging.Redirect(); err != nil {
		return err
	}
	if err := cli.CheckWritable(a.DataDir); err != nil {
		return err
	}
	c := node.Config{DataDir: a.DataDir, Name: a.NodeName, Options: a.node, Layout: pki.Layout{Dir: filepath.Join(a.DataDir, "agent", "pki")}}
	return daemon.Daemon{
		Prepare: func(ctx context.Context) (*harness.Harness, error) { return a.join(ctx, c, u, tok, short) },
		Ready: func(log logr.Logger, _ time.Duration) {
			log.Info("Agent ready", "node", a.NodeName, "server", u.String())
		},
		AfterStop: c.AfterStop,
	}.Run(ctx)
}

// ensureKubeProxyClient makes sure the node's kube-proxy has its own
// client certificate (cluster.KubeProxyClient), asked for as the node
// through the server at u (not the load balancer, which is not started
// yet).
func (a *options) ensureKubeProxyClient(ctx context.Context, c node.Config, u *url.URL) error {
	nl := c.Layout.NodeLayout(c.Name)
	k := cluster.KubeProxyClient{Node: c.Name, CertFile: nl.KubeProxy().CertFile, KeyFile: nl.KubeProxy().KeyFile,
		Kubeconfig: c.KubeProxyKubeconfig(), Server: u.String(), CAFile: c.Layout.ServerCA().CertFile}
	cfg, err := clientcmd.BuildConfigFromFlags(u.String(), c.Kubeconfig())
	if err != nil {
		return err
	}
	cfg.UserAgent = "k3s-like-agent"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return k.Ensure(ctx, cli.Logger(), client)
}

// join joins the server at u and returns the harness of the node c, with
// the server's settings; short are the logging shorthands.
func (a *options) join(ctx context.Context, c node.Config, u *url.URL, tok cluster.Token, short []kubeargs.Arg) (*harness.Harness, error) {
	joined, err := cluster.Join(ctx, cli.Logger(), u, tok, c.Layout)
	if err != nil {
		return nil, err
	}
	password, err := cluster.EnsureNodePassword(a.DataDir)
	if err != nil {
		return nil, err
	}
	// The kubelet's client certificate, asked for with the node password
	// (the kubelet renews it itself).
	if err := (cluster.NodeClient{
		Node: a.NodeName, Password: password, CertDir: c.KubeletCertDir(), Kubeconfig: c.Kubeconfig(),
		Server: u.String(), CAFile: c.Layout.ServerCA().CertFile,
	}).Ensure(ctx, cli.Logger(), joined.Bootstrap); err != nil {
		return nil, err
	}
	if !c.Options.DisableProxy {
		if err := a.ensureKubeProxyClient(ctx, c, u); err != nil {
			return nil, err
		}
	}
	settings := joined.Settings
	c.ClusterDNS, c.ClusterDomain, c.ClusterCIDR = settings.ClusterDNS, settings.ClusterDomain, settings.ClusterCIDR
	if err := node.CheckFlannelBackend(settings.FlannelBackend); err != nil {
		return nil, fmt.Errorf("the server's agent settings (kube-system/k3s-like-agent): the server's %w", err)
	}
	c.Options.FlannelBackend = settings.FlannelBackend // the server's, as k3s's agents take it
	// No kubelet defaults of the agent's own: --rotate-certificates is every
	// node's (kubenode.DefaultKubeletFlags), and the client certificate is
	// the agent's own request (cluster.NodeClient), no bootstrap kubeconfig.
	c.ServingBootstrap = true
	lb, err := a.loadBalancer(c, u)
	if err != nil {
		return nil, err
	}
	c.After = append(c.After, loadbalancer.Name)
	args, err := c.Args(short)
	if err != nil {
		return nil, err
	}
	cli.WarnWeakened(cli.Logger(), args)
	h := &harness.Harness{StopTimeout: a.StopTimeout, AfterBarrier: []harness.BarrierHook{components.AfterBarrier,
		func(*scoping.Plan) error { return c.PrepareRuntime() }}}
	if err := h.Add(lb, nil); err != nil {
		return nil, err
	}
	if err := c.Add(h, args); err != nil {
		return nil, err
	}
	return h, nil
}
