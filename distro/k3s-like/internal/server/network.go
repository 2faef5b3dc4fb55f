package server

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubeharness/kubeharness/components"
)

// k3s's defaults for the cluster's networks.
const (
	defaultServiceCIDR   = "10.43.0.0/16"
	defaultClusterCIDR   = "10.42.0.0/16"
	defaultClusterDomain = "cluster.local"
)

// network is what the server's network flags resolve to, once per run:
// the address the apiserver advertises and the names its serving
// certificate covers.
type network struct {
	bind      string   // the apiserver's --bind-address
	advertise string   // the apiserver's --advertise-address
	sans      []string // more names for the serving certificate: --tls-san, and the host's addresses and name when listening on every address
}

// hostNames are what a serving certificate needs when the apiserver listens
// on every address: the host's addresses (not loopback, not link-local) and
// its name.
type hostNames func() (addrs []string, hostname string, err error)

// localHostNames are this host's.
func localHostNames() ([]string, string, error) {
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, "", err
	}
	var addrs []string
	for _, a := range ifaddrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.IsLoopback() || ipnet.IP.IsLinkLocalUnicast() {
			continue
		}
		addrs = append(addrs, ipnet.IP.String())
	}
	name, err := os.Hostname()
	return addrs, name, err
}

// resolveNetwork checks the network flags and resolves them: each error
// names the flag and its value. A bind address on every address (0.0.0.0,
// ::) advertises the host's default-route address (as kube-apiserver
// chooses it, k8s.io/apimachinery/pkg/util/net) unless --advertise-address
// says otherwise, and the certificate covers every host address and the
// host name.
//
// Without --bind-address the apiserver listens on loopback when the
// server runs no node (--disable-agent), and otherwise, as k3s, on every
// address, advertising the node's IP: Pods reach it through the
// kubernetes Service, whose endpoint is the advertised address.
func (o *options) resolveNetwork(host hostNames) (network, error) {
	n := network{bind: o.bindAddress}
	if n.bind == "" {
		n.bind = "127.0.0.1"
		if !o.node.DisableAgent {
			n.bind = "0.0.0.0"
		}
	}
	bind := net.ParseIP(n.bind)
	if bind == nil {
		return n, fmt.Errorf("--bind-address=%s: not an IP address (e.g. 127.0.0.1, or 0.0.0.0 for every address)", n.bind)
	}
	for _, san := range o.tlsSANs {
		if err := checkSAN(san); err != nil {
			return n, fmt.Errorf("--tls-san=%s: %v", san, err)
		}
	}
	n.sans = append(n.sans, o.tlsSANs...)
	if bind.IsUnspecified() {
		addrs, hostname, err := host()
		if err != nil {
			return n, fmt.Errorf("--bind-address=%s: listing this host's addresses for the serving certificate: %w", n.bind, err)
		}
		n.sans = append(n.sans, addrs...)
		if hostname != "" {
			n.sans = append(n.sans, hostname)
		}
	}
	switch {
	case o.advertiseAddress != "":
		ip := net.ParseIP(o.advertiseAddress)
		if ip == nil || ip.IsUnspecified() {
			return n, fmt.Errorf("--advertise-address=%s: want this server's IP address as the cluster reaches it", o.advertiseAddress)
		}
		if bind.IsLoopback() && !ip.IsLoopback() {
			return n, fmt.Errorf("--advertise-address=%s: kube-apiserver listens on loopback only (--bind-address=%s): also set --bind-address=0.0.0.0 or --bind-address=%s", o.advertiseAddress, n.bind, o.advertiseAddress)
		}
		n.advertise = o.advertiseAddress
	case bind.IsUnspecified() && o.bindAddress == "" && o.node.NodeIP != "":
		n.advertise = o.node.NodeIP // the node's IP, which Pods reach
	case bind.IsUnspecified():
		// Upstream's choice for an unspecified bind address: the address of
		// the default route's interface; a host without one advertises
		// loopback (nothing else could reach it).
		if ip, err := utilnet.ResolveBindAddress(bind); err == nil && !ip.IsUnspecified() {
			n.advertise = ip.String()
		} else {
			n.advertise = "127.0.0.1"
		}
	default:
		n.advertise = n.bind
	}
	return n, o.checkCIDRs()
}

// checkSAN accepts an IP address or a DNS name (a leading "*." for a
// wildcard), as x509 certificates hold them.
func checkSAN(san string) error {
	if net.ParseIP(san) != nil {
		return nil
	}
	check := validation.IsDNS1123Subdomain
	if strings.HasPrefix(san, "*.") {
		check = validation.IsWildcardDNS1123Subdomain
	}
	if errs := check(san); len(errs) > 0 {
		return fmt.Errorf("neither an IP address nor a DNS name: %s", strings.Join(errs, "; "))
	}
	return nil
}

// checkCIDRs checks --service-cidr, --cluster-cidr, --cluster-dns and
// --cluster-domain: the two ranges parse and do not overlap, the DNS
// address is in the service range.
func (o *options) checkCIDRs() error {
	service, err := netip.ParsePrefix(o.serviceCIDR)
	if err != nil {
		return fmt.Errorf("--service-cidr=%s: %v (e.g. %s)", o.serviceCIDR, err, defaultServiceCIDR)
	}
	cluster, err := netip.ParsePrefix(o.clusterCIDR)
	if err != nil {
		return fmt.Errorf("--cluster-cidr=%s: %v (e.g. %s)", o.clusterCIDR, err, defaultClusterCIDR)
	}
	if service.Overlaps(cluster) {
		return fmt.Errorf("--service-cidr=%s and --cluster-cidr=%s overlap: Service IPs and Pod IPs must be apart", o.serviceCIDR, o.clusterCIDR)
	}
	if o.clusterDNS != "" {
		dns, err := netip.ParseAddr(o.clusterDNS)
		if err != nil || !service.Contains(dns) {
			return fmt.Errorf("--cluster-dns=%s: want an address in --service-cidr=%s (e.g. %s)", o.clusterDNS, o.serviceCIDR, tenth(service))
		}
	}
	if errs := validation.IsDNS1123Subdomain(o.clusterDomain); len(errs) > 0 {
		return fmt.Errorf("--cluster-domain=%s: %s", o.clusterDomain, strings.Join(errs, "; "))
	}
	return nil
}

// clusterDNSAddress is --cluster-dns, or k3s's default: the tenth address
// of the service range (10.43.0.10).
func (o *options) clusterDNSAddress() string {
	if o.clusterDNS != "" {
		return o.clusterDNS
	}
	service, err := netip.ParsePrefix(o.serviceCIDR)
	if err != nil {
		return ""
	}
	return tenth(service)
}

func tenth(p netip.Prefix) string {
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	return a.String()
}

// ownedArg reports whether the server sets component's upstream flag key
// from one of its own flags, with more than that component depending on it
// (the certificate, the kubeconfigs, the other component), and which: a
// --kube-*-arg for it alone (key=, key+= or key-=) would leave the rest
// behind, so it is refused with the server flag to use instead.
func ownedArg(component, key string) (use string, owned bool) {
	key = strings.TrimRight(key, "+-")
	switch component + " " + key {
	case components.APIServerName + " service-cluster-ip-range":
		return "--service-cidr (it also sets the serving certificate's service IP and the controller-manager's range)", true
	case components.APIServerName + " advertise-address":
		return "--advertise-address (it also goes into the serving certificate and the admin kubeconfig)", true
	case components.APIServerName + " bind-address":
		return "--bind-address (it also decides the serving certificate's names and the components' kubeconfigs)", true
	case components.APIServerName + " secure-port":
		return "--https-listen-port (it also goes into the kubeconfigs)", true
	case components.ControllerManagerName + " service-cluster-ip-range":
		return "--service-cidr (it also sets kube-apiserver's range and the serving certificate's service IP)", true
	case components.ControllerManagerName + " cluster-cidr", components.ControllerManagerName + " allocate-node-cidrs":
		return "--cluster-cidr (node CIDRs are allocated from it)", true
	}
	return "", false
}
