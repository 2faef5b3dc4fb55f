package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/platforms"
	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/node"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/images"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/mounts"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// nodeOptions are the flags of the server's node, named as k3s names them.
type nodeOptions struct {
	disableAgent    bool
	nodeIP          string
	labels          []string
	taints          []string
	kubeletArgs     []string
	runtimeEndpoint string
	kubeProxyArgs   []string
	disableProxy    bool
	cleanupOnStop   bool
	privateRegistry string
}

// addNodeFlags adds the node's flags; a server's has --disable-agent too.
func addNodeFlags(f *pflag.FlagSet, o *nodeOptions, server bool) {
	if server {
		f.BoolVar(&o.disableAgent, "disable-agent", false, "Run the control plane only: no kubelet, no container runtime on this server")
	}
	f.StringVar(&o.nodeIP, "node-ip", "", "The node's IP address (default the default route's address)")
	f.StringArrayVar(&o.labels, "node-label", nil, "Label to register the node with, key=value (repeatable)")
	f.StringArrayVar(&o.taints, "node-taint", nil, "Taint to register the node with, key=value:Effect (repeatable)")
	f.StringArrayVar(&o.kubeletArgs, "kubelet-arg", nil, "Customized flag for the kubelet (repeatable), as k3s: key=value or key (=true), key+=value appends to the default, key-=value prepends")
	f.StringVar(&o.runtimeEndpoint, "container-runtime-endpoint", "", "Use this existing CRI socket instead of running containerd from this binary")
	f.StringArrayVar(&o.kubeProxyArgs, "kube-proxy-arg", nil, "Customized flag for kube-proxy (repeatable), as --kubelet-arg")
	f.BoolVar(&o.disableProxy, "disable-kube-proxy", false, "Do not run kube-proxy: Services need another proxy (a CNI that replaces it)")
	f.StringVar(&o.privateRegistry, "private-registry", "", "Registry mirrors, k3s's registries.yaml (mirrors.HOST.endpoint: [URL, ...]), for the containerd of this binary (default "+defaultRegistriesFile+", if it exists)")
	f.BoolVar(&o.cleanupOnStop, "cleanup-on-stop", false, "When stopping, remove the host rules kube-proxy and the kubelet made (KUBE-* iptables chains, kube-proxy's nftables tables); by default they stay, as upstream's, so that Services keep answering across a restart")
}

// nodeDirs are where the node keeps its files: its state under the data
// dir, its sockets under a short directory of /run (a unix socket's path
// is limited to 107 bytes), one per data dir.
type nodeDirs struct {
	agent   string // DATA_DIR/agent
	run     string // /run/k3s-like/HASH
	bin     string // the binary under the names of containerd's shim and the CNI plugins
	images  string // image archives imported at start
	cniConf string
}

func newNodeDirs(dataDir string) nodeDirs {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	agent := filepath.Join(dataDir, "agent")
	return nodeDirs{
		agent:   agent,
		run:     filepath.Join("/run/k3s-like", hex.EncodeToString(sum[:5])),
		bin:     filepath.Join(agent, "bin"),
		images:  filepath.Join(agent, "images"),
		cniConf: filepath.Join(agent, "etc", "cni", "net.d"),
	}
}

func (d nodeDirs) socket() string { return filepath.Join(d.run, "containerd.sock") }
func (d nodeDirs) containerdConfig() string {
	return filepath.Join(d.agent, "etc", "containerd", "config.toml")
}
func (d nodeDirs) kubeletRoot() string { return filepath.Join(d.agent, "kubelet") }

// snapshotter is the containerd snapshotter of the node's images.
const snapshotter = "overlayfs"

// sandboxImage is the pause image containerd runs each pod's sandbox
// from, built by `make images` (images/).
const sandboxImage = "registry.k8s.io/pause:3.10.2"

// nodeConfig is what a node needs, on a server or on an agent.
type nodeConfig struct {
	dataDir string
	name    string
	opts    nodeOptions
	// layout holds the node's PKI: the client CA its kubelet trusts, and
	// under NodeLayout(name) its certificates and kubeconfig.
	layout        pki.Layout
	clusterDNS    string
	clusterDomain string
	clusterCIDR   string // the Pods' CIDR, for kube-proxy
	// after are the components the kubelet starts after (the apiserver,
	// on a server).
	after []string
	// proxyAfter are more components kube-proxy starts after (the
	// server's node-join, which binds its role).
	proxyAfter []string
	// kubeletDefaults are more default kubelet flags (an agent's TLS
	// bootstrap), which --kubelet-arg may override.
	kubeletDefaults []kubeargs.Arg
	// servingBootstrap: the kubelet asks the apiserver for its serving
	// certificate (an agent, which has no kubelet serving CA key).
	servingBootstrap bool
}

// nodeConfig is the server's node.
func (o *serverOptions) nodeConfig() nodeConfig {
	return nodeConfig{
		dataDir: o.dataDir, name: o.nodeName, opts: o.node, layout: o.layout(),
		clusterDNS: o.clusterDNSAddress(), clusterDomain: o.clusterDomain, clusterCIDR: o.clusterCIDR,
		after: []string{components.APIServerName}, proxyAfter: []string{nodeJoinName},
	}
}

// kubeconfig is the kubelet's kubeconfig (an agent's kubelet writes it).
func (c nodeConfig) kubeconfig() string { return c.layout.NodeLayout(c.name).Kubeconfig() }

// ip is --node-ip, or the default route's address (loopback without one).
func (c nodeConfig) ip() (net.IP, error) {
	if c.opts.nodeIP != "" {
		ip := net.ParseIP(c.opts.nodeIP)
		if ip == nil {
			return nil, fmt.Errorf("--node-ip=%s: not an IP address", c.opts.nodeIP)
		}
		return ip, nil
	}
	ip, err := utilnet.ResolveBindAddress(net.IPv4zero)
	if err != nil || ip.IsUnspecified() {
		return net.IPv4(127, 0, 0, 1), nil
	}
	return ip, nil
}

// kubeletArgs are the kubelet's arguments: node.DefaultKubeletFlags for
// this node and kubeletDefaults, the logging and feature-gate shorthands,
// then --kubelet-arg by k3s's rules.
func (c nodeConfig) kubeletArgs(short []kubeargs.Arg) ([]string, error) {
	ip, err := c.ip()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for _, l := range c.opts.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--node-label=%s: want key=value", l)
		}
		labels[k] = v
	}
	v1, err := node.CgroupV1()
	if err != nil {
		return nil, fmt.Errorf("reading /sys/fs/cgroup: %w", err)
	}
	d := newNodeDirs(c.dataDir)
	socket := d.socket()
	if c.opts.runtimeEndpoint != "" {
		socket = strings.TrimPrefix(c.opts.runtimeEndpoint, "unix://")
	}
	defaults := node.DefaultKubeletFlags(c.layout, node.Settings{
		Name: c.name, IP: ip, RootDir: d.kubeletRoot(), RuntimeSocket: socket,
		ClusterDNS: c.clusterDNS, ClusterDomain: c.clusterDomain,
		Labels: labels, Taints: c.opts.taints,
		ServingBootstrap: c.servingBootstrap,
		// These hosts keep cgroup v1 (the unified hierarchy has no
		// controllers): the kubelet is told so explicitly.
		AllowCgroupV1: v1,
	})
	user, err := kubeargs.Parse("kubelet-arg", c.opts.kubeletArgs)
	if err != nil {
		return nil, err
	}
	return kubeargs.Merge(append(defaults, c.kubeletDefaults...), short, user), nil
}

// proxyArgs are kube-proxy's arguments: node.DefaultKubeProxyFlags for
// this node (the kubelet's kubeconfig: see node-join's RBAC), the logging
// and feature-gate shorthands, then --kube-proxy-arg by k3s's rules.
func (c nodeConfig) proxyArgs(short []kubeargs.Arg) ([]string, error) {
	user, err := kubeargs.Parse("kube-proxy-arg", c.opts.kubeProxyArgs)
	if err != nil {
		return nil, err
	}
	defaults := node.DefaultKubeProxyFlags(node.ProxySettings{Name: c.name, Kubeconfig: c.kubeconfig(), ClusterCIDR: c.clusterCIDR})
	return kubeargs.Merge(defaults, short, user), nil
}

// nodeArgs are the node's components' arguments: the kubelet's and,
// unless --disable-kube-proxy, kube-proxy's.
func (c nodeConfig) nodeArgs(short []kubeargs.Arg) (map[string][]string, error) {
	out := map[string][]string{}
	var err error
	if out[node.KubeletName], err = c.kubeletArgs(short); err != nil {
		return nil, err
	}
	if !c.opts.disableProxy {
		if out[node.KubeProxyName], err = c.proxyArgs(short); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// addNode adds the node's components: containerd (unless
// --container-runtime-endpoint), the kubelet after it and c.after, the
// writer of the node's CNI configuration and kube-proxy (unless
// --disable-kube-proxy) after the kubelet. args are nodeArgs'.
func (c nodeConfig) addNode(h *harness.Harness, args map[string][]string) error {
	d := newNodeDirs(c.dataDir)
	deps := append([]string(nil), c.after...)
	if c.opts.runtimeEndpoint == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		rt := node.NewRuntime(node.RuntimeConfig{
			Command: []string{self, containerdCommand, "--config", d.containerdConfig()},
			Socket:  d.socket(),
			BinDir:  d.bin,
			Output:  containerdLog{},
			// The harness gives the stop StopTimeout: Stop's sweep of the
			// pod sandboxes half of it, then containerd a quarter after
			// SIGTERM, so that the kill of its group and of the shims left
			// still fit (with the default 10 s, containerd slow to exit with
			// 100 Pods outlived --stop-timeout 8 s: the stop was abandoned,
			// exit 1, and the shims and containers were left running).
			StopGrace: cmp.Or(h.StopTimeout, harness.DefaultStopTimeout) / 4,
			BeforeReady: func(ctx context.Context) error {
				_, err := images.Import(ctx, d.socket(), d.images, snapshotter, logger().WithName("images"))
				return err
			},
		})
		if err := h.Add(rt, nil); err != nil {
			return err
		}
		deps = append(deps, node.RuntimeName)
	}
	if err := h.Add(node.NewKubelet(), args[node.KubeletName], deps...); err != nil {
		return err
	}
	if !c.opts.disableProxy {
		if err := h.Add(node.NewKubeProxy(), args[node.KubeProxyName], append([]string{node.KubeletName}, c.proxyAfter...)...); err != nil {
			return err
		}
	}
	if err := h.Add(&harness.Func{ComponentName: cniConfigName, RunFunc: c.writeCNIConfig}, nil, node.KubeletName); err != nil {
		return err
	}
	// KEP-3920 on nodes: the node reports its gates with the kubelet's
	// credential, once its Node is registered (it never fails the harness).
	return h.Add(&featurepub.Reporter{
		Node:       c.name,
		Kubeconfig: c.kubeconfig(),
		Plan:       func() *scoping.Plan { return h.Status().Plan },
		UserAgent:  "k3s-like-feature-reporter",
		Logf:       func(format string, a ...any) { logger().Info(fmt.Sprintf(format, a...)) },
	}, nil, node.KubeletName)
}

// afterStop is what the node leaves undone once its components stopped:
// it unmounts what the kubelet and containerd mounted and, with
// --cleanup-on-stop, removes kube-proxy's and the kubelet's host rules.
func (c nodeConfig) afterStop(ctx context.Context, log logr.Logger) {
	n, err := mounts.UnmountUnder(c.dataDir, newNodeDirs(c.dataDir).run)
	if err != nil {
		log.Error(err, "Unmounting the node's mounts")
	}
	log.Info("Unmounted the node's mounts", "count", n)
	if !c.opts.cleanupOnStop {
		return
	}
	var errs []error
	if !c.opts.disableProxy {
		errs = append(errs, node.CleanupProxyRules(ctx))
	}
	errs = append(errs, node.CleanupKubeletRules())
	if err := errors.Join(errs...); err != nil {
		log.Error(err, "Removing the node's host rules")
		return
	}
	log.Info("Removed the node's host rules (--cleanup-on-stop)")
}

// cniConfigName is the component that writes the node's CNI configuration.
const cniConfigName = "cni-config"

// prepareNode writes, after the barrier, what the server's node needs on
// disk: its PKI (from the cluster's CAs), then prepareRuntime's.
func (o *serverOptions) prepareNode() error {
	c := o.nodeConfig()
	l := o.layout()
	serverCA, err := pki.LoadOrCreateCA(l.ServerCA().CertFile, l.ServerCA().KeyFile, "")
	if err != nil {
		return err
	}
	clientCA, err := pki.LoadOrCreateCA(l.ClientCA().CertFile, l.ClientCA().KeyFile, "")
	if err != nil {
		return err
	}
	ip, err := c.ip()
	if err != nil {
		return err
	}
	servingCA, err := pki.LoadOrCreateCA(l.KubeletServingCA().CertFile, l.KubeletServingCA().KeyFile, "")
	if err != nil {
		return err
	}
	files := &pki.Files{Dir: l.Dir, ServerCA: serverCA, ClientCA: clientCA, KubeletServingCA: servingCA}
	if _, err := files.EnsureNode(pki.Node{Name: o.nodeName, IPs: []net.IP{ip}}, o.settings().APIServerURL()); err != nil {
		return err
	}
	return c.prepareRuntime()
}

// prepareRuntime writes containerd's configuration and the binary under
// its shim's and the CNI plugins' names (nothing with
// --container-runtime-endpoint).
func (c nodeConfig) prepareRuntime() error {
	if c.opts.runtimeEndpoint != "" {
		return nil
	}
	d := newNodeDirs(c.dataDir)
	regFile := c.opts.privateRegistry
	if regFile == "" {
		regFile = defaultRegistriesFile
	}
	regs, err := loadRegistries(regFile, c.opts.privateRegistry != "")
	if err != nil {
		return err
	}
	for _, dir := range []string{d.bin, d.images, d.cniConf, d.run, filepath.Dir(d.containerdConfig())} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, name := range append([]string{shimName}, cniPlugins...) {
		link := filepath.Join(d.bin, name)
		_ = os.Remove(link)
		if err := os.Symlink(self, link); err != nil {
			return err
		}
	}
	if err := writeHostsDir(d.hostsDir(), regs); err != nil {
		return err
	}
	return atomicfile.Write(d.containerdConfig(), []byte(containerdConfig(d)), 0o600)
}

// containerdConfig is containerd's configuration for the node: its state
// and sockets under d.run, its images and snapshots under the data dir,
// the CRI with the project's sandbox image, runc from the host, the
// cgroupfs driver, the CNI plugins of this binary, registry mirrors from
// d.hostsDir() only (not the host's /etc/containerd/certs.d).
func containerdConfig(d nodeDirs) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`version = 3
root = %s
state = %s
disabled_plugins = ["io.containerd.nri.v1.nri"]

[grpc]
  address = %s
[ttrpc]
  address = %s

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %s
  [plugins."io.containerd.shim.v1.manager"]
    socket_dir = %s
  [plugins."io.containerd.transfer.v1.local"]
    config_path = %s
    [[plugins."io.containerd.transfer.v1.local".unpack_config]]
      platform = %s
      snapshotter = %q
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = %q
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = %s
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = %q
  [plugins."io.containerd.cri.v1.runtime"]
    netns_mounts_under_state_dir = true
    restrict_oom_score_adj = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        runtime_path = %s
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          Root = %s
          SystemdCgroup = false
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [%s]
      conf_dir = %s
  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`, q(filepath.Join(d.agent, "containerd")), q(filepath.Join(d.run, "state")), q(d.socket()), q(d.socket()+".ttrpc"),
		q(filepath.Join(d.agent, "opt")), q(filepath.Join(d.run, "s")), q(d.hostsDir()), q(platforms.DefaultString()), snapshotter, snapshotter, q(d.hostsDir()), sandboxImage,
		q(filepath.Join(d.bin, shimName)), q(filepath.Join(d.run, "runc")), q(d.bin), q(d.cniConf))
}

// writeCNIConfig waits until the node has its pod CIDR (the
// controller-manager allocates it once the kubelet registered the node),
// writes the bridge network for it, and waits for the stop.
func (c nodeConfig) writeCNIConfig(ctx context.Context) error {
	var n *corev1.Node
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		// The kubelet's kubeconfig: an agent's appears once its TLS
		// bootstrap is done.
		cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
		if err != nil {
			return false, nil
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		n, err = node.WaitForNode(ctx, client, c.name, node.HasPodCIDR)
		return err == nil, err
	})
	if ctx.Err() != nil {
		return nil // stopped before the node had a pod CIDR
	}
	if err != nil {
		return err
	}
	cidr := n.Spec.PodCIDR
	d := newNodeDirs(c.dataDir)
	if err := atomicfile.Write(filepath.Join(d.cniConf, "10-k3s-like.conflist"), []byte(cniConflist(cidr, d)), 0o600); err != nil {
		return err
	}
	logger().Info("Wrote the node's CNI configuration", "podCIDR", cidr)
	<-ctx.Done()
	return nil
}

// cniConflist is the node's pod network: a bridge with the node's pod
// CIDR (host-local addresses), port mappings, loopback.
func cniConflist(cidr string, d nodeDirs) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "k3s-like",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, filepath.Join(d.run, "ipam"), cidr)
}

// containerdLog sends containerd's output to the server's log.
type containerdLog struct{}

func (containerdLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			logger().WithName("containerd").V(1).Info(line)
		}
	}
	return len(p), nil
}
