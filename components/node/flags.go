package node

import (
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
)

// Settings are what a distro decides for its kubelet; DefaultKubeletFlags
// turns them into the kubelet's flags.
type Settings struct {
	// Name is the node's name (--hostname-override).
	Name string
	// IP is the node's IP (--node-ip); empty: upstream's choice.
	IP net.IP
	// RootDir is the kubelet's directory (--root-dir).
	RootDir string
	// RuntimeSocket is the CRI's unix socket (--container-runtime-endpoint).
	RuntimeSocket string
	// ClusterDNS and ClusterDomain are the cluster DNS Service's IP and
	// the cluster's domain.
	ClusterDNS    string
	ClusterDomain string
	// Labels and Taints are registered with the node (--node-labels,
	// --register-with-taints: key=value:Effect).
	Labels map[string]string
	Taints []string
	// ServingBootstrap makes the kubelet request its serving certificate
	// from the apiserver (--rotate-server-certificates: signer
	// kubernetes.io/kubelet-serving, approved by an
	// approvers.ServingApprover) instead
	// of reading the one Files.EnsureNode wrote.
	ServingBootstrap bool
	// AllowCgroupV1 sets failCgroupV1: false (v1.35+ refuses a cgroup v1
	// host otherwise). See CgroupV1.
	AllowCgroupV1 bool
	// ProtectKernelDefaults makes the kubelet exit when the host's kernel
	// tunables differ from its defaults, instead of setting them (k3s's
	// --protect-kernel-defaults, CIS 4.2.6 of older benchmarks).
	ProtectKernelDefaults bool
}

// DefaultKubeletFlags are the kubelet's flags for a node of a control
// plane whose PKI is l (the node's certificates from Files.EnsureNode):
// its kubeconfig and serving certificate (or, with ServingBootstrap, a
// request for one), clients authenticated by the
// cluster's client CA and authorized by the apiserver (Webhook, no
// anonymous access, no read-only port), its directories under RootDir,
// the runtime's socket, the cgroupfs driver, the image garbage
// collector and disk eviction thresholds of k3s (5% free), and the CIS
// Benchmark's kubelet items k3s's hardening guide sets: idle streaming
// connections closed after 5 minutes (4.2.5), strong TLS cipher suites
// only (4.2.12), and its client certificate renewed while it runs
// (--rotate-certificates, 4.2.10: a CSR of the node, approved by the
// controller-manager for the node's own name), with or without a
// bootstrap kubeconfig.
func DefaultKubeletFlags(l pki.Layout, s Settings) []kubeargs.Arg {
	nl := l.NodeLayout(s.Name)
	args := []kubeargs.Arg{
		{Key: "kubeconfig", Value: nl.Kubeconfig()},
		{Key: "client-ca-file", Value: l.ClientCA().CertFile},
		{Key: "anonymous-auth", Value: "false"},
		{Key: "authentication-token-webhook", Value: "true"},
		{Key: "authorization-mode", Value: "Webhook"},
		{Key: "read-only-port", Value: "0"},
		{Key: "hostname-override", Value: s.Name},
		{Key: "root-dir", Value: s.RootDir},
		{Key: "cert-dir", Value: filepath.Join(s.RootDir, "pki")},
		{Key: "volume-plugin-dir", Value: filepath.Join(s.RootDir, "volume-plugins")},
		{Key: "container-runtime-endpoint", Value: "unix://" + s.RuntimeSocket},
		{Key: "cgroup-driver", Value: "cgroupfs"},
		{Key: "serialize-image-pulls", Value: "false"},
		{Key: "eviction-hard", Value: "imagefs.available<5%,nodefs.available<5%"},
		{Key: "eviction-minimum-reclaim", Value: "imagefs.available=10%,nodefs.available=10%"},
		{Key: "image-gc-high-threshold", Value: "95"},
		{Key: "image-gc-low-threshold", Value: "90"},
		{Key: "streaming-connection-idle-timeout", Value: "5m"},
		{Key: "tls-cipher-suites", Value: strings.Join(pki.StrongCipherSuites(), ",")},
		{Key: "rotate-certificates", Value: "true"},
	}
	if s.ProtectKernelDefaults {
		args = append(args, kubeargs.Arg{Key: "protect-kernel-defaults", Value: "true"})
	}
	if s.ServingBootstrap {
		args = append(args, kubeargs.Arg{Key: "rotate-server-certificates", Value: "true"})
	} else {
		args = append(args, kubeargs.Arg{Key: "tls-cert-file", Value: nl.Serving().CertFile},
			kubeargs.Arg{Key: "tls-private-key-file", Value: nl.Serving().KeyFile})
	}
	if s.IP != nil {
		args = append(args, kubeargs.Arg{Key: "node-ip", Value: s.IP.String()})
	}
	if s.ClusterDNS != "" {
		args = append(args, kubeargs.Arg{Key: "cluster-dns", Value: s.ClusterDNS})
	}
	if s.ClusterDomain != "" {
		args = append(args, kubeargs.Arg{Key: "cluster-domain", Value: s.ClusterDomain})
	}
	if len(s.Labels) > 0 {
		labels := make([]string, 0, len(s.Labels))
		for k, v := range s.Labels {
			labels = append(labels, k+"="+v)
		}
		sort.Strings(labels)
		args = append(args, kubeargs.Arg{Key: "node-labels", Value: strings.Join(labels, ",")})
	}
	if len(s.Taints) > 0 {
		args = append(args, kubeargs.Arg{Key: "register-with-taints", Value: strings.Join(s.Taints, ",")})
	}
	if s.AllowCgroupV1 {
		args = append(args, kubeargs.Arg{Key: "fail-cgroupv1", Value: strconv.FormatBool(false)})
	}
	return args
}

// CgroupV1 reports whether this host's /sys/fs/cgroup is not the cgroup v2
// unified hierarchy (a v1 or hybrid host), where v1.35+ kubelets refuse to
// start unless failCgroupV1 is false.
func CgroupV1() (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return false, err
	}
	return st.Type != unix.CGROUP2_SUPER_MAGIC, nil
}

// ProxySettings are what a distro decides for its kube-proxy;
// DefaultKubeProxyFlags turns them into kube-proxy's flags.
type ProxySettings struct {
	// Name is the node's name (--hostname-override).
	Name string
	// Kubeconfig is kube-proxy's kubeconfig.
	Kubeconfig string
	// ClusterCIDR is the pods' CIDR (--cluster-cidr), which tells local
	// traffic from outside traffic.
	ClusterCIDR string
	// Mode is --proxy-mode: "" for upstream's default (iptables).
	Mode string
}

// DefaultKubeProxyFlags are kube-proxy's flags as k3s sets them: the
// node's name, its kubeconfig, the cluster CIDR, /healthz on loopback
// (127.0.0.1:10256), metrics on loopback, and the conntrack settings left
// as the host has them (conntrack-max-per-core=0 and the timeouts at 0s:
// kube-proxy then writes none of those process-wide sysctls).
func DefaultKubeProxyFlags(s ProxySettings) []kubeargs.Arg {
	args := []kubeargs.Arg{
		{Key: "hostname-override", Value: s.Name},
		{Key: "kubeconfig", Value: s.Kubeconfig},
		{Key: "healthz-bind-address", Value: "127.0.0.1:10256"},
		{Key: "metrics-bind-address", Value: "127.0.0.1:10249"},
		{Key: "conntrack-max-per-core", Value: "0"},
		{Key: "conntrack-tcp-timeout-established", Value: "0s"},
		{Key: "conntrack-tcp-timeout-close-wait", Value: "0s"},
	}
	if s.ClusterCIDR != "" {
		args = append(args, kubeargs.Arg{Key: "cluster-cidr", Value: s.ClusterCIDR})
	}
	if s.Mode != "" {
		args = append(args, kubeargs.Arg{Key: "proxy-mode", Value: s.Mode})
	}
	return args
}
