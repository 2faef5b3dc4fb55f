package controlplane

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
)

// Default secure ports, upstream's.
const (
	DefaultAPIServerPort         = 6443
	DefaultSchedulerPort         = 10259
	DefaultControllerManagerPort = 10257
)

// DefaultServiceClusterIPRange is upstream's default service CIDR; its
// first address, 10.0.0.1, is pki.Config's default service IP.
const DefaultServiceClusterIPRange = "10.0.0.0/24"

// DefaultClusterDomain is the cluster's DNS domain unless
// Settings.ClusterDomain says otherwise.
const DefaultClusterDomain = "cluster.local"

// Settings are what a binary chooses about its control plane; every zero
// value has a default. The scheduler and the controller-manager always
// listen on 127.0.0.1: only the apiserver is meant to be reached from
// elsewhere.
type Settings struct {
	// BindAddress is the apiserver's --bind-address; "" means 127.0.0.1.
	BindAddress string
	// AdvertiseAddress is the apiserver's --advertise-address: the
	// "kubernetes" Service's endpoint and the address APIServerURL (the
	// admin's kubeconfig) points at. "" means BindAddress, unless that is
	// unspecified (0.0.0.0 or ::), then 127.0.0.1.
	AdvertiseAddress string
	// SANs are more names, IP addresses or DNS names, for the apiserver's
	// serving certificate (k3s's --tls-san).
	SANs []string
	// APIServerPort, SchedulerPort and ControllerManagerPort are the
	// components' secure ports; 0 means the Default…Port constants.
	APIServerPort, SchedulerPort, ControllerManagerPort int
	// ServiceClusterIPRange is the apiserver's --service-cluster-ip-range;
	// "" means DefaultServiceClusterIPRange.
	ServiceClusterIPRange string
	// ClusterCIDR is the controller-manager's --cluster-cidr, the range of
	// the nodes' pod CIDRs (with --allocate-node-cidrs=true); "" allocates
	// none.
	ClusterCIDR string
	// ClusterDomain is the cluster's DNS domain: the serving certificate
	// covers kubernetes.default.svc.<ClusterDomain>, and the service-account
	// issuer is https://kubernetes.default.svc.<ClusterDomain>. "" means
	// DefaultClusterDomain.
	ClusterDomain string
	// EtcdServers is the apiserver's --etcd-servers, comma-separated client
	// URLs; "" means the embedded etcd at its default client port
	// (https://127.0.0.1:2379, package etcd).
	EtcdServers string
	// EtcdTLS is the apiserver's TLS towards etcd. nil means the layout's:
	// the etcd CA and the apiserver's etcd client certificate, which the
	// embedded etcd (EtcdConfig) trusts. An external etcd's files are passed
	// as given, empty ones as empty values.
	EtcdTLS *EtcdTLS
	// EtcdAdvertiseAddress is the embedded etcd's address on the network
	// of its peers, when it is a member of a cluster that can grow
	// (etcd.Cluster.AdvertiseIP): its serving certificate, also its peer
	// and client certificate, covers it. "" for a member on loopback.
	EtcdAdvertiseAddress string
	// LeaderElect is the scheduler's and the controller-manager's
	// --leader-elect: on whenever more than one server of the cluster can
	// run at once.
	LeaderElect bool
}

// EtcdTLS are the apiserver's --etcd-cafile, --etcd-certfile and
// --etcd-keyfile.
type EtcdTLS struct {
	CAFile, CertFile, KeyFile string
}

func (s Settings) bindAddress() string {
	if s.BindAddress == "" {
		return "127.0.0.1"
	}
	return s.BindAddress
}

// Advertised is the apiserver's --advertise-address: AdvertiseAddress,
// else BindAddress, unless that is not a specific IP address, then
// 127.0.0.1.
func (s Settings) Advertised() string {
	if s.AdvertiseAddress != "" {
		return s.AdvertiseAddress
	}
	return s.localAddress()
}

// localAddress is where this host's components reach the apiserver: the
// bind address, or loopback when it listens on every address.
func (s Settings) localAddress() string {
	if ip := net.ParseIP(s.bindAddress()); ip != nil && !ip.IsUnspecified() {
		return s.bindAddress()
	}
	return "127.0.0.1"
}

// endpointReconciler: the "kubernetes" Service's endpoints may not be
// loopback; with the apiserver on loopback nothing else could reach it
// anyway.
func (s Settings) endpointReconciler() string {
	if ip := net.ParseIP(s.Advertised()); ip == nil || ip.IsLoopback() {
		return "none"
	}
	return "lease"
}

func (s Settings) clusterDomain() string {
	if s.ClusterDomain == "" {
		return DefaultClusterDomain
	}
	return s.ClusterDomain
}

// ServiceAccountIssuer is the apiserver's --service-account-issuer,
// https://kubernetes.default.svc.<ClusterDomain> (as k3s).
func (s Settings) ServiceAccountIssuer() string {
	return "https://kubernetes.default.svc." + s.clusterDomain()
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// APIServerURL is https://<Advertised()>:<APIServerPort>: the server a
// kubeconfig for users, on this host or another, points at.
func (s Settings) APIServerURL() string {
	return "https://" + net.JoinHostPort(s.Advertised(), strconv.Itoa(orDefault(s.APIServerPort, DefaultAPIServerPort)))
}

// LocalAPIServerURL is the server the components' kubeconfigs point at:
// the bind address, or https://127.0.0.1:<APIServerPort> when the
// apiserver listens on every address (the advertised address may be one a
// NAT forwards, not this host's).
func (s Settings) LocalAPIServerURL() string {
	return "https://" + net.JoinHostPort(s.localAddress(), strconv.Itoa(orDefault(s.APIServerPort, DefaultAPIServerPort)))
}

func (s Settings) serviceClusterIPRange() string {
	if s.ServiceClusterIPRange == "" {
		return DefaultServiceClusterIPRange
	}
	return s.ServiceClusterIPRange
}

// ServiceIP is the apiserver's service IP: the first address of the
// service CIDR (the "kubernetes" Service's ClusterIP, which its serving
// certificate must cover).
func (s Settings) ServiceIP() (net.IP, error) {
	prefix, err := netip.ParsePrefix(s.serviceClusterIPRange())
	if err != nil {
		return nil, fmt.Errorf("controlplane: service cluster IP range: %w", err)
	}
	first := prefix.Masked().Addr().Next()
	if !first.IsValid() || !prefix.Contains(first) {
		return nil, fmt.Errorf("controlplane: service cluster IP range %s has no first address", prefix)
	}
	return net.IP(first.AsSlice()), nil
}

// PKIConfig is the configuration of pki.Ensure for layout and s: the
// kubeconfigs point at s.LocalAPIServerURL(), and the apiserver's serving
// certificate also covers the service IP, the bind address, the advertised
// address, kubernetes.default.svc.<ClusterDomain> and s.SANs (an entry that
// parses as an IP address is one, any other a DNS name).
func PKIConfig(layout pki.Layout, s Settings) (pki.Config, error) {
	serviceIP, err := s.ServiceIP()
	if err != nil {
		return pki.Config{}, err
	}
	cfg := pki.Config{Dir: layout.Dir, APIServerURL: s.LocalAPIServerURL(), ServiceIP: serviceIP, ClusterDomain: s.clusterDomain()}
	seen := map[string]bool{}
	for _, name := range append([]string{s.bindAddress(), s.Advertised()}, s.SANs...) {
		ip := net.ParseIP(name)
		switch {
		case name == "" || seen[name] || ip.IsUnspecified():
		case ip != nil:
			cfg.ServingIPs = append(cfg.ServingIPs, ip)
		default:
			cfg.ServingDNSNames = append(cfg.ServingDNSNames, name)
		}
		seen[name] = true
	}
	if ip := net.ParseIP(s.EtcdAdvertiseAddress); ip != nil {
		cfg.EtcdIPs = []net.IP{ip}
	}
	return cfg, nil
}

// EtcdConfig is c with the layout's etcd serving certificate and etcd CA,
// the files the apiserver's default etcd flags (nil Settings.EtcdTLS)
// trust and authenticate with.
func EtcdConfig(layout pki.Layout, c etcd.Config) etcd.Config {
	server := layout.EtcdServer()
	c.CertFile, c.KeyFile, c.TrustedCAFile = server.CertFile, server.KeyFile, layout.EtcdCA().CertFile
	return c
}

// DefaultFlags are the default upstream flags of each component (keyed by
// names.APIServer, names.Scheduler and names.ControllerManager) for
// layout and s, without their dashes, for package kubeargs to merge with a
// user's.
func DefaultFlags(layout pki.Layout, s Settings) map[string][]kubeargs.Arg {
	etcdServers := s.EtcdServers
	if etcdServers == "" {
		etcdServers = etcd.Config{}.ClientURL()
	}
	etcdTLS := EtcdTLS{CAFile: layout.EtcdCA().CertFile, CertFile: layout.APIServerEtcdClient().CertFile, KeyFile: layout.APIServerEtcdClient().KeyFile}
	if s.EtcdTLS != nil {
		etcdTLS = *s.EtcdTLS
	}
	return map[string][]kubeargs.Arg{
		names.APIServer: {
			{Key: "etcd-servers", Value: etcdServers},
			{Key: "etcd-cafile", Value: etcdTLS.CAFile},
			{Key: "etcd-certfile", Value: etcdTLS.CertFile},
			{Key: "etcd-keyfile", Value: etcdTLS.KeyFile},
			{Key: "bind-address", Value: s.bindAddress()},
			{Key: "advertise-address", Value: s.Advertised()},
			{Key: "endpoint-reconciler-type", Value: s.endpointReconciler()},
			{Key: "secure-port", Value: strconv.Itoa(orDefault(s.APIServerPort, DefaultAPIServerPort))},
			{Key: "tls-cert-file", Value: layout.APIServerServing().CertFile},
			{Key: "tls-private-key-file", Value: layout.APIServerServing().KeyFile},
			{Key: "client-ca-file", Value: layout.ClientCA().CertFile},
			{Key: "anonymous-auth", Value: "false"},
			// Bootstrap tokens (kube-system/bootstrap-token-*) authenticate
			// joining kubelets until their client certificate is signed.
			{Key: "enable-bootstrap-token-auth", Value: "true"},
			{Key: "authorization-mode", Value: "Node,RBAC"},
			// As kubeadm and k3s: a kubelet's credential may change only its
			// own Node and the Pods bound to it (upstream leaves it off).
			{Key: "enable-admission-plugins", Value: "NodeRestriction"},
			// As k3s and kubeadm: privileged containers are allowed
			// (upstream's default refuses them; Pod Security admission
			// restricts them per namespace).
			{Key: "allow-privileged", Value: "true"},
			{Key: "service-cluster-ip-range", Value: s.serviceClusterIPRange()},
			{Key: "service-account-issuer", Value: s.ServiceAccountIssuer()},
			{Key: "service-account-key-file", Value: layout.ServiceAccountPub()},
			{Key: "service-account-signing-key-file", Value: layout.ServiceAccountKey()},
			{Key: "requestheader-client-ca-file", Value: layout.RequestHeaderCA().CertFile},
			{Key: "requestheader-allowed-names", Value: pki.FrontProxyClientName},
			{Key: "requestheader-extra-headers-prefix", Value: "X-Remote-Extra-"},
			{Key: "requestheader-group-headers", Value: "X-Remote-Group"},
			{Key: "requestheader-username-headers", Value: "X-Remote-User"},
			{Key: "proxy-client-cert-file", Value: layout.FrontProxyClient().CertFile},
			{Key: "proxy-client-key-file", Value: layout.FrontProxyClient().KeyFile},
			{Key: "kubelet-client-certificate", Value: layout.APIServerKubeletClient().CertFile},
			{Key: "kubelet-client-key", Value: layout.APIServerKubeletClient().KeyFile},
			// The kubelets' serving certificates are verified: exec, logs
			// and port-forward cannot be answered by another host.
			{Key: "kubelet-certificate-authority", Value: layout.KubeletServingCA().CertFile},
			// As k3s: a node's name need not resolve (upstream asks for
			// Hostname first).
			{Key: "kubelet-preferred-address-types", Value: "InternalIP,ExternalIP,Hostname"},
			// One process: each component's /debug/pprof would profile all
			// of them (and serve the process's arguments); a distro serves
			// the process's profiles once (k3s-like: its status endpoint).
			{Key: "profiling", Value: "false"},
		},
		names.Scheduler: elected(layout.SchedulerKubeconfig(), orDefault(s.SchedulerPort, DefaultSchedulerPort), s.LeaderElect),
		names.ControllerManager: append(elected(layout.ControllerManagerKubeconfig(), orDefault(s.ControllerManagerPort, DefaultControllerManagerPort), s.LeaderElect),
			s.controllerManagerFlags(layout)...),
	}
}

// controllerManagerFlags are the controller-manager's own flags; it gets
// the service CIDR too (its node IPAM keeps pod CIDRs out of it).
func (s Settings) controllerManagerFlags(layout pki.Layout) []kubeargs.Arg {
	flags := []kubeargs.Arg{
		{Key: "service-account-private-key-file", Value: layout.ServiceAccountKey()},
		{Key: "root-ca-file", Value: layout.ServerCA().CertFile},
		{Key: "use-service-account-credentials", Value: "true"},
		// One signer per purpose: clients (the kubelets' renewals and
		// bootstrap, the apiserver's clients) by the client CA, the
		// kubelets' serving certificates by a CA only the apiserver
		// trusts for them; legacy-unknown signs nothing.
		{Key: "cluster-signing-kubelet-client-cert-file", Value: layout.ClientCA().CertFile},
		{Key: "cluster-signing-kubelet-client-key-file", Value: layout.ClientCA().KeyFile},
		{Key: "cluster-signing-kube-apiserver-client-cert-file", Value: layout.ClientCA().CertFile},
		{Key: "cluster-signing-kube-apiserver-client-key-file", Value: layout.ClientCA().KeyFile},
		{Key: "cluster-signing-kubelet-serving-cert-file", Value: layout.KubeletServingCA().CertFile},
		{Key: "cluster-signing-kubelet-serving-key-file", Value: layout.KubeletServingCA().KeyFile},
		{Key: "service-cluster-ip-range", Value: s.serviceClusterIPRange()},
	}
	if s.ClusterCIDR != "" {
		flags = append(flags,
			kubeargs.Arg{Key: "cluster-cidr", Value: s.ClusterCIDR},
			kubeargs.Arg{Key: "allocate-node-cidrs", Value: "true"})
	}
	return flags
}

// elected are the flags the scheduler and the controller-manager share: one
// kubeconfig for everything, loopback, their port, leader election.
func elected(kubeconfig string, port int, leaderElect bool) []kubeargs.Arg {
	return []kubeargs.Arg{
		{Key: "kubeconfig", Value: kubeconfig},
		{Key: "authentication-kubeconfig", Value: kubeconfig},
		{Key: "authorization-kubeconfig", Value: kubeconfig},
		{Key: "bind-address", Value: "127.0.0.1"},
		{Key: "secure-port", Value: strconv.Itoa(port)},
		{Key: "leader-elect", Value: strconv.FormatBool(leaderElect)},
		{Key: "profiling", Value: "false"},
	}
}

// DefaultArgs are DefaultFlags as the upstream binaries take them
// (--secure-port=6443), ready for harness.Harness.Add.
func DefaultArgs(layout pki.Layout, s Settings) map[string][]string {
	out := map[string][]string{}
	for name, flags := range DefaultFlags(layout, s) {
		out[name] = kubeargs.Merge(flags, nil, nil)
	}
	return out
}
