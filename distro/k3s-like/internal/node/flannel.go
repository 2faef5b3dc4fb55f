package node

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/node/kubelet"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// FlannelNone is --flannel-backend=none: no flannel and no CNI
// configuration; the user brings a CNI.
const FlannelNone = "none"

// FlannelBackends are the values of --flannel-backend, the default first.
func FlannelBackends() []string { return append(flannel.Backends(), FlannelNone) }

// addFlannelFlags adds --flannel-iface and, on a server, --flannel-backend
// (an agent runs its server's, as k3s's).
func (o *Options) addFlannelFlags(f *pflag.FlagSet, server bool) {
	if server {
		f.StringVar(&o.FlannelBackend, "flannel-backend", flannel.VXLAN, "The pod network between nodes, for every node of the cluster (agents take the server's): "+
			strings.Join(FlannelBackends(), ", ")+" (no flannel and no CNI configuration: bring your own CNI); must be the same on every server")
	}
	f.StringVar(&o.flannelIface, "flannel-iface", "", "The interface (name or IP) flannel reaches the other nodes through (default the one holding the node's IP)")
}

// CheckFlannelBackend checks a --flannel-backend value ("" is the default).
func CheckFlannelBackend(v string) error {
	if v != "" && !slices.Contains(FlannelBackends(), v) {
		return fmt.Errorf("--flannel-backend=%s: want %s", v, strings.Join(FlannelBackends(), ", "))
	}
	return nil
}

// flannelBackend is the backend the node runs.
func (c Config) flannelBackend() string {
	if c.Options.FlannelBackend == "" {
		return flannel.VXLAN
	}
	return c.Options.FlannelBackend
}

// flannelArgs are the flannel component's arguments for this node: its
// kubelet's credential, its Node, its IP and --flannel-iface, the
// backend, the cluster CIDR, and its files under the node's directories.
func (c Config) flannelArgs() ([]string, error) {
	ip, err := c.IP()
	if err != nil {
		return nil, err
	}
	d := newDirs(c.DataDir)
	args := []string{
		"--kubeconfig-file=" + c.Kubeconfig(),
		"--node-name=" + c.Name,
		"--public-ip=" + ip.String(),
		"--backend=" + c.flannelBackend(),
		"--network=" + c.ClusterCIDR,
		"--net-config-path=" + filepath.Join(d.agent, "etc", "flannel", "net-conf.json"),
		"--subnet-file=" + filepath.Join(d.run, "flannel", "subnet.env"),
	}
	if c.Options.flannelIface != "" {
		args = append(args, "--iface="+c.Options.flannelIface)
	}
	return args, nil
}

// addNetwork adds the node's pod network, unless --flannel-backend=none:
// flannel after the kubelet (its Node must exist and have a pod CIDR),
// then the writer of the CNI configuration, from flannel's lease and MTU.
// NODE_NAME, which flannel reads, is set at the barrier.
func (c Config) addNetwork(h *harness.Harness, args map[string][]string) error {
	if c.flannelBackend() == FlannelNone {
		return nil
	}
	h.AfterBarrier = append(h.AfterBarrier, func(*scoping.Plan) error {
		prev, err := flannel.SetNodeNameEnv(c.Name)
		if prev != "" && prev != c.Name {
			cli.Logger().Info("Replaced NODE_NAME for flannel", "was", prev, "node", c.Name)
		}
		return err
	})
	f := flannel.New()
	if err := h.Add(f, args[flannel.Name], kubelet.Name); err != nil {
		return err
	}
	return h.Add(&harness.Func{ComponentName: cniConfigName, RunFunc: func(ctx context.Context) error {
		return c.writeCNIConfig(ctx, f)
	}}, nil, flannel.Name)
}

// cleanupFlannel removes flannel's device, routes and rules
// (--cleanup-on-stop).
func (c Config) cleanupFlannel() error {
	if c.flannelBackend() == FlannelNone {
		return nil
	}
	network, err := netip.ParsePrefix(c.ClusterCIDR)
	if err != nil {
		return fmt.Errorf("the cluster CIDR %q: %w", c.ClusterCIDR, err)
	}
	return flannel.Cleanup(network)
}
