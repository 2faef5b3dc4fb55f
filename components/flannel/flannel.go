package flannel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flannel-io/flannel/pkg/backend"
	_ "github.com/flannel-io/flannel/pkg/backend/hostgw" // registers host-gw
	_ "github.com/flannel-io/flannel/pkg/backend/vxlan"  // registers vxlan
	"github.com/flannel-io/flannel/pkg/ip"
	"github.com/flannel-io/flannel/pkg/ipmatch"
	"github.com/flannel-io/flannel/pkg/subnet/kube"
	"github.com/flannel-io/flannel/pkg/trafficmngr/iptables"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the flannel component's name.
const Name = names.Flannel

// The backends the adapter runs: VXLAN encapsulates the Pods' packets in
// UDP (port 8472) between the nodes' IPs, HostGW routes each node's pod
// CIDR through its node IP (all nodes on one L2 network).
const (
	VXLAN  = "vxlan"
	HostGW = "host-gw"
)

// Backends are the values --backend takes.
func Backends() []string { return []string{VXLAN, HostGW} }

// AnnotationPrefix is the prefix of the annotations flannel writes on each
// Node (its backend, its public IP, the vxlan device's MAC), flanneld's and
// k3s's default.
const AnnotationPrefix = "flannel.alpha.coreos.com"

// resyncSeconds is how often flannel puts its iptables rules back
// (flanneld's --iptables-resync default).
const resyncSeconds = 5

// Network is what flannel set up for its node.
type Network struct {
	Backend     string
	ClusterCIDR netip.Prefix // every node's pod CIDR is in it
	PodCIDR     netip.Prefix // the node's lease: its Node's spec.podCIDR
	MTU         int          // for the Pods' interfaces: the backend's
	Iface       string       // the interface to the other nodes
	PublicIP    netip.Addr   // the node's address the others send to
}

// Flannel runs flannel's Kubernetes subnet manager and backend as a
// harness component: the lease is its Node's spec.podCIDR, the routes to
// every other node's pod CIDR follow their Nodes. Create it with New; a
// value runs once.
type Flannel struct {
	kubeconfig  string
	nodeName    string
	iface       string
	publicIP    string
	backendType string
	network     string
	netConf     string
	subnetFile  string

	ready chan struct{} // closed once net is set
	net   Network
	phase atomic.Pointer[string] // what Run waits for, for Ready's error
}

// New returns a flannel component.
func New() *Flannel { return &Flannel{ready: make(chan struct{})} }

// Name returns "flannel".
func (f *Flannel) Name() string { return Name }

// AddFlags adds the adapter's flags, named after flanneld's where it has
// them, to the scope. It has no other effect.
func (f *Flannel) AddFlags(s *scoping.Scope) error {
	fs := s.FlagSet()
	fs.StringVar(&f.kubeconfig, "kubeconfig-file", "", "kubeconfig of a credential that may list and watch Nodes and patch this node's status (Rules); required")
	fs.StringVar(&f.nodeName, "node-name", "", "this node's Node: its spec.podCIDR is the lease, its annotations carry its backend data; required, and NODE_NAME must be it (SetNodeNameEnv)")
	fs.StringVar(&f.iface, "iface", "", "interface (name or IP) to the other nodes (default the one holding --public-ip, else the default route's)")
	fs.StringVar(&f.publicIP, "public-ip", "", "IP the other nodes reach this node at (default the interface's first IPv4 address)")
	fs.StringVar(&f.backendType, "backend", VXLAN, "backend: "+strings.Join(Backends(), " or "))
	fs.StringVar(&f.network, "network", "", "the cluster's pod CIDR (IPv4), which every Node's spec.podCIDR is in; required")
	fs.StringVar(&f.netConf, "net-config-path", "", "where Run writes flannel's net-conf.json, from --network and --backend; required")
	fs.StringVar(&f.subnetFile, "subnet-file", "", "where Run writes flannel's subnet.env (FLANNEL_NETWORK, FLANNEL_SUBNET, FLANNEL_MTU); required")
	return nil
}

// Complete checks the flags (harness.Completer); each error is a
// *scoping.FlagError naming the flag. It reads and writes nothing.
func (f *Flannel) Complete(*scoping.Scope) error {
	for flag, v := range map[string]string{"--kubeconfig-file": f.kubeconfig, "--node-name": f.nodeName, "--network": f.network,
		"--net-config-path": f.netConf, "--subnet-file": f.subnetFile} {
		if v == "" {
			return &scoping.FlagError{Component: Name, Flag: flag, Err: errors.New("required")}
		}
	}
	if !slices.Contains(Backends(), f.backendType) {
		return &scoping.FlagError{Component: Name, Flag: "--backend", Value: f.backendType, Err: fmt.Errorf("want %s", strings.Join(Backends(), " or "))}
	}
	if p, err := netip.ParsePrefix(f.network); err != nil || !p.Addr().Is4() || p.Masked() != p {
		return &scoping.FlagError{Component: Name, Flag: "--network", Value: f.network, Err: errors.New("want an IPv4 network such as 10.42.0.0/16")}
	}
	if f.publicIP != "" {
		if a, err := netip.ParseAddr(f.publicIP); err != nil || !a.Is4() {
			return &scoping.FlagError{Component: Name, Flag: "--public-ip", Value: f.publicIP, Err: errors.New("want an IPv4 address")}
		}
	}
	return nil
}

// Run waits until its Node has a pod CIDR, then runs flannel as flanneld
// does with --kube-subnet-mgr --ip-masq: the backend's device and routes,
// the lease's annotations, the masquerade and forward rules, the subnet
// file; it is ready then, and serves until ctx ends. It never exits the
// process itself (see the package documentation for what upstream may).
func (f *Flannel) Run(ctx context.Context) error {
	if got := os.Getenv(NodeNameEnv); got != f.nodeName {
		return &EnvError{Name: NodeNameEnv, Value: got, Want: f.nodeName}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--kubeconfig-file", Value: f.kubeconfig, Err: err}
	}
	cfg.UserAgent = "kubeharness-flannel"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--kubeconfig-file", Value: f.kubeconfig, Err: err}
	}
	podCIDR, err := f.waitPodCIDR(ctx, client)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the Node had a pod CIDR
		}
		return err
	}
	cluster := netip.MustParsePrefix(f.network)
	if !cluster.Contains(podCIDR.Addr()) || podCIDR.Bits() < cluster.Bits() {
		return &scoping.FlagError{Component: Name, Flag: "--network", Value: f.network,
			Err: fmt.Errorf("Node %s's pod CIDR %s is not in it", f.nodeName, podCIDR)}
	}
	if err := f.writeNetConf(); err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--net-config-path", Value: f.netConf, Err: err}
	}

	// Upstream's goroutines end with ctx; those given wg are waited for.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	f.setPhase("starting flannel's kube subnet manager")
	sm, err := kube.NewSubnetManager(ctx, "", f.kubeconfig, AnnotationPrefix, f.netConf, true)
	if err != nil {
		return fmt.Errorf("%s: the kube subnet manager: %w", Name, err)
	}
	config, err := sm.GetNetworkConfig(ctx)
	if err != nil {
		return fmt.Errorf("%s: the network configuration: %w", Name, err)
	}
	ext, err := f.externalInterface()
	if err != nil {
		return err
	}
	be, err := backend.NewManager(ctx, sm, ext).GetBackend(config.BackendType)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--backend", Value: f.backendType, Err: err}
	}
	f.setPhase("registering the " + f.backendType + " network (acquiring the lease)")
	bn, err := be.RegisterNetwork(ctx, &wg, config)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: registering the %s network on %s: %w", Name, f.backendType, ext.IfaceName, err)
	}
	prevNetwork, prevSubnet := readSubnetFile(f.subnetFile)
	noIPv6 := ip.IP6Net{IP: (*ip.IP6)(big.NewInt(0))}
	tm := &iptables.IPTablesManager{}
	if err := tm.Init(ctx); err != nil {
		return fmt.Errorf("%s: iptables: %w", Name, err)
	}
	if err := tm.SetupAndEnsureMasqRules(ctx, config.Network, prevSubnet, prevNetwork, config.IPv6Network, noIPv6, noIPv6,
		bn.Lease(), resyncSeconds, false); err != nil {
		return fmt.Errorf("%s: the masquerade rules: %w", Name, err)
	}
	tm.SetupAndEnsureForwardRules(ctx, config.Network, config.IPv6Network, resyncSeconds)
	if err := sm.HandleSubnetFile(f.subnetFile, config, true, bn.Lease().Subnet, bn.Lease().IPv6Subnet, bn.MTU()); err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--subnet-file", Value: f.subnetFile, Err: err}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		bn.Run(ctx)
	}()
	// Upstream installs the rules from goroutines: ready once they are in.
	f.setPhase("waiting for its iptables rules (FLANNEL-POSTRTG, FLANNEL-FWD)")
	if err := waitRules(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: iptables: %w", Name, err)
	}
	if err := sm.CompleteLease(ctx, bn.Lease(), &wg); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: completing the lease (NetworkUnavailable=False on Node %s): %w", Name, f.nodeName, err)
	}
	f.net = Network{
		Backend: f.backendType, ClusterCIDR: cluster, PodCIDR: podCIDR, MTU: bn.MTU(),
		Iface: ext.IfaceName, PublicIP: addrOf(ext.ExtAddr),
	}
	close(f.ready)
	klog.FromContext(ctx).Info("flannel is up", "node", f.nodeName, "backend", f.backendType, "podCIDR", podCIDR, "mtu", bn.MTU(), "iface", ext.IfaceName, "publicIP", ext.ExtAddr)
	<-ctx.Done()
	return nil
}

// Ready waits until Run set the network up.
func (f *Flannel) Ready(ctx context.Context) error {
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		if p := f.phase.Load(); p != nil {
			return fmt.Errorf("%w (flannel was %s)", ctx.Err(), *p)
		}
		return ctx.Err()
	}
}

// Network waits until Run set the network up and returns it.
func (f *Flannel) Network(ctx context.Context) (Network, error) {
	if err := f.Ready(ctx); err != nil {
		return Network{}, err
	}
	return f.net, nil
}

func (f *Flannel) setPhase(p string) { f.phase.Store(&p) }

// waitPodCIDR polls the Node until the controller-manager gave it a pod
// CIDR (flannel's AcquireLease fails at once without one).
func (f *Flannel) waitPodCIDR(ctx context.Context, client kubernetes.Interface) (netip.Prefix, error) {
	f.setPhase("waiting for Node " + f.nodeName + "'s pod CIDR")
	var cidr string
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, f.nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil // not registered yet, or the apiserver restarts
		}
		cidr = n.Spec.PodCIDR
		return cidr != "", nil
	})
	if err != nil {
		return netip.Prefix{}, err
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s: Node %s's pod CIDR %q: want an IPv4 network", Name, f.nodeName, cidr)
	}
	return p, nil
}

// netConf is flanneld's net-conf.json (k3s's): the cluster's pod CIDR
// and the backend, IPv4 only.
func netConf(network, backendType string) ([]byte, error) {
	return json.MarshalIndent(map[string]any{
		"Network":    network,
		"EnableIPv4": true,
		"EnableIPv6": false,
		"Backend":    map[string]string{"Type": backendType},
	}, "", "  ")
}

func (f *Flannel) writeNetConf() error {
	b, err := netConf(f.network, f.backendType)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.netConf), 0o700); err != nil {
		return err
	}
	tmp := f.netConf + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.netConf)
}

// externalInterface is the interface to the other nodes, as flanneld
// finds it: --iface, else the interface holding --public-ip, else the
// default route's. With both, the public IP is used if that interface
// holds it (host-gw wants the two equal).
func (f *Flannel) externalInterface() (*backend.ExternalInterface, error) {
	stack, err := ipmatch.GetIPFamily(true, false)
	if err != nil {
		return nil, err
	}
	if f.publicIP != "" {
		ext, err := ipmatch.LookupExtIface(f.publicIP, "", "", stack, ipmatch.PublicIPOpts{})
		switch {
		case err == nil && (f.iface == "" || f.iface == ext.IfaceName || f.iface == f.publicIP):
			return ext, nil
		case f.iface == "":
			return nil, &scoping.FlagError{Component: Name, Flag: "--public-ip", Value: f.publicIP, Err: err}
		}
	}
	ext, err := ipmatch.LookupExtIface(f.iface, "", "", stack, ipmatch.PublicIPOpts{})
	if err != nil {
		return nil, &scoping.FlagError{Component: Name, Flag: "--iface", Value: f.iface, Err: err}
	}
	return ext, nil
}

// readSubnetFile reads FLANNEL_NETWORK and FLANNEL_SUBNET of an earlier
// run's subnet file, so that masquerade rules for another network are
// removed; zero values when there is none.
func readSubnetFile(path string) (network, subnet ip.IP4Net) {
	b, err := os.ReadFile(path)
	if err != nil {
		return network, subnet
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			continue
		}
		switch k {
		case "FLANNEL_NETWORK":
			network = ip.FromIPNet(n)
		case "FLANNEL_SUBNET":
			subnet = ip.FromIPNet(n)
		}
	}
	return network, subnet
}

func addrOf(a net.IP) netip.Addr {
	addr, _ := netip.AddrFromSlice(a.To4())
	return addr
}
