package pki

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Node is a kubelet's identity: its node name and the addresses its
// serving certificate names (the node's IPs and host names; 127.0.0.1 and
// localhost are always added).
type Node struct {
	Name     string
	IPs      []net.IP
	DNSNames []string
}

// NodeFiles is one kubelet's PKI: where NodeLayout says.
type NodeFiles struct {
	// Client is the kubelet's client certificate, CN system:node:NAME in
	// group system:nodes (what the Node authorizer and NodeRestriction
	// know a kubelet by), signed by the client CA.
	Client *Pair
	// Serving is the kubelet's serving certificate, signed by the kubelet
	// serving CA.
	Serving *Pair
	// Kubeconfig is the kubelet's kubeconfig, with Client.
	Kubeconfig string
	// KubeProxy is the node's kube-proxy's client certificate, CN
	// KubeProxyUser, no group (upstream's ClusterRoleBinding
	// system:node-proxier grants that user what kube-proxy reads), signed
	// by the client CA; KubeProxyKubeconfig is kube-proxy's kubeconfig
	// with it.
	KubeProxy           *Pair
	KubeProxyKubeconfig string
}

// NodeLayout is where a node's files live in a PKI directory.
func (l Layout) NodeLayout(name string) NodeLayout { return NodeLayout{l: l, name: name} }

// NodeLayout gives the paths of one node's certificates and kubeconfig,
// under node/NAME in the PKI directory.
type NodeLayout struct {
	l    Layout
	name string
}

// Client is the kubelet's client certificate and key.
func (n NodeLayout) Client() CertKey { return n.l.certKey("node", n.name, "client-kubelet") }

// Serving is the kubelet's serving certificate and key (--tls-cert-file).
func (n NodeLayout) Serving() CertKey { return n.l.certKey("node", n.name, "serving-kubelet") }

// Kubeconfig is the kubelet's kubeconfig.
func (n NodeLayout) Kubeconfig() string { return n.l.path("node", n.name, "kubelet.kubeconfig") }

// KubeProxy is the node's kube-proxy's client certificate and key.
func (n NodeLayout) KubeProxy() CertKey { return n.l.certKey("node", n.name, "client-kube-proxy") }

// KubeProxyKubeconfig is the node's kube-proxy's kubeconfig.
func (n NodeLayout) KubeProxyKubeconfig() string {
	return n.l.path("node", n.name, "kube-proxy.kubeconfig")
}

// KubeProxyUser is the user of every node's kube-proxy certificate:
// upstream's bootstrap ClusterRoleBinding system:node-proxier binds it the
// ClusterRole of that name, and nothing more.
const KubeProxyUser = "system:kube-proxy"

// NodeUser is the user name a kubelet of node name authenticates as.
func NodeUser(name string) string { return "system:node:" + name }

// NodesGroup is the group every kubelet's client certificate is in.
const NodesGroup = "system:nodes"

// EnsureNode makes (or reuses, as Ensure does) a kubelet's client and
// serving certificates and its kube-proxy's client certificate from the
// control plane's CAs, and writes their kubeconfigs for apiserverURL.
func (f *Files) EnsureNode(n Node, apiserverURL string) (*NodeFiles, error) {
	if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
		return nil, fmt.Errorf("pki: node name %q: %s", n.Name, strings.Join(errs, "; "))
	}
	if f.ClientCA == nil || f.KubeletServingCA == nil || f.ServerCA == nil {
		return nil, errors.New("pki: EnsureNode needs the server, client and kubelet serving CAs")
	}
	nl := f.Layout().NodeLayout(n.Name)
	out := &NodeFiles{Kubeconfig: nl.Kubeconfig(), KubeProxyKubeconfig: nl.KubeProxyKubeconfig()}
	var err error
	if out.Client, err = f.ClientCA.Ensure(nl.Client().CertFile, nl.Client().KeyFile, Leaf{CommonName: NodeUser(n.Name), Organization: []string{NodesGroup}, Client: true}); err != nil {
		return nil, err
	}
	ips := uniqIPs(append([]net.IP{net.IPv4(127, 0, 0, 1)}, n.IPs...))
	dns := uniq(append([]string{"localhost", n.Name}, n.DNSNames...))
	if out.Serving, err = f.KubeletServingCA.Ensure(nl.Serving().CertFile, nl.Serving().KeyFile, Leaf{CommonName: n.Name, DNSNames: dns, IPs: ips, Server: true}); err != nil {
		return nil, err
	}
	if out.KubeProxy, err = f.ClientCA.Ensure(nl.KubeProxy().CertFile, nl.KubeProxy().KeyFile, Leaf{CommonName: KubeProxyUser, Client: true}); err != nil {
		return nil, err
	}
	if err := WriteKubeconfig(out.Kubeconfig, apiserverURL, f.ServerCA.CertPEM(), out.Client); err != nil {
		return nil, err
	}
	if err := WriteKubeconfig(out.KubeProxyKubeconfig, apiserverURL, f.ServerCA.CertPEM(), out.KubeProxy); err != nil {
		return nil, err
	}
	return out, nil
}
