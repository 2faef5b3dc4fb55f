package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/version"
	basever "k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/bootstrap"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/heldlog"
	"github.com/kubeharness/kubeharness/scoping"
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
	disableScheduler  bool
	disableKCM        bool
	writeKubeconfig   string
	kubeconfigMode    string
	statusAddress     string
	statusTLS         string
	dryRun            bool
	output            string
	etcdClientPort    int
	etcdPeerPort      int
	stopTimeout       time.Duration
	configFile        string
	nodeName          string // KEP-3920 feature discovery: this server's identity in the Feature objects
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
		Short: "Run the control plane: embedded etcd, kube-apiserver, kube-scheduler, kube-controller-manager",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := configFiles(o.configFile, os.Getenv)
			if err != nil {
				return err
			}
			if err := applyConfig(cmd.Flags(), files); err != nil {
				return err
			}
			return o.run(cmd.Context(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.configFile, "config", "c", "", "Config file: keys are these flags' long names, repeatable flags are lists, FILE.d/*.yaml drop-ins are merged after it in lexical order (key+: appends), the command line overrides them (default "+defaultConfigFile+" if it exists; also $K3S_LIKE_CONFIG_FILE)")
	f.StringVarP(&o.dataDir, "data-dir", "d", defaultDataDir(os.Geteuid(), home), "Folder for certificates, keys, kubeconfigs and the embedded etcd data (as k3s: /var/lib/k3s-like as root, ~/.k3s-like otherwise)")
	f.StringVar(&o.bindAddress, "bind-address", "127.0.0.1", "kube-apiserver bind address; 0.0.0.0 (or ::) listens on every address and puts the host's addresses and name into the serving certificate")
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
	f.BoolVar(&o.disableScheduler, "disable-scheduler", false, "Do not run kube-scheduler")
	f.BoolVar(&o.disableKCM, "disable-controller-manager", false, "Do not run kube-controller-manager")
	f.StringVarP(&o.writeKubeconfig, "write-kubeconfig", "o", "", "Write the admin kubeconfig here (default DATA_DIR/admin.kubeconfig)")
	f.StringVar(&o.kubeconfigMode, "write-kubeconfig-mode", "0600", "The admin kubeconfig's file mode, octal as chmod takes it (k3s's flag), e.g. 0640 for a group that may read it")
	f.StringVar(&o.statusAddress, "status-address", "127.0.0.1:10290", "Address of the status endpoint (/components, /features, /livez, /readyz, /healthz, /metrics, /flagz, /statusz, /leader-election, /debug/pprof): plain HTTP on loopback, else HTTPS requiring a client certificate of the cluster's client CA")
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
	f.StringVar(&o.nodeName, "node-name", hostname, "This server's identity: its entry in the Feature objects' status.servers (default the hostname)")
	return cmd, o
}

// layout is the server's PKI: components/pki's layout in DATA_DIR/tls.
func (o *serverOptions) layout() pki.Layout { return datadir.PKI(o.dataDir) }

func (o *serverOptions) adminKubeconfig() string {
	if o.writeKubeconfig != "" {
		return o.writeKubeconfig
	}
	return datadir.AdminKubeconfig(o.dataDir)
}

func (o *serverOptions) externalDatastore() bool { return o.datastoreEndpoint != "" }

// etcdConfig is the embedded etcd's: data in DATA_DIR/etcd, loopback ports,
// the etcd certificates of the server's PKI layout.
func (o *serverOptions) etcdConfig() etcd.Config {
	return controlplane.EtcdConfig(o.layout(), etcd.Config{
		DataDir:    datadir.Etcd(o.dataDir),
		ClientPort: o.etcdClientPort,
		PeerPort:   o.etcdPeerPort,
	})
}

// settings are the control plane's (components/controlplane): the service
// CIDR is k3s's; more than one server can exist only on an external
// datastore, so only there is leader election on.
func (o *serverOptions) settings() controlplane.Settings {
	s := controlplane.Settings{
		BindAddress:           o.bindAddress,
		AdvertiseAddress:      o.net.advertise,
		SANs:                  o.net.sans,
		APIServerPort:         o.httpsPort,
		ServiceClusterIPRange: o.serviceCIDR,
		ClusterCIDR:           o.clusterCIDR,
		ClusterDomain:         o.clusterDomain,
		EtcdServers:           o.etcdConfig().ClientURL(),
		LeaderElect:           o.externalDatastore(),
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
func (o *serverOptions) componentArgs() (map[string][]string, error) {
	if err := o.checkShorthands(); err != nil {
		return nil, err
	}
	short, err := o.logging.shorthands()
	if err != nil {
		return nil, err
	}
	if o.featureGates != "" {
		short = append(short, kubeargs.Arg{Key: "feature-gates", Value: o.featureGates})
	}
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
			if use, owned := ownedArg(name, a.Key); owned {
				return nil, fmt.Errorf("--%s=%s=%s: the server sets --%s of %s from its own flag: use %s", flagNames[name], a.Key, a.Value, strings.TrimRight(a.Key, "+-"), name, use)
			}
		}
		out[name] = kubeargs.Merge(d, short, extra)
	}
	return out, nil
}

// checkShorthands reports a malformed shorthand once, not once per component.
func (o *serverOptions) checkShorthands() error {
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

// controlPlane is the harness and the components this server runs.
type controlPlane struct {
	h         *harness.Harness
	db        *etcd.Etcd                    // nil on an external datastore
	scheduler *components.Scheduler         // nil with --disable-scheduler
	kcm       *components.ControllerManager // nil with --disable-controller-manager
}

// leaderElection reports each elected component's leader election: whether
// it is on and the identity it holds (or waits for) its lease as.
func (cp *controlPlane) leaderElection() map[string]components.LeaderElection {
	out := map[string]components.LeaderElection{}
	if cp.scheduler != nil {
		out[components.SchedulerName] = cp.scheduler.LeaderElection()
	}
	if cp.kcm != nil {
		out[components.ControllerManagerName] = cp.kcm.LeaderElection()
	}
	return out
}

// newControlPlane adds the components this server runs, with their arguments.
func (o *serverOptions) newControlPlane(args map[string][]string) (*controlPlane, error) {
	h := &harness.Harness{StopTimeout: o.stopTimeout, AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
	if !o.exitOnLeaseLoss {
		// A lost lease (a datastore stalled longer than the renew
		// deadline) demotes that component to a standby that campaigns
		// again; upstream would exit the process, apiserver and all.
		h.Recover = components.RecoverLostLease
	}
	cp := &controlPlane{h: h}
	if !o.externalDatastore() {
		cp.db = etcd.New(o.etcdConfig())
	}
	if !o.disableScheduler {
		cp.scheduler = components.NewScheduler()
	}
	if !o.disableKCM {
		cp.kcm = components.NewControllerManager()
	}
	// KEP-3920 feature discovery: publish the plan as Feature objects once
	// every other component is ready (it never fails the harness).
	pub := &featurepub.Publisher{
		Server:       o.nodeName,
		FieldManager: "k3s-like/" + o.nodeName,
		UserAgent:    "k3s-like-feature-publisher",
		Kubeconfig:   o.adminKubeconfig(),
		Logf:         func(format string, a ...any) { logger().Info(fmt.Sprintf(format, a...)) },
	}
	if err := (controlplane.Components{
		Etcd:              cp.db,
		APIServer:         components.NewAPIServer(),
		Scheduler:         cp.scheduler,
		ControllerManager: cp.kcm,
		Publisher:         pub,
	}).Add(h, args); err != nil {
		return nil, err
	}
	return cp, nil
}

func (o *serverOptions) run(ctx context.Context, stdout io.Writer) error {
	started := time.Now()
	if o.output != "table" && o.output != "json" {
		return fmt.Errorf("--output=%s: want table or json", o.output)
	}
	if !o.dryRun {
		if err := o.logging.redirect(); err != nil {
			return err
		}
	}
	var err error
	if o.net, err = o.resolveNetwork(localHostNames); err != nil {
		return err
	}
	args, err := o.componentArgs()
	if err != nil {
		return err
	}
	if _, err := statusUsesTLS(o.statusAddress, o.statusTLS); err != nil {
		return err
	}
	if _, err := parseFileMode(o.kubeconfigMode); err != nil {
		return err
	}
	limit, err := parseMemoryLimit(o.memoryLimit)
	if err != nil {
		return err
	}
	if !o.dryRun {
		if err := checkWritable(o.dataDir); err != nil {
			return err
		}
	}
	cp, err := o.newControlPlane(args)
	if err != nil {
		return err
	}
	h := cp.h
	if o.dryRun {
		return o.printPlan(ctx, h, args, stdout)
	}

	log := logger()
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	// The harness's lines from before the barrier wait for the format it
	// configures (package heldlog).
	var release func()
	h.Logger, release = heldlog.New()
	defer release()
	systemd := takeNotifySocket()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, func() {
		if err := systemd.notify("STOPPING=1"); err != nil {
			log.Error(err, "Telling systemd the server stops")
		}
	})
	// Certificates, keys and kubeconfigs are written, and the status
	// listener opened, only once the barrier passed: a conflict leaves the
	// data dir as it was and opens no port.
	var passed atomic.Bool
	h.AfterBarrier = append(h.AfterBarrier, func(p *scoping.Plan) error {
		passed.Store(true)
		release()
		log.Info("Running Kubernetes", "version", basever.Get().GitVersion, "emulatedVersion", p.EmulationVersion, "minCompatibilityVersion", p.MinCompatibilityVersion)
		o.logComponents(log, h, args)
		return nil
	})
	if cp.db != nil {
		h.AfterBarrier = append(h.AfterBarrier, keepDatastoreFor(cp.db, log))
	}
	h.AfterBarrier = append(h.AfterBarrier,
		func(*scoping.Plan) error { return o.ensurePKI(ctx, log) },
		func(*scoping.Plan) error { return o.serveStatus(ctx, cp) })
	go o.announceReady(ctx, h, log, started, systemd)
	if err := h.Run(ctx); err != nil {
		err = explainDatastore(err, datadir.Etcd(o.dataDir))
		if !passed.Load() {
			release()
			return err // logging is not configured: one plain line, the last
		}
		log.Error(err, "Stopped")
		return exitCode(1)
	}
	log.Info("Stopped")
	return nil
}

// logComponents logs how each component runs, in the order they start, as
// k3s does ("Running kube-scheduler --flag=value ..."), secret values
// redacted (harness.RedactArgs).
func (o *serverOptions) logComponents(log logr.Logger, h *harness.Harness, args map[string][]string) {
	for _, c := range h.Status().Components {
		switch {
		case c.Name == etcd.Name:
			cfg := o.etcdConfig()
			log.Info("Running embedded etcd", "dataDir", cfg.DataDir, "clientURL", cfg.ClientURL())
		case len(args[c.Name]) > 0:
			log.Info("Running " + c.Name + " " + strings.Join(harness.RedactArgs(args[c.Name]), " "))
		}
	}
}

// announceReady logs how to use the server once every component is ready,
// and tells systemd.
func (o *serverOptions) announceReady(ctx context.Context, h *harness.Harness, log logr.Logger, started time.Time, systemd notifier) {
	if h.WaitReady(ctx) != nil {
		return
	}
	log.Info(fmt.Sprintf("ready in %s; KUBECONFIG=%s kubectl get nodes", time.Since(started).Round(100*time.Millisecond), o.adminKubeconfig()))
	if err := systemd.notify("READY=1"); err != nil {
		log.Error(err, "Telling systemd the server is ready")
	}
}

// checkWritable creates the data dir if it is missing and fails with one
// line naming what to fix. A data dir it creates is 0700: it holds private
// keys and the etcd data (never more open, whatever the umask: a umask only
// clears bits). An existing dir keeps its mode (MkdirAll leaves it, and nothing
// chmods it): it is the operator's, who may have set that mode on purpose.
// TestFileModes checks the mode of a data dir the binary created.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s cannot be created (%v): choose another --data-dir", dir, unwrapPath(err))
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable (%v): fix its permissions or choose another --data-dir", dir, unwrapPath(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ensurePKI makes the server's PKI: on an external datastore from the
// cluster's shared CAs (fetched, or stored by the first server, with
// --token), otherwise locally.
func (o *serverOptions) ensurePKI(ctx context.Context, log logr.Logger) error {
	if !o.externalDatastore() {
		return o.writePKI()
	}
	tok, source, found, err := o.resolveToken(os.Getenv)
	if err != nil {
		return err
	}
	tlsInfo := transport.TLSInfo{CertFile: o.datastoreCert, KeyFile: o.datastoreKey, TrustedCAFile: o.datastoreCA}
	var tlsConfig *tls.Config
	if o.datastoreCA != "" || o.datastoreCert != "" {
		var err error
		if tlsConfig, err = tlsInfo.ClientConfig(); err != nil {
			return fmt.Errorf("--datastore-cafile/--datastore-certfile/--datastore-keyfile: %w", err)
		}
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   strings.Split(o.datastoreEndpoint, ","),
		TLS:         tlsConfig,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("--datastore-endpoint=%s: %w", o.datastoreEndpoint, err)
	}
	defer client.Close()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !found {
		// Only the first server may make the token: a cluster that exists
		// needs its own.
		exists, err := bootstrap.Exists(sctx, client)
		if err != nil {
			return err
		}
		if exists {
			return fmt.Errorf("the datastore %s holds a cluster: give this server its token (--token-file with the first server's %s)", o.datastoreEndpoint, tokenFile("DATA_DIR"))
		}
		secret, err := newSecret()
		if err != nil {
			return err
		}
		tok, source = clusterToken{secret: secret}, "generated"
	} else if tok.caHash == "" {
		log.Info(fmt.Sprintf("Warning: the token (%s) is a bare secret: the cluster CA fetched from the datastore is not pinned; use the full token of the first server's DATA_DIR/token", source))
	}
	check := func(files map[string][]byte) error { return tok.checkCA(files[pki.Layout{}.ServerCA().CertFile]) }
	if err := bootstrap.Sync(sctx, client, tok.secret, o.layout().Dir, o.writePKI, check); err != nil {
		return fmt.Errorf("cluster PKI via %s: %w", o.datastoreEndpoint, err)
	}
	ca, err := os.ReadFile(o.layout().ServerCA().CertFile)
	if err != nil {
		return err
	}
	if err := tok.checkCA(ca); err != nil {
		return err
	}
	changed, err := writeTokenFile(o.dataDir, tok.full(ca))
	if err != nil {
		return fmt.Errorf("writing %s: %w", tokenFile(o.dataDir), err)
	}
	if changed {
		log.Info(fmt.Sprintf("The cluster's token (%s) is in %s (0600): give it to the other servers with --token-file", source, tokenFile(o.dataDir)))
	}
	return nil
}

// writePKI creates the certificates, keys and kubeconfigs on first start and
// reuses them after (components/pki), and writes the admin kubeconfig.
func (o *serverOptions) writePKI() error {
	// The admin's kubeconfig is for users, on this host or another: it
	// points at the advertised address, the components' at the local one.
	if _, err := controlplane.EnsurePKI(o.layout(), o.settings(), o.adminKubeconfig()); err != nil {
		return err
	}
	mode, err := parseFileMode(o.kubeconfigMode)
	if err != nil {
		return err
	}
	return os.Chmod(o.adminKubeconfig(), mode)
}

// serveStatus serves the harness status handler, and /leader-election,
// until ctx ends.
func (o *serverOptions) serveStatus(ctx context.Context, cp *controlPlane) error {
	useTLS, err := statusUsesTLS(o.statusAddress, o.statusTLS)
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if useTLS {
		if tlsConfig, err = statusServerTLS(o.layout()); err != nil {
			return fmt.Errorf("--status-address %s needs TLS: %w", o.statusAddress, err)
		}
	}
	ln, err := net.Listen("tcp", o.statusAddress)
	if err != nil {
		return fmt.Errorf("--status-address %s: %w", o.statusAddress, err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	srv := &http.Server{Handler: o.statusHandler(cp), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// printPlan parses every component's arguments and runs the barrier without
// applying it, then prints the plan, or the conflicts.
func (o *serverOptions) printPlan(ctx context.Context, h *harness.Harness, args map[string][]string, stdout io.Writer) error {
	plan, err := h.DryRun(ctx)
	if err != nil {
		return err
	}
	if o.output == "json" {
		out := DryRunOutput{Plan: plan}
		for _, c := range h.Status().Components {
			out.Components = append(out.Components, DryRunComponent{Name: c.Name, Args: harness.RedactArgs(args[c.Name])})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, c := range h.Status().Components {
		fmt.Fprintf(tw, "%s:\n", c.Name)
		for _, a := range harness.RedactArgs(args[c.Name]) {
			fmt.Fprintf(tw, "  %s\n", a)
		}
	}
	fmt.Fprintf(tw, "\nFEATURES SET BY A COMPONENT OR NOT AT THEIR DEFAULT\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	return plan.WriteTable(stdout, scoping.ChangedFeatures)
}

// DryRunOutput is what `server --dry-run -o json` prints: each component's
// arguments, as the server would run it (secret values redacted:
// harness.RedactArgs), and the plan of the barrier.
type DryRunOutput struct {
	Components []DryRunComponent `json:"components"`
	Plan       *scoping.Plan     `json:"plan"`
}

// DryRunComponent is one component of DryRunOutput.
type DryRunComponent struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
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
