package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component's name in a harness.
const Name = names.Etcd

// Default ports, etcd's own.
const (
	DefaultClientPort = 2379
	DefaultPeerPort   = 2380
)

// TickMs and ElectionMs are the single member's heartbeat interval and
// election timeout (etcd's --heartbeat-interval, --election-timeout). At
// start a single member elects itself after 1 to ElectionMs/TickMs ticks
// (raft's randomized timeout less the ticks etcd fast-forwards for a
// single member): 50–250 ms here, 100–1000 ms with etcd's defaults (100,
// 1000), on the path of every start. With no peer, nothing else waits on
// them; etcd's request timeout (5 s + 2 × ElectionMs) and minimum lease
// TTL (1.5 × ElectionMs) shrink with them.
const (
	TickMs     = 50
	ElectionMs = 250
)

// Config is an embedded etcd's configuration. DataDir and the three TLS
// files are required.
type Config struct {
	// DataDir holds etcd's data; it is created (0700) on first start and
	// reused after.
	DataDir string
	// ClientPort is the client port on 127.0.0.1 (https); 0 means
	// DefaultClientPort.
	ClientPort int
	// PeerPort is the peer port on 127.0.0.1; 0 means DefaultPeerPort. A
	// single member has no peers, but etcd listens on it: with https and
	// client-certificate authentication, as the client port (the same
	// certificate, which is for both server and client auth, and the same
	// CA), so that a local user without a certificate reaches nothing
	// (/members, /raft, /leases).
	PeerPort int
	// CertFile and KeyFile are etcd's serving certificate and key
	// (components/pki: Files.EtcdServer).
	CertFile, KeyFile string
	// TrustedCAFile verifies the clients' certificates (components/pki:
	// Files.EtcdCA); a client without a certificate it signed is refused.
	TrustedCAFile string
	// MemberName is the member's name; "" means "default", etcd's default.
	// A data dir must be reopened with the name it was created with.
	MemberName string
	// LogLevel is the lowest level etcd logs at: debug, info, warn, error,
	// dpanic, panic or fatal; "" means warn.
	LogLevel string
	// UnsafeNoFsync skips fsync: only for data that is thrown away (tests).
	UnsafeNoFsync bool
	// StorageVersion ("3.6"), when one minor below the embedded etcd's
	// (BinaryVersion), is the etcd that must be able to open DataDir after
	// this member stops: the one an older minor of the same distro embeds,
	// for a rollback. Run then enables etcd's downgrade to it once the
	// member serves (as soon as the cluster version has risen above it),
	// and Ready waits until the member reports that storage version; the
	// member keeps serving meanwhile and after, and the downgrade stays
	// enabled while it runs. "" (or the embedded minor) keeps etcd's own:
	// a downgrade an earlier run left enabled is cancelled. Anything else
	// is an error: etcd downgrades one minor only.
	StorageVersion string
	// Cluster, when set, makes the member one of a cluster that can grow
	// (new, or joined): it listens for peers and clients on
	// Cluster.AdvertiseIP too, with etcd's default timings, and Ready
	// waits until it is a voting member. nil: a single member on loopback.
	Cluster *Cluster

	forceNewCluster bool // ResetCluster's run
}

func (c Config) clientPort() int {
	if c.ClientPort == 0 {
		return DefaultClientPort
	}
	return c.ClientPort
}

func (c Config) peerPort() int {
	if c.PeerPort == 0 {
		return DefaultPeerPort
	}
	return c.PeerPort
}

func (c Config) logLevel() string {
	if c.LogLevel == "" {
		return "warn"
	}
	return c.LogLevel
}

func (c Config) validate() error {
	var missing []error
	for _, f := range []struct{ name, value string }{
		{"DataDir", c.DataDir}, {"CertFile", c.CertFile}, {"KeyFile", c.KeyFile}, {"TrustedCAFile", c.TrustedCAFile},
	} {
		if f.value == "" {
			missing = append(missing, fmt.Errorf("etcd: Config.%s is required", f.name))
		}
	}
	if _, err := c.storageTarget(); err != nil {
		missing = append(missing, err)
	}
	if c.Cluster != nil {
		missing = append(missing, c.Cluster.validate())
	}
	return errors.Join(missing...)
}

// loopback is the host etcd listens on.
const loopback = "127.0.0.1"

// Etcd is the harness component: a single-member etcd on loopback. Make it
// with New. A value runs once; Renew returns a new one for a restart.
type Etcd struct {
	cfg Config

	started atomic.Bool
	ready   probe.Readiness // once etcd serves clients
	mu      sync.Mutex      // guards cfg
}

// New returns an unstarted etcd component with configuration cfg.
func New(cfg Config) *Etcd {
	return &Etcd{cfg: cfg}
}

var (
	_ harness.Component = (*Etcd)(nil)
	_ harness.Readier   = (*Etcd)(nil)
	_ harness.Renewer   = (*Etcd)(nil)
)

// Name returns Name, "etcd".
func (e *Etcd) Name() string { return Name }

// AddFlags adds no flags: etcd is configured by Config.
func (e *Etcd) AddFlags(*scoping.Scope) error { return nil }

// Renew returns a new, unstarted etcd with the same Config.
func (e *Etcd) Renew() harness.Component { return New(e.Config()) }

// Config returns e's configuration.
func (e *Etcd) Config() Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cfg
}

// SetStorageVersion sets Config.StorageVersion before Run: for a binary
// that learns which etcd must open the data dir next only from the
// reconciled plan (a harness.BarrierHook runs after the barrier, before
// any component starts). It returns an error once Run was called, or for a
// version Config.StorageVersion does not accept.
func (e *Etcd) SetStorageVersion(v string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started.Load() {
		return errors.New("etcd: SetStorageVersion after Run")
	}
	cfg := e.cfg
	cfg.StorageVersion = v
	if _, err := cfg.storageTarget(); err != nil {
		return err
	}
	e.cfg = cfg
	return nil
}

// SetJoin sets Config.Cluster.Join before Run: for a binary that learns
// the members to join only once it fetched the cluster's PKI (a
// harness.BarrierHook runs after the barrier, before any component
// starts). It returns an error once Run was called, or without a Cluster.
func (e *Etcd) SetJoin(urls []string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started.Load() {
		return errors.New("etcd: SetJoin after Run")
	}
	if e.cfg.Cluster == nil {
		return errors.New("etcd: SetJoin without Config.Cluster")
	}
	cl := *e.cfg.Cluster
	cl.Join = slices.Clone(urls)
	e.cfg.Cluster = &cl
	return nil
}

// ClientURL is the URL clients connect to: https://127.0.0.1:<ClientPort>
// (the apiserver's --etcd-servers).
func (e *Etcd) ClientURL() string { return e.Config().ClientURL() }

// ClientURL is the URL clients of an etcd with this configuration connect
// to: https://127.0.0.1:<ClientPort>.
func (c Config) ClientURL() string { return c.clientURL().String() }

func (c Config) clientURL() *url.URL {
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(loopback, strconv.Itoa(c.clientPort()))}
}

func (c Config) peerURL() *url.URL {
	host := loopback
	if c.Cluster != nil {
		host = c.Cluster.AdvertiseIP
	}
	return &url.URL{Scheme: "https", Host: net.JoinHostPort(host, strconv.Itoa(c.peerPort()))}
}

// Run starts etcd and serves until ctx ends; then it closes etcd, waits for
// it to stop, and returns nil. It returns an error if etcd cannot start,
// fails, or stops on its own — a *DataDirError, naming the data dir, where
// etcd itself gives up while starting (a full disk, say). It may be called
// once.
func (e *Etcd) Run(ctx context.Context) error {
	e.mu.Lock()
	if !e.started.CompareAndSwap(false, true) {
		e.mu.Unlock()
		return errors.New("etcd: Run called twice; use Renew for a new run")
	}
	c := e.cfg
	e.mu.Unlock()
	if err := c.validate(); err != nil {
		return err
	}
	fresh := !HasMember(c.DataDir)
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return fmt.Errorf("etcd: data dir: %w", err)
	}
	if err := c.checkStorage(); err != nil {
		return err
	}
	target, _ := c.storageTarget() // validated above
	logger := klog.FromContext(ctx).WithName(Name)
	var closing atomic.Bool
	zl, err := newZapLogger(logger, c.logLevel(), &closing, failureHooks(c.DataDir, logger, os.Exit)...)
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name = c.memberName()
	cfg.Dir = c.DataDir
	cfg.Logger = "zap"
	cfg.LogLevel = c.logLevel()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zl)
	cfg.UnsafeNoFsync = c.UnsafeNoFsync
	// etcd 3.6's NewConfig leaves the threshold at 0, and every request is
	// then logged as an expensive one ("request stats", a warning); 3.7's
	// sets etcd's default, as here.
	if cfg.WarningUnaryRequestDuration == 0 {
		cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	}
	client, peer := *c.clientURL(), *c.peerURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.TickMs, cfg.ElectionMs = TickMs, ElectionMs
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile:       c.CertFile,
		KeyFile:        c.KeyFile,
		TrustedCAFile:  c.TrustedCAFile,
		ClientCertAuth: true,
	}
	cfg.PeerTLSInfo = cfg.ClientTLSInfo
	cfg.ForceNewCluster = c.forceNewCluster

	// A member that can have peers: a new cluster, or one joined (as a
	// learner, undone if this run fails before its promotion).
	var j *joining
	if c.Cluster != nil {
		initial := ""
		if fresh && len(c.Cluster.Join) > 0 {
			if j, initial, err = c.join(ctx, logger); err != nil {
				_ = removeContents(c.DataDir)
				return err
			}
		}
		c.configureCluster(cfg, initial)
	}
	defer j.close()
	started := time.Now()
	promoted := false
	defer func() {
		if j != nil && !promoted {
			j.undo(logger)
		}
	}()

	var srv *embed.Etcd
	err = catchFailure(func() (err error) {
		srv, err = embed.StartEtcd(cfg)
		return err
	})
	var f *DataDirError
	switch {
	case errors.As(err, &f):
		return err // it names the data dir
	case err != nil && j != nil:
		return c.joinErr("starting the member", err)
	case err != nil:
		return fmt.Errorf("etcd: starting in %s: %w", c.DataDir, err)
	}
	defer func() {
		closing.Store(true)
		srv.Close()
	}()
	select {
	case <-srv.Server.ReadyNotify():
		if c.Cluster != nil {
			if err := c.settleMembership(ctx, logger, srv.Server, started); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if j != nil {
					return c.joinErr("promoting this member", err)
				}
				return err
			}
			promoted = true
		}
		if err := settleStorage(ctx, logger, srv.Server, target); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		logger.V(1).Info("Ready", "clientURL", client.String(), "dataDir", c.DataDir,
			"storageVersion", storageVersionOf(srv.Server), "clusterVersion", srv.Server.ClusterVersion())
		e.ready.Mark()
	case err := <-srv.Err():
		return fmt.Errorf("etcd: %w", err)
	case <-srv.Server.StopNotify():
		return errors.New("etcd: stopped before it was ready")
	case <-ctx.Done():
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-srv.Err():
		return fmt.Errorf("etcd: %w", err)
	case <-srv.Server.StopNotify():
		return errors.New("etcd: the server stopped")
	}
}

// Ready returns nil once etcd serves clients (and stays nil after Run
// returned), or ctx's error. It does not watch Run: the harness ends
// Ready's context when Run returned, and it alone decides that Run
// returned before Ready.
func (e *Etcd) Ready(ctx context.Context) error { return e.ready.Wait(ctx) }

// Client returns a client of e authenticated with the client certificate
// certFile and keyFile (components/pki: Files.APIServerEtcdClient), which
// verifies etcd's serving certificate against Config.TrustedCAFile (the PKI
// of components/pki signs etcd's certificate and its clients' with one CA).
// It logs like Run, through logger. Close it.
func (e *Etcd) Client(logger klog.Logger, certFile, keyFile string) (*clientv3.Client, error) {
	c := e.Config()
	tlsInfo := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: c.TrustedCAFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd: client TLS: %w", err)
	}
	zl, err := NewZapLogger(logger.WithName(Name+"-client"), c.logLevel())
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{e.ClientURL()},
		TLS:         tlsCfg,
		DialTimeout: 5 * time.Second,
		Logger:      zl,
	})
}
