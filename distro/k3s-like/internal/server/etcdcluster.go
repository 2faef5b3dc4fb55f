package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/etcdmembers"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/snapshot"
	"github.com/kubeharness/kubeharness/harness"
)

// etcdOptions are the flags of the embedded etcd as a cluster that grows
// (k3s's managed etcd): --cluster-init, --server, snapshots, reset.
type etcdOptions struct {
	clusterInit      bool
	server           string
	snapshots        snapshot.Options
	disableSnapshots bool
	clusterReset     bool
	resetRestorePath string
	joinURL          *url.URL // --server, parsed by checkEtcd
	clusterMember    bool     // checkEtcd: the embedded etcd is a member of a cluster that can grow
}

// addEtcdFlags adds k3s's flags of the managed etcd.
func (o *options) addEtcdFlags(f *pflag.FlagSet) {
	e := &o.etcd
	f.BoolVar(&e.clusterInit, "cluster-init", false, "Start a new cluster whose embedded etcd can grow: other servers join it with --server and the token (k3s's managed etcd); its member listens for peers on the advertised address")
	f.StringVarP(&e.server, "server", "s", "", "Join the cluster of the server at this URL (https://HOST:6443): fetch the cluster's PKI (its CA pinned by the full token of --token-file) and join its embedded etcd as a member. Also $K3S_LIKE_URL")
	e.snapshots.AddFlags(f)
	f.BoolVar(&e.disableSnapshots, "etcd-disable-snapshots", false, "Take no scheduled snapshots of the embedded etcd (a member of a cluster takes them on --etcd-snapshot-schedule-cron)")
	f.BoolVar(&e.clusterReset, "cluster-reset", false, "Make this server's etcd member the only member of a new cluster, with its data (or with --cluster-reset-restore-path, with a snapshot's), then exit: restart without it, and clear the other servers' DATA_DIR/etcd before they join again")
	f.StringVar(&e.resetRestorePath, "cluster-reset-restore-path", "", "With --cluster-reset: restore this snapshot (a file of k3s-like etcd-snapshot) first; it is verified before anything is touched, and the current DATA_DIR/etcd is kept as DATA_DIR/etcd-old-UNIXTIME")
}

// checkEtcd checks the managed etcd's flags; each error names the flag.
func (o *options) checkEtcd(getenv func(string) string) error {
	e := &o.etcd
	external := o.externalDatastore()
	if e.server == "" {
		e.server = getenv("K3S_LIKE_URL")
	}
	switch {
	case e.clusterInit && e.server != "":
		return fmt.Errorf("--cluster-init starts a cluster and --server=%s joins one: give one of them", e.server)
	case external && (e.clusterInit || e.server != "" || e.clusterReset):
		return errors.New("--cluster-init, --server and --cluster-reset are for the embedded etcd: not with --datastore-endpoint")
	case e.resetRestorePath != "" && !e.clusterReset:
		return fmt.Errorf("--cluster-reset-restore-path=%s needs --cluster-reset", e.resetRestorePath)
	}
	if e.server != "" {
		u, err := url.Parse(e.server)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("--server=%s: want https://HOST:PORT", e.server)
		}
		e.joinURL = u
	}
	if err := e.snapshots.Check(); err != nil {
		return err
	}
	_, err := os.Stat(clusterMarker(o.DataDir))
	e.clusterMember = !external && (e.clusterInit || e.server != "" || err == nil)
	return nil
}

// clusterMarker is DATA_DIR/etcd-cluster: it says that the embedded etcd
// is a member of a cluster that can grow, so that a restart without
// --cluster-init or --server (k3s's way: they matter on the first start)
// keeps listening for its peers.
func clusterMarker(dataDir string) string { return datadir.Etcd(dataDir) + "-cluster" }

// etcdCluster is the embedded etcd's Cluster: nil for a member on
// loopback alone.
func (o *options) etcdCluster() *etcd.Cluster {
	if !o.etcd.clusterMember {
		return nil
	}
	client := o.layout().APIServerEtcdClient()
	return &etcd.Cluster{AdvertiseIP: o.net.advertise, ClientCertFile: client.CertFile, ClientKeyFile: client.KeyFile}
}

// apiServer is the server's kube-apiserver: with a member of a cluster
// that can grow, it starts once etcd is ready (a voting member), not
// while etcd comes up: a joining member serves only once promoted.
func (o *options) apiServer() *components.APIServer {
	a := components.NewAPIServer()
	if o.etcd.clusterMember {
		a.WaitForEtcd()
	}
	return a
}

// joinCluster is the barrier hook of a server joining through --server
// whose etcd holds no member yet: it fetches the cluster's PKI (pinned by
// the full token, verified before anything is written) and the members'
// etcd client URLs, which the etcd component joins. A server whose etcd is
// a member already restarts as that member, through no one.
func (o *options) joinCluster(ctx context.Context, log logr.Logger, db *etcd.Etcd) error {
	if o.etcd.joinURL == nil || etcd.HasMember(datadir.Etcd(o.DataDir)) {
		return nil
	}
	tok, source, found, err := o.serverToken()
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("--server=%s: joining a cluster needs its token: --token-file with a server's %s", o.etcd.server, cluster.TokenFile("DATA_DIR"))
	}
	if tok.CAHash == "" {
		return fmt.Errorf("--server=%s: the token (%s) is a bare secret: joining a server needs the full token (K10…::server:…) of a server's DATA_DIR/token, which pins the cluster CA", o.etcd.server, source)
	}
	urls, err := cluster.FetchServerPKI(ctx, log, o.etcd.joinURL, tok, o.layout().Dir)
	if err != nil {
		return err
	}
	return db.SetJoin(urls)
}

// markCluster writes DATA_DIR/etcd-cluster once the server is a member of
// a cluster that can grow.
func (o *options) markCluster() error {
	if !o.etcd.clusterMember {
		return nil
	}
	how := "cluster-init"
	if o.etcd.server != "" {
		how = "joined " + o.etcd.server
	}
	if b, err := os.ReadFile(clusterMarker(o.DataDir)); err == nil && len(b) > 0 {
		return nil
	}
	return atomicfile.Write(clusterMarker(o.DataDir), []byte(how+"\n"), 0o600)
}

// clusterComponents are the components of a member of a cluster that can
// grow: what the other servers join with, the member-removal controller
// and the scheduled snapshots.
func (o *options) clusterComponents(h *harness.Harness, db *etcd.Etcd) error {
	if !o.etcd.clusterMember || db == nil {
		return nil
	}
	log := cli.Logger()
	cfg := o.etcdConfig()
	if err := (cluster.ServerJoin{
		DataDir: o.DataDir, Layout: o.layout(), AdminKubeconfig: o.layout().AdminKubeconfig(),
		NodeName: o.NodeName, EtcdClientURL: cfg.AdvertisedClientURL(), Log: log,
	}).Add(h); err != nil {
		return err
	}
	client := o.layout().APIServerEtcdClient()
	if err := h.Add(&etcdmembers.Remover{
		Identity: o.NodeName, Kubeconfig: o.layout().AdminKubeconfig(),
		EtcdEndpoint: cfg.ClientURL(), EtcdCAFile: cfg.TrustedCAFile, EtcdCertFile: client.CertFile, EtcdKeyFile: client.KeyFile,
	}, nil, etcd.Name, components.APIServerName); err != nil {
		return err
	}
	if o.etcd.disableSnapshots {
		return nil
	}
	return h.Add(o.etcd.snapshots.Scheduled(o.snapshotConfig()), nil, etcd.Name)
}

// snapshotConfig is where this server's snapshots go and how they reach
// its etcd member.
func (o *options) snapshotConfig() snapshot.Config {
	return snapshot.Config{DataDir: o.DataDir, NodeName: o.NodeName, EtcdClientPort: o.etcdClientPort, Dir: o.etcd.snapshots.Dir}
}

// resetCluster is --cluster-reset: the member in DATA_DIR/etcd becomes the
// only member of a new cluster (restored first from
// --cluster-reset-restore-path, verified before anything is touched), and
// the server exits, as k3s's does.
func (o *options) resetCluster(ctx context.Context, stdout interface{ Write([]byte) (int, error) }) error {
	log := cli.Logger()
	cfg := o.etcdConfig()
	if cfg.Cluster == nil {
		cfg.MemberName = o.NodeName
		cfg.Cluster = &etcd.Cluster{AdvertiseIP: o.net.advertise}
	}
	if o.etcd.resetRestorePath != "" {
		info, err := etcd.VerifySnapshot(o.etcd.resetRestorePath)
		if err != nil {
			return fmt.Errorf("--cluster-reset-restore-path=%s: %w (nothing was touched)", o.etcd.resetRestorePath, err)
		}
		old, err := etcd.RestoreSnapshot(log, cfg, o.etcd.resetRestorePath)
		if err != nil {
			return fmt.Errorf("--cluster-reset-restore-path=%s: %w", o.etcd.resetRestorePath, err)
		}
		log.Info("Restored the etcd snapshot", "snapshot", o.etcd.resetRestorePath, "revision", info.Revision, "size", info.Size, "formerDataDir", old)
	} else if err := etcd.ResetCluster(ctx, cfg); err != nil {
		return fmt.Errorf("--cluster-reset: %w", err)
	}
	o.etcd.clusterMember = true
	if err := o.markCluster(); err != nil {
		return err
	}
	msg := "Managed etcd cluster membership has been reset: restart without --cluster-reset. On each other server, back up and delete " +
		datadir.Etcd("DATA_DIR") + ", then start it again (with --server and the token) to rejoin."
	log.Info(msg)
	_, err := fmt.Fprintln(stdout, strings.TrimSpace(msg))
	return err
}
