package server

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// layout is the server's PKI: components/pki's layout in DATA_DIR/tls.
func (o *options) layout() pki.Layout { return datadir.PKI(o.DataDir) }

func (o *options) adminKubeconfig() string {
	if o.writeKubeconfig != "" {
		return o.writeKubeconfig
	}
	return datadir.AdminKubeconfig(o.DataDir)
}

func (o *options) externalDatastore() bool { return o.datastoreEndpoint != "" }

// etcdConfig is the embedded etcd's: data in DATA_DIR/etcd, loopback ports,
// the etcd certificates of the server's PKI layout.
//
// A member of a cluster that can grow (--cluster-init, --server, or a
// data dir that was one) is named after the node and listens for its peers
// on the advertised address (etcdCluster).
func (o *options) etcdConfig() etcd.Config {
	c := controlplane.EtcdConfig(o.layout(), etcd.Config{
		DataDir:    datadir.Etcd(o.DataDir),
		ClientPort: o.etcdClientPort,
		PeerPort:   o.etcdPeerPort,
		Cluster:    o.etcdCluster(),
	})
	if c.Cluster != nil {
		c.MemberName = o.NodeName
	}
	return c
}

// settings are the control plane's (components/controlplane): the service
// CIDR is k3s's; more than one server can exist on an external datastore
// or an embedded etcd cluster, and only there is leader election on.
func (o *options) settings() controlplane.Settings {
	s := controlplane.Settings{
		BindAddress:           o.net.bind,
		AdvertiseAddress:      o.net.advertise,
		SANs:                  o.net.sans,
		APIServerPort:         o.httpsPort,
		ServiceClusterIPRange: o.serviceCIDR,
		ClusterCIDR:           o.clusterCIDR,
		ClusterDomain:         o.clusterDomain,
		EtcdServers:           o.etcdConfig().ClientURL(),
		LeaderElect:           o.externalDatastore() || o.etcd.clusterMember,
	}
	if o.etcd.clusterMember {
		s.EtcdAdvertiseAddress = o.net.advertise
	}
	if o.externalDatastore() {
		s.EtcdServers = o.datastoreEndpoint
		s.EtcdTLS = &controlplane.EtcdTLS{CAFile: o.datastoreCA, CertFile: o.datastoreCert, KeyFile: o.datastoreKey}
	}
	return s
}

// componentArgs are each component's upstream arguments: the defaults of
// components/controlplane, the shorthands, then the user's --kube-*-arg
// values.
func (o *options) componentArgs() (map[string][]string, error) {
	if err := o.checkShorthands(); err != nil {
		return nil, err
	}
	short, err := o.Logging.Shorthands()
	if err != nil {
		return nil, err
	}
	if o.featureGates != "" {
		short = append(short, kubeargs.Arg{Key: "feature-gates", Value: o.featureGates})
	}
	kubeletShort := append([]kubeargs.Arg(nil), short...) // the kubelet and kube-proxy have no --emulated-version
	if o.emulatedVersion != "" {
		short = append(short, kubeargs.Arg{Key: "emulated-version", Value: o.emulatedVersion})
	}
	user := map[string][]string{
		components.APIServerName:         o.apiserverArgs,
		components.SchedulerName:         o.schedulerArgs,
		components.ControllerManagerName: o.kcmArgs,
	}
	flagNames := map[string]string{
		components.APIServerName:         "kube-apiserver-arg",
		components.SchedulerName:         "kube-scheduler-arg",
		components.ControllerManagerName: "kube-controller-manager-arg",
	}
	out := map[string][]string{}
	for name, d := range controlplane.DefaultFlags(o.layout(), o.settings()) {
		extra, err := kubeargs.Parse(flagNames[name], user[name])
		if err != nil {
			return nil, err
		}
		for _, a := range extra {
			if name == components.APIServerName && strings.TrimRight(a.Key, "+-") == "token-auth-file" {
				return nil, fmt.Errorf("--%s=%s=%s: the server sets --token-auth-file of %s to the join credentials of agents and servers (%s), without which none can join", flagNames[name], a.Key, a.Value, name, cluster.JoinAuthFile("DATA_DIR"))
			}
			if use, owned := ownedArg(name, a.Key); owned {
				return nil, fmt.Errorf("--%s=%s=%s: the server sets --%s of %s from its own flag: use %s", flagNames[name], a.Key, a.Value, strings.TrimRight(a.Key, "+-"), name, use)
			}
		}
		if name == components.APIServerName {
			if err := o.checkCIS(extra); err != nil {
				return nil, err
			}
			d = append(d, o.cisAPIServerArgs()...)
			// The join credential agents read their bootstrap token with
			// (cluster.WriteJoinAuthFile, written with DATA_DIR/token).
			d = append(d, kubeargs.Arg{Key: "token-auth-file", Value: cluster.JoinAuthFile(o.DataDir)})
		}
		out[name] = kubeargs.Merge(d, short, extra)
	}
	if !o.node.DisableAgent {
		nodeArgs, err := o.nodeConfig().Args(kubeletShort)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, nodeArgs)
	}
	return out, nil
}

// checkShorthands reports a malformed shorthand once, not once per component.
func (o *options) checkShorthands() error {
	if o.emulatedVersion != "" {
		v, err := version.Parse(o.emulatedVersion)
		if err != nil {
			return fmt.Errorf("--emulated-version=%s: %v: use major.minor, e.g. --emulated-version=1.36", o.emulatedVersion, err)
		}
		if v.Patch() != 0 {
			return fmt.Errorf("--emulated-version=%s: no patch number: use major.minor, e.g. --emulated-version=%d.%d", o.emulatedVersion, v.Major(), v.Minor())
		}
	}
	for _, item := range strings.Split(o.featureGates, ",") {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if _, err := strconv.ParseBool(v); !ok || k == "" || err != nil {
			return fmt.Errorf("--feature-gates=%s: %q is not Feature=true|false", o.featureGates, item)
		}
	}
	return nil
}
