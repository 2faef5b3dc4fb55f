package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
)

// serverOptions are the flags of `k3s-like server`, named as k3s names them.
type serverOptions struct {
	dataDir           string
	bindAddress       string
	advertiseAddress  string
	tlsSANs           []string
	serviceCIDR       string
	clusterCIDR       string
	clusterDNS        string
	clusterDomain     string
	net               network // resolved from the flags above by run
	logging           logging
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
	token             string
	tokenFile         string
	protectFiles      bool // --protect-files: a token or config file open to group or others is an error, not a warning
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
	stopTimeout       time.Duration
	configFile        string
	nodeName          string   // the node's name, and this server's identity in the Feature objects (KEP-3920)
	disable           []string // packaged components not to deploy (manifests.go)
	dnsUpstreams      []string // CoreDNS's forward targets (manifests.go)
	node              nodeOptions
}

func newServerCommand() *cobra.Command {
	cmd, _ := newServerCommandWithOptions()
	return cmd
}

// newServerCommandWithOptions is newServerCommand, with the options its
// flags fill (for tests).
func newServerCommandWithOptions() (*cobra.Command, *serverOptions) {
	o := &serverOptions{}
	home, _ := os.UserHomeDir()
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane (embedded etcd, kube-apiserver, kube-scheduler, kube-controller-manager) and, unless --disable-agent, a node: the kubelet and containerd",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := configFiles(o.configFile, os.Getenv)
			if err != nil {
				return err
			}
			if err := applyConfig(cmd.Flags(), files); err != nil {
				return err
			}
			if err := o.checkFileModes(cmd.ErrOrStderr(), files, os.Getenv); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.configFile, "config", "c", "", "Config file: keys are these flags' long names, repeatable flags are lists, FILE.d/*.yaml drop-ins are merged after it in lexical order (key+: appends), the command line overrides them (default "+defaultConfigFile+" if it exists; also $K3S_LIKE_CONFIG_FILE)")
	f.StringVarP(&o.dataDir, "data-dir", "d", defaultDataDir(os.Geteuid(), home), "Folder for certificates, keys, kubeconfigs and the embedded etcd data (as k3s: /var/lib/k3s-like as root, ~/.k3s-like otherwise)")
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
	f.StringVarP(&o.token, "token", "t", "", "The cluster's token on an external datastore (a bare secret, or the full K10…::server:… form that also pins the cluster CA): the first server stores the cluster PKI in the datastore encrypted with it, the others fetch it. Visible to every local user in the process's arguments: prefer --token-file. Also $K3S_LIKE_TOKEN. Without any, the first server generates one into DATA_DIR/token")
	f.StringVar(&o.tokenFile, "token-file", "", "File holding the cluster's token (the first server writes the full token to DATA_DIR/token, 0600). Also $K3S_LIKE_TOKEN_FILE")
	f.BoolVar(&o.protectFiles, "protect-files", false, "Refuse to start, instead of warning, when a file holding the token (--token-file, $K3S_LIKE_TOKEN_FILE, DATA_DIR/token, a config file that sets token) is readable or writable by group or others, or a config file is writable by them")
	f.BoolVar(&o.disableScheduler, "disable-scheduler", false, "Do not run kube-scheduler")
	f.BoolVar(&o.disableKCM, "disable-controller-manager", false, "Do not run kube-controller-manager")
	f.StringVarP(&o.writeKubeconfig, "write-kubeconfig", "o", "", "Write the admin kubeconfig here (default DATA_DIR/admin.kubeconfig)")
	f.StringVar(&o.kubeconfigMode, "write-kubeconfig-mode", "0600", "The admin kubeconfig's file mode, octal as chmod takes it (k3s's flag), e.g. 0640 for a group that may read it")
	f.StringVar(&o.statusAddress, "status-address", "127.0.0.1:10290", "Address of the status endpoint (/components, /features, /livez, /readyz, /healthz, /metrics, /flagz, /statusz, /leader-election; /debug/pprof with --enable-pprof). On loopback: plain HTTP for every local user, only for a Host of loopback or localhost. Elsewhere: HTTPS requiring a client certificate of the cluster's client CA; then any such certificate reads /livez, /readyz and /healthz, and the rest only system:masters or a user the apiserver allows to get that path (RBAC nonResourceURLs, asked by SubjectAccessReview)")
	f.BoolVar(&o.enablePprof, "enable-pprof", false, "Serve the process's profiles at /debug/pprof on the status endpoint (for k3s-like top and go tool pprof; ?seconds at most 60); off, they are 404")
	f.StringVar(&o.statusTLS, "status-tls", statusTLSAuto, "auto: the status endpoint is HTTPS with client certificates unless --status-address is loopback; always: on loopback too")
	f.BoolVar(&o.dryRun, "dry-run", false, "Parse every component's arguments, run the barrier, print the plan, and exit: nothing listens, nothing is written")
	f.StringVar(&o.output, "output", "table", "With --dry-run: table, or json (each component's arguments and the plan); no short form: -o is --write-kubeconfig, as in k3s")
	f.StringVarP(&o.logging.verbosity, "v", "v", "", "Log verbosity (a number) for the whole process: passed to every component, which must not ask for another")
	f.StringVar(&o.logging.vmodule, "vmodule", "", "Per-file log verbosity, pattern=N,... (klog's), for the whole process")
	f.StringVar(&o.logging.format, "logging-format", "", "Log format for the whole process, text or json: the server's own lines, the harness, the components and embedded etcd (default text)")
	f.StringVarP(&o.logging.file, "log", "l", "", "Write the log here (appended, created 0600) instead of stderr")
	f.BoolVar(&o.exitOnLeaseLoss, "exit-on-lease-loss", false, "Stop the whole server when kube-scheduler or kube-controller-manager loses its leader-election lease (upstream's behaviour); by default that component alone goes back to standby and campaigns again, and kube-apiserver keeps serving")
	f.StringVar(&o.memoryLimit, "memory-limit", "", "Go's soft memory limit for the whole process (a quantity: 512Mi, 1G): the garbage collector works harder near it instead of letting the heap grow; default none (also $GOMEMLIMIT)")
	f.IntVar(&o.etcdClientPort, "etcd-client-port", 2379, "Embedded etcd client port (loopback)")
	f.IntVar(&o.etcdPeerPort, "etcd-peer-port", 2380, "Embedded etcd peer port (loopback)")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 8*time.Second, "How long each component may take to stop")
	// KEP-3920 feature discovery: the server's identity in status.servers of
	// the Feature objects and in its field manager, k3s-like/NODE_NAME.
	hostname, _ := os.Hostname()
	f.StringVar(&o.nodeName, "node-name", hostname, "The node's name, and this server's identity: its entry in the Feature objects' status.servers (default the hostname)")
	f.StringSliceVar(&o.disable, "disable", nil, "Do not deploy a packaged component, and delete it if it was (repeatable, or comma-separated; valid: "+strings.Join(packagedNames(), ", ")+")")
	f.StringSliceVar(&o.dnsUpstreams, "cluster-dns-upstream", nil, "Where CoreDNS forwards names outside the cluster domain: IP[:port] or a resolv.conf path in its container (repeatable); none by default, so no query leaves the machine")
	addNodeFlags(f, &o.node, true)
	return cmd, o
}

// defaultDataDir is k3s's choice of data dir: /var/lib/k3s-like for root,
// ~/.k3s-like for anyone else.
func defaultDataDir(euid int, home string) string {
	if euid == 0 {
		return "/var/lib/k3s-like"
	}
	return filepath.Join(home, ".k3s-like")
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
