package server

import (
	"net"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/deploy"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// nodeConfig is the server's node.
func (o *options) nodeConfig() node.Config {
	return node.Config{
		DataDir: o.DataDir, Name: o.NodeName, Options: o.node, Layout: o.layout(),
		ClusterDNS: o.clusterDNSAddress(), ClusterDomain: o.clusterDomain, ClusterCIDR: o.clusterCIDR,
		After: []string{components.APIServerName}, ProxyAfter: []string{cluster.NodeJoinName},
		Profiling: o.enablePprof,
	}
}

// prepareNode writes, after the barrier, what the server's node needs on
// disk: its PKI (from the cluster's CAs), then PrepareRuntime's.
func (o *options) prepareNode() error {
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
	ip, err := c.IP()
	if err != nil {
		return err
	}
	servingCA, err := pki.LoadOrCreateCA(l.KubeletServingCA().CertFile, l.KubeletServingCA().KeyFile, "")
	if err != nil {
		return err
	}
	files := &pki.Files{Dir: l.Dir, ServerCA: serverCA, ClientCA: clientCA, KubeletServingCA: servingCA}
	if _, err := files.EnsureNode(pki.Node{Name: o.NodeName, IPs: []net.IP{ip}}, o.settings().APIServerURL()); err != nil {
		return err
	}
	return c.PrepareRuntime()
}

// nodeJoin is what the server publishes for agents to join with.
func (o *options) nodeJoin() cluster.NodeJoin {
	j := cluster.NodeJoin{
		Layout: o.layout(), AdminKubeconfig: o.adminKubeconfig(), DataDir: o.DataDir,
		ClusterDNS: o.clusterDNSAddress(), ClusterDomain: o.clusterDomain, ClusterCIDR: o.clusterCIDR,
		FlannelBackend: o.node.FlannelBackend,
	}
	if !o.node.DisableAgent {
		j.NodeName = o.NodeName
	}
	return j
}

// manifests is the server's manifests component: the packaged ones with
// this server's values, and the user's.
func (o *options) manifests() deploy.Config {
	return deploy.Config{
		DataDir: o.DataDir, DeployerKubeconfig: o.layout().DeployerKubeconfig(), AdminKubeconfig: o.adminKubeconfig(), Disabled: o.disable,
		Values: deploy.Values{ClusterDNS: o.clusterDNSAddress(), ClusterDomain: o.clusterDomain, Image: deploy.CoreDNSImage, Upstreams: o.dnsUpstreams},
	}
}
