package etcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	etcderrors "go.etcd.io/etcd/server/v3/etcdserver/errors"
	"go.etcd.io/etcd/server/v3/storage/datadir"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// ClusterTickMs and ClusterElectionMs are a member's heartbeat interval and
// election timeout when it can have peers (Config.Cluster): etcd's
// defaults, which tolerate the scheduling delays of a loaded host that the
// single member's shorter ones would turn into elections. A leader lost is
// replaced after about one to two election timeouts.
const (
	ClusterTickMs     = 100
	ClusterElectionMs = 1000
)

// DefaultPromoteTimeout is Cluster.PromoteTimeout's default.
const DefaultPromoteTimeout = 5 * time.Minute

// Cluster makes the member one of a cluster that can grow: k3s's
// --cluster-init (no Join) and --server (Join).
type Cluster struct {
	// AdvertiseIP is the member's address on the network its peers share:
	// its peer URL is https://AdvertiseIP:PeerPort (listened on there), and
	// its clients reach it at https://AdvertiseIP:ClientPort as well as on
	// loopback (Config.ClientURL). Required.
	AdvertiseIP string
	// Join are client URLs of members of an existing cluster. When DataDir
	// holds no member yet, Run adds this member to that cluster as a
	// learner before it starts it. Empty starts a new cluster of this one
	// member. Once DataDir holds a member, Join is not read: the member
	// restarts as itself.
	Join []string
	// ClientCertFile and ClientKeyFile are a client certificate of the
	// etcd CA (TrustedCAFile) for Join's members. Required with Join.
	ClientCertFile, ClientKeyFile string
	// PromoteTimeout bounds how long a learner may take from its start
	// to its promotion to a voting member (etcd refuses the promotion
	// until the learner has caught up with the leader); 0 means
	// DefaultPromoteTimeout.
	PromoteTimeout time.Duration
}

func (c *Cluster) promoteTimeout() time.Duration {
	if c.PromoteTimeout <= 0 {
		return DefaultPromoteTimeout
	}
	return c.PromoteTimeout
}

func (c *Cluster) validate() error {
	if net.ParseIP(c.AdvertiseIP) == nil {
		return fmt.Errorf("etcd: Config.Cluster.AdvertiseIP %q is not an IP address", c.AdvertiseIP)
	}
	if ip := net.ParseIP(c.AdvertiseIP); ip.IsUnspecified() {
		return fmt.Errorf("etcd: Config.Cluster.AdvertiseIP %s: peers cannot reach an unspecified address", c.AdvertiseIP)
	}
	if len(c.Join) > 0 && (c.ClientCertFile == "" || c.ClientKeyFile == "") {
		return errors.New("etcd: Config.Cluster.Join needs ClientCertFile and ClientKeyFile")
	}
	for _, u := range c.Join {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" {
			return fmt.Errorf("etcd: Config.Cluster.Join: %q is not an https client URL", u)
		}
	}
	return nil
}

// PeerURL is the member's peer URL: https://AdvertiseIP:PeerPort with a
// Cluster, https://127.0.0.1:PeerPort without.
func (c Config) PeerURL() string { return c.peerURL().String() }

// AdvertisedClientURL is the client URL the member advertises to its
// cluster: https://AdvertiseIP:ClientPort with a Cluster, ClientURL
// without.
func (c Config) AdvertisedClientURL() string {
	if c.Cluster == nil {
		return c.ClientURL()
	}
	return "https://" + net.JoinHostPort(c.Cluster.AdvertiseIP, strconv.Itoa(c.clientPort()))
}

func (c Config) memberName() string {
	if c.MemberName == "" {
		return embed.DefaultName
	}
	return c.MemberName
}

// HasMember reports whether dataDir holds an etcd member (its WAL): Run
// then restarts that member and reads neither Cluster.Join nor
// InitialCluster.
func HasMember(dataDir string) bool { return wal.Exist(datadir.ToWalDir(dataDir)) }

// JoinError is Run's error when this member could not join the cluster
// of Cluster.Join: the step that failed and why. Nothing of the attempt is
// left: a member it added is removed again, and the data dir it began is
// deleted.
//
//	etcd: joining the cluster at https://192.0.2.10:2379 as member node-b (https://192.0.2.11:2380): adding this member as a learner: context deadline exceeded
type JoinError struct {
	Endpoints []string // Cluster.Join
	Member    string   // this member's name
	PeerURL   string
	Step      string
	Err       error
}

func (e *JoinError) Error() string {
	return fmt.Sprintf("etcd: joining the cluster at %s as member %s (%s): %s: %v",
		strings.Join(e.Endpoints, ","), e.Member, e.PeerURL, e.Step, e.Err)
}

func (e *JoinError) Unwrap() error { return e.Err }

// joining is a join in progress: the client of the cluster and the
// learner this run added (0 if none), for undo.
type joining struct {
	c      Config
	client *clientv3.Client
	added  uint64
	fresh  bool // the data dir held nothing before this run
}

func (c Config) joinErr(step string, err error) *JoinError {
	return &JoinError{Endpoints: c.Cluster.Join, Member: c.memberName(), PeerURL: c.PeerURL(), Step: step, Err: err}
}

// clusterClient is a client of the members at endpoints, authenticated by
// Cluster's client certificate.
func (c Config) clusterClient(logger klog.Logger, endpoints []string) (*clientv3.Client, error) {
	tlsInfo := transport.TLSInfo{CertFile: c.Cluster.ClientCertFile, KeyFile: c.Cluster.ClientKeyFile, TrustedCAFile: c.TrustedCAFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("client TLS: %w", err)
	}
	zl, err := NewZapLogger(logger.WithName(Name+"-join"), "error")
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 10 * time.Second, Logger: zl})
}

// join adds this member to the cluster of Cluster.Join as a learner (or
// finds it there, added by an earlier run that did not start it) and
// returns the initial cluster to start it with. A member at this member's
// peer URL that has started before is this host's former member, whose
// data is gone (this data dir holds none): it is removed first, once no
// process here listens on the peer address.
func (c Config) join(ctx context.Context, logger klog.Logger) (*joining, string, error) {
	client, err := c.clusterClient(logger, c.Cluster.Join)
	if err != nil {
		return nil, "", c.joinErr("connecting", err)
	}
	j := &joining{c: c, client: client, fresh: true}
	fail := func(step string, err error) (*joining, string, error) {
		client.Close()
		return nil, "", c.joinErr(step, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, err := client.MemberList(rctx)
	if err != nil {
		return fail("listing the cluster's members", err)
	}
	peer := c.PeerURL()
	var self *pb.Member
	for _, m := range list.Members {
		switch {
		case slices.Contains(m.PeerURLs, peer):
			self = m
		case m.Name == c.memberName():
			return fail("checking the member list", fmt.Errorf("a member named %s already exists at %s: give this server another --node-name, or remove that member (delete its Node)", m.Name, strings.Join(m.PeerURLs, ",")))
		}
	}
	if self != nil && self.Name != "" {
		if err := c.checkPeerAddressFree(); err != nil {
			return fail("checking the member at this address", err)
		}
		logger.Info("Removing this host's former etcd member: its data is gone, and it joins again", "member", self.Name, "id", fmt.Sprintf("%x", self.ID), "peerURL", peer)
		if _, err := client.MemberRemove(rctx, self.ID); err != nil {
			return fail("removing this host's former member "+self.Name, err)
		}
		self = nil
	}
	members := list.Members
	if self == nil {
		resp, err := c.addLearner(ctx, logger, client, peer)
		if err != nil {
			return fail("adding this member as a learner", err)
		}
		self, members, j.added = resp.Member, resp.Members, resp.Member.ID
		logger.Info("Added this etcd member to the cluster as a learner", "member", c.memberName(), "id", fmt.Sprintf("%x", self.ID), "peerURL", peer)
	} else {
		j.added = self.ID // an earlier run added it and did not start it: undo it as ours
		logger.Info("This etcd member was added to the cluster before and has not started: starting it", "id", fmt.Sprintf("%x", self.ID))
	}
	var initial []string
	for _, m := range members {
		name := m.Name
		if m.ID == self.ID {
			name = c.memberName()
		}
		if name == "" {
			continue // another member that has not started: it has no name yet
		}
		for _, u := range m.PeerURLs {
			initial = append(initial, name+"="+u)
		}
	}
	return j, strings.Join(initial, ","), nil
}

// addLearner adds the member at peer as a learner, retrying for up to
// PromoteTimeout while etcd refuses for a reason that passes (addRetries).
func (c Config) addLearner(ctx context.Context, logger klog.Logger, client *clientv3.Client, peer string) (*clientv3.MemberAddResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Cluster.promoteTimeout())
	defer cancel()
	var last string
	for {
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		resp, err := client.MemberAddAsLearner(rctx, []string{peer})
		rcancel()
		if err == nil {
			return resp, nil
		}
		if !addRetries(err) {
			return nil, err
		}
		if err.Error() != last {
			logger.Info("Adding this etcd member as a learner; retrying", "err", err)
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// addRetries reports whether a refused MemberAddAsLearner passes by
// itself: a member promoted or restarted moments ago (etcd adds one only
// once the leader has heard from a quorum for 5 s: "unhealthy cluster");
// another server's learner not yet promoted (one at a time: "too many
// learner members"); or the former member at this peer URL, removed in
// the second it was added: etcd derives a member's ID from its peer URLs
// and the Unix second, and refuses a removed ID ("member not found", its
// ErrIDRemoved), so the next second's ID is new.
func addRetries(err error) bool {
	return errors.Is(err, rpctypes.ErrUnhealthy) || errors.Is(err, rpctypes.ErrTooManyLearners) || errors.Is(err, rpctypes.ErrMemberNotFound)
}

// checkPeerAddressFree fails if something on this host listens on the
// peer address already: a member at that URL is then alive, not a former
// one.
func (c Config) checkPeerAddressFree() error {
	l, err := net.Listen("tcp", c.peerURL().Host)
	if err != nil {
		return fmt.Errorf("a member at this peer URL exists and %s is taken on this host (%v): another etcd listens there", c.peerURL().Host, err)
	}
	return l.Close()
}

// undo removes the learner this run added and the data dir it began; it
// logs what it could not undo. It runs when the member fails or is stopped
// before it was promoted.
func (j *joining) undo(logger klog.Logger) {
	if j.added != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := j.client.MemberRemove(ctx, j.added); err != nil && !errors.Is(err, membership.ErrIDNotFound) && !strings.Contains(err.Error(), membership.ErrIDNotFound.Error()) {
			logger.Error(err, "Could not remove the learner this failed join added: remove it with etcdctl member remove", "id", fmt.Sprintf("%x", j.added))
		} else {
			logger.Info("Removed the learner this failed join added", "id", fmt.Sprintf("%x", j.added))
		}
	}
	if j.fresh {
		if err := removeContents(j.c.DataDir); err != nil {
			logger.Error(err, "Could not remove what the failed join wrote to the data dir", "dataDir", j.c.DataDir)
		}
	}
}

func (j *joining) close() {
	if j != nil {
		j.client.Close()
	}
}

// removeContents empties dir, keeping dir itself.
func removeContents(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
	}
	return errors.Join(errs...)
}

// configureCluster sets what Cluster means on cfg: the listeners and
// advertised URLs, the timings, and the initial cluster (a new one of
// this member, or initial from join).
func (c Config) configureCluster(cfg *embed.Config, initial string) {
	loopbackClient := *c.clientURL()
	advClient, _ := url.Parse(c.AdvertisedClientURL())
	peer := *c.peerURL()
	cfg.ListenClientUrls = []url.URL{loopbackClient, *advClient}
	cfg.AdvertiseClientUrls = []url.URL{*advClient}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.TickMs, cfg.ElectionMs = ClusterTickMs, ClusterElectionMs
	if initial != "" {
		cfg.InitialCluster = initial
		cfg.ClusterState = embed.ClusterStateFlagExisting
	} else {
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	}
}

// settleMembership runs once the member serves, before Ready, with a
// Cluster: a learner is promoted once etcd allows it (it has caught up
// with the leader), retried every half second until
// Cluster.PromoteTimeout from the start; a voting member whose recorded
// peer URL is not the advertised one (a single member started before
// without Cluster, on loopback) gets it updated, so that members that join
// reach it.
func (c Config) settleMembership(ctx context.Context, logger klog.Logger, s *etcdserver.EtcdServer, started time.Time) error {
	id := s.MemberID()
	if !s.IsLearner() {
		m := s.Cluster().Member(id)
		if m != nil && !slices.Equal(m.PeerURLs, []string{c.PeerURL()}) {
			logger.Info("Updating this etcd member's peer URL to the advertised one", "from", m.PeerURLs, "to", c.PeerURL())
			um := membership.Member{ID: id, RaftAttributes: membership.RaftAttributes{PeerURLs: []string{c.PeerURL()}}}
			if _, err := s.UpdateMember(ctx, um); err != nil {
				return fmt.Errorf("etcd: updating this member's peer URL to %s: %w", c.PeerURL(), err)
			}
		}
		return nil
	}
	deadline := started.Add(c.Cluster.promoteTimeout())
	pctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var last error
	err := wait.PollUntilContextCancel(pctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.StopNotify():
			return false, errors.New("etcd: the server stopped while a learner")
		default:
		}
		if !s.IsLearner() {
			return true, nil // promoted by someone else
		}
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		_, err := s.PromoteMember(rctx, uint64(id))
		switch {
		case err == nil, errors.Is(err, membership.ErrMemberNotLearner):
			logger.Info("Promoted this etcd member from learner to voting member", "id", id.String(), "after", time.Since(started).Round(time.Millisecond))
			return true, nil
		case errors.Is(err, etcderrors.ErrLearnerNotReady):
		default:
			if last == nil || err.Error() != last.Error() {
				logger.Info("Promoting this etcd member; retrying", "err", err)
			}
		}
		last = err
		return false, nil
	})
	if err != nil && ctx.Err() == nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("etcd: this learner was not promoted within %s (etcd promotes a learner once it has caught up with the leader: can the other members reach %s?): %w",
			c.Cluster.promoteTimeout(), c.PeerURL(), last)
	}
	return err
}
