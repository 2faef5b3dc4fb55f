package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/platforms"
	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	kubenode "github.com/kubeharness/kubeharness/components/node"
	"github.com/kubeharness/kubeharness/components/node/kubelet"
	"github.com/kubeharness/kubeharness/components/node/proxy"
	noderuntime "github.com/kubeharness/kubeharness/components/node/runtime"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/helpers"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/images"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/mounts"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// The binary is also the node's container runtime (the multi-call
// dispatch of cmd/k3s-like); the shim and the CNI plugins are the helpers
// embedded in it (internal/helpers), or, in a binary built without them,
// the binary itself under their names.
const (
	// ShimName is containerd's runc shim, in the node's bin directory.
	ShimName = "containerd-shim-runc-v2"
	// ContainerdCommand is the subcommand a binary without helpers runs
	// containerd as; ContainerdName the helper program's name.
	ContainerdCommand = "containerd"
	ContainerdName    = "containerd"
)

// CNIPlugins are the CNI plugins' names, in the node's bin directory.
func CNIPlugins() []string { return slices.Sorted(maps.Keys(cni.Mains())) }

// Options are the node's flags, a server's and an agent's, named as k3s
// names them.
type Options struct {
	DisableAgent    bool // a server's only
	NodeIP          string
	labels          []string
	taints          []string
	kubeletArgs     []string
	runtimeEndpoint string
	kubeProxyArgs   []string
	DisableProxy    bool
	cleanupOnStop   bool
	privateRegistry string
	FlannelBackend  string // a server's flag; an agent runs its server's
	flannelIface    string
	// protectKernelDefaults is k3s's --protect-kernel-defaults.
	protectKernelDefaults bool
}

// AddFlags adds the node's flags; a server's has --disable-agent too.
func (o *Options) AddFlags(f *pflag.FlagSet, server bool) {
	if server {
		f.BoolVar(&o.DisableAgent, "disable-agent", false, "Run the control plane only: no kubelet, no container runtime on this server")
	}
	f.StringVar(&o.NodeIP, "node-ip", "", "The node's IP address (default the default route's address)")
	f.StringArrayVar(&o.labels, "node-label", nil, "Label to register the node with, key=value (repeatable)")
	f.StringArrayVar(&o.taints, "node-taint", nil, "Taint to register the node with, key=value:Effect (repeatable)")
	f.StringArrayVar(&o.kubeletArgs, "kubelet-arg", nil, "Customized flag for the kubelet (repeatable), as k3s: key=value or key (=true), key+=value appends to the default, key-=value prepends")
	f.StringVar(&o.runtimeEndpoint, "container-runtime-endpoint", "", "Use this existing CRI socket instead of running containerd from this binary")
	f.StringArrayVar(&o.kubeProxyArgs, "kube-proxy-arg", nil, "Customized flag for kube-proxy (repeatable), as --kubelet-arg")
	f.BoolVar(&o.DisableProxy, "disable-kube-proxy", false, "Do not run kube-proxy: Services need another proxy (a CNI that replaces it)")
	f.StringVar(&o.privateRegistry, "private-registry", "", "Registry mirrors, k3s's registries.yaml (mirrors.HOST.endpoint: [URL, ...]), for the containerd of this binary (default "+defaultRegistriesFile+", if it exists)")
	f.BoolVar(&o.protectKernelDefaults, "protect-kernel-defaults", false, "The kubelet exits if the host's kernel tunables (vm.overcommit_memory=1, vm.panic_on_oom=0, kernel.panic=10, kernel.panic_on_oops=1) differ from its defaults, instead of setting them (k3s's flag; CIS hardening guide): set them first, e.g. in /etc/sysctl.d")
	f.BoolVar(&o.cleanupOnStop, "cleanup-on-stop", false, "When stopping, remove the host rules kube-proxy, the kubelet and flannel made (KUBE-* and FLANNEL-* iptables chains, kube-proxy's nftables tables, the flannel.1 device and flannel's routes); by default they stay, as upstream's, so that Services keep answering across a restart")
	o.addFlannelFlags(f, server)
}

// Check checks the flags a node's arguments are made from, without
// making them: each error names the flag.
func (o *Options) Check() error {
	if _, err := kubeargs.Parse("kubelet-arg", o.kubeletArgs); err != nil {
		return err
	}
	if err := CheckFlannelBackend(o.FlannelBackend); err != nil {
		return err
	}
	_, err := kubeargs.Parse("kube-proxy-arg", o.kubeProxyArgs)
	return err
}

// dirs are where the node keeps its files: its state under the data
// dir, its sockets under a short directory of /run (a unix socket's path
// is limited to 107 bytes), one per data dir.
type dirs struct {
	data    string // DATA_DIR
	agent   string // DATA_DIR/agent
	run     string // /run/k3s-like/HASH
	bin     string // containerd's shim and the CNI plugins: a link to the helpers' DATA_DIR/data/HASH/bin, or the binary under their names
	images  string // image archives imported at start
	cniConf string
}

func newDirs(dataDir string) dirs {
	agent := filepath.Join(dataDir, "agent")
	return dirs{
		data:    dataDir,
		agent:   agent,
		run:     datadir.NodeRun(dataDir),
		bin:     filepath.Join(agent, "bin"),
		images:  filepath.Join(agent, "images"),
		cniConf: filepath.Join(agent, "etc", "cni", "net.d"),
	}
}

func (d dirs) socket() string { return datadir.ContainerdSocket(d.data) }
func (d dirs) containerdConfig() string {
	return filepath.Join(d.agent, "etc", "containerd", "config.toml")
}
func (d dirs) kubeletRoot() string { return filepath.Join(d.agent, "kubelet") }

// snapshotter is the containerd snapshotter of the node's images.
const snapshotter = "overlayfs"

// sandboxImage is the pause image containerd runs each pod's sandbox
// from, built by `make images` (images/).
const sandboxImage = "registry.k8s.io/pause:3.10.2"

// Config is what a node needs, on a server or on an agent.
type Config struct {
	DataDir string
	Name    string
	Options Options
	// Layout holds the node's PKI: the client CA its kubelet trusts, and
	// under NodeLayout(Name) its certificates and kubeconfig.
	Layout        pki.Layout
	ClusterDNS    string
	ClusterDomain string
	ClusterCIDR   string // the Pods' CIDR, for kube-proxy
	// After are the components the kubelet starts after (the apiserver,
	// on a server).
	After []string
	// ProxyAfter are more components kube-proxy starts after (the
	// server's node-join, which binds its role).
	ProxyAfter []string
	// KubeletDefaults are more default kubelet flags (an agent's
	// certificate rotation), which --kubelet-arg may override.
	KubeletDefaults []kubeargs.Arg
	// ServingBootstrap: the kubelet asks the apiserver for its serving
	// certificate (an agent, which has no kubelet serving CA key).
	ServingBootstrap bool
	// Profiling turns on the kubelet's /debug/pprof and /debug/flags/v,
	// which serve the whole process (kubelet.Kubelet.Profiling): a
	// server's --enable-pprof.
	Profiling bool
	// ControllersBuilt, on a server running a kube-controller-manager,
	// registers fn to be called each time it has built its controllers
	// (components.ControllerManager.OnControllersBuilt): the kubelet then
	// takes back upstream's CSI node info, which they overwrite
	// (kubelet.Kubelet.ReclaimCSI).
	ControllersBuilt func(fn func())
}

// newKubelet is the node's kubelet: its process-wide debug handlers on
// only with Profiling.
func (c Config) newKubelet() *kubelet.Kubelet {
	k := kubelet.New()
	k.Profiling = c.Profiling
	return k
}

// Kubeconfig is the kubelet's kubeconfig (on an agent, written with its
// client certificate by cluster.NodeClient).
func (c Config) Kubeconfig() string { return c.Layout.NodeLayout(c.Name).Kubeconfig() }

// KubeProxyKubeconfig is the node's kube-proxy's kubeconfig: its own
// identity (pki.KubeProxyUser), not the kubelet's.
func (c Config) KubeProxyKubeconfig() string {
	return c.Layout.NodeLayout(c.Name).KubeProxyKubeconfig()
}

// KubeletCertDir is the kubelet's --cert-dir: its certificate store.
func (c Config) KubeletCertDir() string {
	return filepath.Join(newDirs(c.DataDir).kubeletRoot(), "pki")
}

// IP is --node-ip, or the default route's address (loopback without one).
func (c Config) IP() (net.IP, error) {
	if c.Options.NodeIP != "" {
		ip := net.ParseIP(c.Options.NodeIP)
		if ip == nil {
			return nil, fmt.Errorf("--node-ip=%s: not an IP address", c.Options.NodeIP)
		}
		return ip, nil
	}
	ip, err := utilnet.ResolveBindAddress(net.IPv4zero)
	if err != nil || ip.IsUnspecified() {
		return net.IPv4(127, 0, 0, 1), nil
	}
	return ip, nil
}

// kubeletArgs are the kubelet's arguments: kubenode.DefaultKubeletFlags for
// this node and kubeletDefaults, the logging and feature-gate shorthands,
// then --kubelet-arg by k3s's rules.
func (c Config) kubeletArgs(short []kubeargs.Arg) ([]string, error) {
	ip, err := c.IP()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{}
	for _, l := range c.Options.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--node-label=%s: want key=value", l)
		}
		labels[k] = v
	}
	v1, err := kubenode.CgroupV1()
	if err != nil {
		return nil, fmt.Errorf("reading /sys/fs/cgroup: %w", err)
	}
	d := newDirs(c.DataDir)
	socket := d.socket()
	if c.Options.runtimeEndpoint != "" {
		socket = strings.TrimPrefix(c.Options.runtimeEndpoint, "unix://")
	}
	defaults := kubenode.DefaultKubeletFlags(c.Layout, kubenode.Settings{
		Name: c.Name, IP: ip, RootDir: d.kubeletRoot(), RuntimeSocket: socket,
		ClusterDNS: c.ClusterDNS, ClusterDomain: c.ClusterDomain,
		Labels: labels, Taints: c.Options.taints,
		ServingBootstrap: c.ServingBootstrap,
		// These hosts keep cgroup v1 (the unified hierarchy has no
		// controllers): the kubelet is told so explicitly.
		AllowCgroupV1:         v1,
		ProtectKernelDefaults: c.Options.protectKernelDefaults,
	})
	user, err := kubeargs.Parse("kubelet-arg", c.Options.kubeletArgs)
	if err != nil {
		return nil, err
	}
	return kubeargs.Merge(append(defaults, c.KubeletDefaults...), short, user), nil
}

// proxyArgs are kube-proxy's arguments: kubenode.DefaultKubeProxyFlags for
// this node (its own kubeconfig, KubeProxyKubeconfig), the logging
// and feature-gate shorthands, then --kube-proxy-arg by k3s's rules.
func (c Config) proxyArgs(short []kubeargs.Arg) ([]string, error) {
	user, err := kubeargs.Parse("kube-proxy-arg", c.Options.kubeProxyArgs)
	if err != nil {
		return nil, err
	}
	defaults := kubenode.DefaultKubeProxyFlags(kubenode.ProxySettings{Name: c.Name, Kubeconfig: c.KubeProxyKubeconfig(), ClusterCIDR: c.ClusterCIDR})
	return kubeargs.Merge(defaults, short, user), nil
}

// Args are the node's components' arguments: the kubelet's, flannel's
// (unless --flannel-backend=none) and, unless --disable-kube-proxy,
// kube-proxy's.
func (c Config) Args(short []kubeargs.Arg) (map[string][]string, error) {
	out := map[string][]string{}
	var err error
	if out[kubelet.Name], err = c.kubeletArgs(short); err != nil {
		return nil, err
	}
	if c.flannelBackend() != FlannelNone {
		if out[flannel.Name], err = c.flannelArgs(); err != nil {
			return nil, err
		}
	}
	if !c.Options.DisableProxy {
		if out[proxy.Name], err = c.proxyArgs(short); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Add adds the node's components: containerd (unless
// --container-runtime-endpoint), the kubelet after it and c.After,
// kube-proxy (unless --disable-kube-proxy) and flannel after the kubelet,
// the writer of the node's CNI configuration after flannel (neither with
// --flannel-backend=none). args are Args'.
func (c Config) Add(h *harness.Harness, args map[string][]string) error {
	d := newDirs(c.DataDir)
	deps := append([]string(nil), c.After...)
	if c.Options.runtimeEndpoint == "" {
		command, err := containerdCommand(d)
		if err != nil {
			return err
		}
		rt := noderuntime.New(noderuntime.Config{
			Command: command,
			// The shim by name on containerd's PATH too: the bundle of a
			// container task served by its sandbox's shim records no shim
			// path, and a containerd started again (after a SIGKILL, or an
			// upgrade) finds the shim for it by name, or drops the task,
			// leaving its container running unknown to the kubelet.
			Env:    append(os.Environ(), "PATH="+d.bin+string(os.PathListSeparator)+os.Getenv("PATH")),
			Socket: d.socket(),
			BinDir: d.bin,
			Output: containerdLog{},
			// The harness gives the stop StopTimeout: Stop's sweep of the
			// pod sandboxes half of it, then containerd a quarter after
			// SIGTERM, so that the kill of its group and of the shims left
			// still fit (with the default 10 s, containerd slow to exit with
			// 100 Pods outlived --stop-timeout 8 s: the stop was abandoned,
			// exit 1, and the shims and containers were left running).
			StopGrace: cmp.Or(h.StopTimeout, harness.DefaultStopTimeout) / 4,
			BeforeReady: func(ctx context.Context) error {
				_, err := images.Import(ctx, d.socket(), d.images, snapshotter, klog.FromContext(ctx).WithName("images"))
				return err
			},
		})
		if err := h.Add(rt, nil); err != nil {
			return err
		}
		deps = append(deps, noderuntime.Name)
	}
	k := c.newKubelet()
	if c.ControllersBuilt != nil {
		c.ControllersBuilt(k.ReclaimCSI)
	}
	if err := h.Add(k, args[kubelet.Name], deps...); err != nil {
		return err
	}
	if !c.Options.DisableProxy {
		if err := h.Add(proxy.New(), args[proxy.Name], append([]string{kubelet.Name}, c.ProxyAfter...)...); err != nil {
			return err
		}
	}
	if err := c.addNetwork(h, args); err != nil {
		return err
	}
	// KEP-3920 on nodes: the node reports its gates with the kubelet's
	// credential, once its Node is registered (it never fails the harness).
	return h.Add(&featurepub.Reporter{
		Node:       c.Name,
		Kubeconfig: c.Kubeconfig(),
		Plan:       func() *scoping.Plan { return h.Status().Plan },
		UserAgent:  "k3s-like-feature-reporter",
	}, nil, kubelet.Name)
}

// AfterStop is what the node leaves undone once its components stopped:
// it unmounts what the kubelet and containerd mounted and, with
// --cleanup-on-stop, removes kube-proxy's, the kubelet's and flannel's
// host rules (and flannel's device and routes).
func (c Config) AfterStop(ctx context.Context, log logr.Logger) {
	n, err := mounts.UnmountUnder(c.DataDir, newDirs(c.DataDir).run)
	if err != nil {
		log.Error(err, "Unmounting the node's mounts")
	}
	log.Info("Unmounted the node's mounts", "count", n)
	if !c.Options.cleanupOnStop {
		return
	}
	var errs []error
	if !c.Options.DisableProxy {
		errs = append(errs, kubenode.CleanupProxyRules(ctx))
	}
	errs = append(errs, kubenode.CleanupKubeletRules(), c.cleanupFlannel())
	if err := errors.Join(errs...); err != nil {
		log.Error(err, "Removing the node's host rules")
		return
	}
	log.Info("Removed the node's host rules (--cleanup-on-stop)")
}

// cniConfigName is the component that writes the node's CNI configuration.
const cniConfigName = "cni-config"

// PrepareRuntime writes containerd's configuration and its shim and CNI
// plugins (prepareBin; nothing with --container-runtime-endpoint).
func (c Config) PrepareRuntime() error {
	if c.Options.runtimeEndpoint != "" {
		return nil
	}
	d := newDirs(c.DataDir)
	regFile := c.Options.privateRegistry
	if regFile == "" {
		regFile = defaultRegistriesFile
	}
	regs, err := loadRegistries(regFile, c.Options.privateRegistry != "")
	if err != nil {
		return err
	}
	for _, dir := range []string{d.images, d.cniConf, d.run, filepath.Dir(d.containerdConfig())} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := c.prepareBin(d, cli.Logger().WithName("node")); err != nil {
		return err
	}
	if err := writeHostsDir(d.hostsDir(), regs); err != nil {
		return err
	}
	return atomicfile.Write(d.containerdConfig(), []byte(containerdConfig(d)), 0o600)
}

// containerdCommand is how the node runs containerd: the embedded helper
// program in d.bin (prepareBin unpacks it there before the node starts)
// or, in a binary built without helpers, the binary itself.
func containerdCommand(d dirs) ([]string, error) {
	a, err := helpers.Embedded()
	if err != nil {
		return nil, err
	}
	if a != nil {
		return []string{filepath.Join(d.bin, ContainerdName), "--config", d.containerdConfig()}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return []string{self, ContainerdCommand, "--config", d.containerdConfig()}, nil
}

// prepareBin makes d.bin (DATA_DIR/agent/bin, the one path containerd's
// configuration names) hold containerd, the shim and the CNI plugins: a
// link to the embedded helpers, unpacked into DATA_DIR/data/HASH/bin;
// built without them, a directory of links to this binary, which runs the
// shim and each plugin under its name (and containerd as a subcommand). The path stays across upgrades: containerd records the shim's path
// in each task's bundle, and without it would drop the task of a shim
// started before.
func (c Config) prepareBin(d dirs, log logr.Logger) error {
	a, err := helpers.Embedded()
	if err != nil {
		return err
	}
	if a != nil {
		for _, name := range append([]string{ContainerdName, ShimName}, CNIPlugins()...) {
			if !slices.ContainsFunc(a.Files(), func(f helpers.File) bool { return f.Name == name }) {
				return fmt.Errorf("node: the embedded helpers (%s) lack %s (hack/helpers.sh builds them)", a.Hash(), name)
			}
		}
		start := time.Now()
		res, err := a.Unpack(c.DataDir, d.bin)
		if err != nil {
			return err
		}
		log.Info("Unpacked the node's helpers", "bin", d.bin, "to", res.Bin, "written", res.Written,
			"pruned", res.Pruned, "keptInUse", res.InUse, "took", time.Since(start).Round(time.Millisecond))
		return nil
	}
	log.Info("This binary has no helpers embedded (go build without -tags embedhelpers; make build embeds them): containerd runs the binary itself as its shim and CNI plugins", "bin", d.bin)
	if fi, err := os.Lstat(d.bin); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if err := os.Remove(d.bin); err != nil { // the link to the helpers of another build
			return err
		}
	}
	if err := os.MkdirAll(d.bin, 0o700); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, name := range append([]string{ShimName}, CNIPlugins()...) {
		link := filepath.Join(d.bin, name)
		_ = os.Remove(link)
		if err := os.Symlink(self, link); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig is containerd's configuration for the node: its state
// and sockets under d.run, its images and snapshots under the data dir,
// the CRI with the project's sandbox image, runc from the host, the
// cgroupfs driver, the CNI plugins of this binary, registry mirrors from
// d.hostsDir() only (not the host's /etc/containerd/certs.d).
func containerdConfig(d dirs) string {
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
		q(filepath.Join(d.bin, ShimName)), q(filepath.Join(d.run, "runc")), q(d.bin), q(d.cniConf))
}

// writeCNIConfig waits until flannel has the node's lease (its Node's pod
// CIDR), writes the bridge network for it, and waits for the stop.
func (c Config) writeCNIConfig(ctx context.Context, f *flannel.Flannel) error {
	n, err := f.Network(ctx)
	if ctx.Err() != nil {
		return nil // stopped before flannel was up
	}
	if err != nil {
		return err
	}
	d := newDirs(c.DataDir)
	if err := atomicfile.Write(filepath.Join(d.cniConf, "10-k3s-like.conflist"), []byte(cniConflist(n.PodCIDR.String(), n.MTU, d)), 0o600); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Wrote the node's CNI configuration", "podCIDR", n.PodCIDR, "mtu", n.MTU)
	<-ctx.Done()
	return nil
}

// cniConflist is the node's pod network: a bridge with the node's pod
// CIDR (host-local addresses) and flannel's MTU, port mappings, loopback.
// No masquerade: traffic to other nodes' Pods keeps its Pod IP, and
// flannel's rules masquerade what leaves the cluster CIDR.
func cniConflist(cidr string, mtu int, d dirs) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "k3s-like",
  "plugins": [
    {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true, "mtu": %d,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, mtu, filepath.Join(d.run, "ipam"), cidr)
}

// containerdLog sends containerd's output to the process's log.
type containerdLog struct{}

func (containerdLog) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		if line != "" {
			cli.Logger().WithName("containerd").V(1).Info(line)
		}
	}
	return len(p), nil
}
