package server

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/deploy"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/secretsencrypt"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
)

// options are the flags of `k3s-like server`, named as k3s names them.
type options struct {
	cli.Options       // shared with the agent: data dir, node name, token, logging, …
	bindAddress       string
	advertiseAddress  string
	tlsSANs           []string
	serviceCIDR       string
	clusterCIDR       string
	clusterDNS        string
	clusterDomain     string
	net               network // resolved from the flags above by run
	memoryLimit       string
	exitOnLeaseLoss   bool
	httpsPort         int
	apiserverArgs     []string
	schedulerArgs     []string
	kcmArgs           []string
	emulatedVersion   string
	featureGates      string
	datastoreEndpoint string
	datastoreCA       string
	datastoreCert     string
	datastoreKey      string
	disableScheduler  bool
	disableKCM        bool
	writeKubeconfig   string
	kubeconfigMode    string
	statusAddress     string
	statusTLS         string
	enablePprof       bool // the status endpoint serves /debug/pprof
	dryRun            bool
	output            string
	etcdClientPort    int
	etcdPeerPort      int
	disable           []string // packaged components not to deploy (package deploy)
	dnsUpstreams      []string // CoreDNS's forward targets (package deploy)
	node              node.Options
	agentToken        string // --agent-token, --agent-token-file (pki.go)
	agentTokenFile    string
	etcd              etcdOptions // the embedded etcd as a cluster (etcdcluster.go)
	// CIS defaults (cis.go)
	secretsEncryption         bool
	secretsEncryptionProvider string
	psaConfigFile             string
}

// NewCommand is `k3s-like server`.
func NewCommand() *cobra.Command {
	cmd, _ := newCommandWithOptions()
	return cmd
}

// newCommandWithOptions is NewCommand, with the options its flags fill
// (for tests).
func newCommandWithOptions() (*cobra.Command, *options) {
	o := &options{Options: cli.Options{Command: cli.Server}}
	cmd := o.NewCommand("Run the control plane (embedded etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and, unless --disable-agent, a node: the kubelet and containerd",
		func(cmd *cobra.Command) error { return o.run(cmd.Context(), cmd.OutOrStdout()) })
	f := cmd.Flags()
	f.StringVar(&o.bindAddress, "bind-address", "", "kube-apiserver bind address; 0.0.0.0 (or ::) listens on every address and puts the host's addresses and name into the serving certificate (default 0.0.0.0 with a node, advertising its IP; 127.0.0.1 with --disable-agent)")
	f.StringVar(&o.advertiseAddress, "advertise-address", "", "IP address kube-apiserver advertises to the cluster (the kubernetes Service's endpoint) and the admin kubeconfig points at (default the bind address, or with 0.0.0.0 the default route's address)")
	f.StringSliceVar(&o.tlsSANs, "tls-san", nil, "More host names or IP addresses for the serving certificate (repeatable, or comma-separated); a change reissues the serving certificate, never the CA")
	f.StringVar(&o.serviceCIDR, "service-cidr", defaultServiceCIDR, "IP range of Service cluster IPs; its first address is the kubernetes Service's, in the serving certificate")
	f.StringVar(&o.clusterCIDR, "cluster-cidr", defaultClusterCIDR, "IP range of Pod IPs: kube-controller-manager allocates the nodes' pod CIDRs from it")
	f.StringVar(&o.clusterDNS, "cluster-dns", "", "IP address of the cluster DNS Service, in --service-cidr (default its tenth address, 10.43.0.10), for the nodes' kubelets")
	f.StringVar(&o.clusterDomain, "cluster-domain", defaultClusterDomain, "The cluster's DNS domain: in the serving certificate (kubernetes.default.svc.DOMAIN) and the service-account issuer")
	f.IntVar(&o.httpsPort, "https-listen-port", 6443, "kube-apiserver HTTPS listen port")
	f.StringArrayVar(&o.apiserverArgs, "kube-apiserver-arg", nil, "Customized flag for kube-apiserver (repeatable), as k3s: key=value or key (=true), key+=value appends to the default, key-=value prepends")
	f.StringArrayVar(&o.schedulerArgs, "kube-scheduler-arg", nil, "Customized flag for kube-scheduler (repeatable), as k3s: key=value or key (=true), key+=value appends to the default, key-=value prepends")
	f.StringArrayVar(&o.kcmArgs, "kube-controller-manager-arg", nil, "Customized flag for kube-controller-manager (repeatable), as k3s: key=value or key (=true), key+=value appends to the default, key-=value prepends")
	f.StringVar(&o.emulatedVersion, "emulated-version", "", "--emulated-version for all three components")
	f.StringVar(&o.featureGates, "feature-gates", "", "--feature-gates for all three components")
	f.StringVar(&o.datastoreEndpoint, "datastore-endpoint", "", "Comma-separated etcd client URLs of an existing etcd cluster; empty runs an embedded etcd on loopback")
	f.StringVar(&o.datastoreCA, "datastore-cafile", "", "CA file of the external etcd")
	f.StringVar(&o.datastoreCert, "datastore-certfile", "", "Client certificate file for the external etcd")
	f.StringVar(&o.datastoreKey, "datastore-keyfile", "", "Client key file for the external etcd")
	f.BoolVar(&o.disableScheduler, "disable-scheduler", false, "Do not run kube-scheduler")
	f.BoolVar(&o.disableKCM, "disable-controller-manager", false, "Do not run kube-controller-manager")
	f.StringVarP(&o.writeKubeconfig, "write-kubeconfig", "o", "", "Write the admin kubeconfig here (default DATA_DIR/admin.kubeconfig)")
	f.StringVar(&o.kubeconfigMode, "write-kubeconfig-mode", "0600", "The admin kubeconfig's file mode, octal as chmod takes it (k3s's flag), e.g. 0640 for a group that may read it")
	f.StringVar(&o.statusAddress, "status-address", status.DefaultAddress, "Address of the status endpoint (/components, /features, /livez, /readyz, /healthz, /metrics, /flagz, /statusz, /leader-election; /debug/pprof with --enable-pprof). On loopback: plain HTTP for every local user, only for a Host of loopback or localhost. Elsewhere: HTTPS requiring a client certificate of the cluster's client CA; then any such certificate reads /livez, /readyz and /healthz, and the rest only system:masters or a user the apiserver allows to get that path (RBAC nonResourceURLs, asked by SubjectAccessReview)")
	f.BoolVar(&o.enablePprof, "enable-pprof", false, "Serve the process's profiles at /debug/pprof on the status endpoint (for k3s-like top and go tool pprof; ?seconds at most 60); off, they are 404. It covers the whole process: it also turns on the kubelet's /debug/pprof and /debug/flags/v (its profiles, uncapped, and the verbosity of every component, for any holder of nodes/proxy)")
	f.StringVar(&o.statusTLS, "status-tls", status.TLSAuto, "auto: the status endpoint is HTTPS with client certificates unless --status-address is loopback; always: on loopback too")
	f.BoolVar(&o.dryRun, "dry-run", false, "Parse every component's arguments, run the barrier, print the plan, and exit: nothing listens, nothing is written")
	f.StringVar(&o.output, "output", "table", "With --dry-run: table, or json (each component's arguments and the plan); no short form: -o is --write-kubeconfig, as in k3s")
	f.BoolVar(&o.exitOnLeaseLoss, "exit-on-lease-loss", false, "Stop the whole server when kube-scheduler or kube-controller-manager loses its leader-election lease (upstream's behaviour); by default that component alone goes back to standby and campaigns again, and kube-apiserver keeps serving")
	f.StringVar(&o.memoryLimit, "memory-limit", "", "Go's soft memory limit for the whole process (a quantity: 512Mi, 1G): the garbage collector works harder near it instead of letting the heap grow; default none (also $GOMEMLIMIT)")
	f.IntVar(&o.etcdClientPort, "etcd-client-port", 2379, "Embedded etcd client port (loopback)")
	f.IntVar(&o.etcdPeerPort, "etcd-peer-port", 2380, "Embedded etcd peer port (loopback)")
	f.StringSliceVar(&o.disable, "disable", nil, "Do not deploy a packaged component, and delete it if it was (repeatable, or comma-separated; valid: "+strings.Join(deploy.PackagedNames(), ", ")+")")
	f.StringSliceVar(&o.dnsUpstreams, "cluster-dns-upstream", nil, "Where CoreDNS forwards names outside the cluster domain: IP[:port] or a resolv.conf path in its container (repeatable); none by default, so no query leaves the machine")
	f.BoolVar(&o.secretsEncryption, "secrets-encryption", false, "Encrypt Secrets at rest (k3s's flag): a key from crypto/rand in DATA_DIR/cred/encryption-config.json (0600), kube-apiserver's --encryption-provider-config, reloaded when it changes; see k3s-like secrets-encrypt. Once on, it must stay on")
	f.StringVar(&o.secretsEncryptionProvider, "secrets-encryption-provider", secretsencrypt.AESCBC, "The provider of the first key with --secrets-encryption: "+strings.Join(secretsencrypt.Providers(), " or ")+" (k3s's flag); secrets-encrypt rotate-keys changes it")
	f.StringVar(&o.psaConfigFile, "pod-security-admission-config-file", "", "kube-apiserver's Pod Security admission configuration (RKE2's flag); default DATA_DIR/psa.yaml, written if absent: baseline enforced, kube-system exempt")
	o.node.AddFlags(f, true)
	o.addEtcdFlags(f)
	o.addAgentTokenFlags(f)
	return cmd, o
}

// parseMemoryLimit parses --memory-limit, a Kubernetes quantity of bytes;
// 0 for "".
func parseMemoryLimit(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit=%s: want a size in bytes such as 512Mi or 1G", s)
	}
	n, ok := q.AsInt64()
	if !ok || n < 64<<20 {
		return 0, fmt.Errorf("--memory-limit=%s: want at least 64Mi: below that the garbage collector would run all the time", s)
	}
	return n, nil
}

// parseFileMode parses --write-kubeconfig-mode: octal permission bits, as
// chmod and k3s take them ("644", "0640").
func parseFileMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("--write-kubeconfig-mode=%s: want octal permission bits, e.g. 0600 or 0640", s)
	}
	return os.FileMode(m), nil
}
