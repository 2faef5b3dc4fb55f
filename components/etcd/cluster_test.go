package etcd_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// clusterPKI is one etcd CA and a serving certificate for 127.0.0.1-3,
// shared by every member of a test cluster.
func clusterPKI(t *testing.T) *pki.Files {
	t.Helper()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "pki"), APIServerURL: "https://127.0.0.1:6443",
		EtcdIPs: []net.IP{net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3")}})
	require.NoError(t, err)
	return files
}

// memberConfig is member name's configuration on AdvertiseIP ip, joining
// join (none: a new cluster).
func memberConfig(t *testing.T, files *pki.Files, name, ip string, join ...string) etcd.Config {
	t.Helper()
	cfg, err := testenv.EtcdConfig(filepath.Join(t.TempDir(), name), files)
	require.NoError(t, err)
	cfg.MemberName = name
	cfg.Cluster = &etcd.Cluster{AdvertiseIP: ip, Join: join,
		ClientCertFile: files.APIServerEtcdClient.CertFile, ClientKeyFile: files.APIServerEtcdClient.KeyFile}
	return cfg
}

func members(t *testing.T, e *etcd.Etcd, files *pki.Files) []string {
	t.Helper()
	c, err := e.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.MemberList(ctx)
	require.NoError(t, err)
	var out []string
	for _, m := range resp.Members {
		kind := "voter"
		if m.IsLearner {
			kind = "learner"
		}
		out = append(out, m.Name+"/"+kind)
	}
	return out
}

// TestClusterGrowsAndRestarts: a member started with Cluster and no Join
// is a cluster that two more join through it, each added as a learner and
// ready once promoted; a write on one reads on another; a member stopped
// and started again on its data dir is the same member (no fourth).
func TestClusterGrowsAndRestarts(t *testing.T) {
	files := clusterPKI(t)
	a := etcd.New(memberConfig(t, files, "a", "127.0.0.1"))
	start(t, context.Background(), a)
	ready(t, a)
	aURL := a.Config().AdvertisedClientURL()
	assert.Equal(t, []string{"a/voter"}, members(t, a, files))

	bCfg := memberConfig(t, files, "b", "127.0.0.2", aURL)
	b := etcd.New(bCfg)
	joined := time.Now()
	stopB := start(t, context.Background(), b)
	ready(t, b)
	t.Logf("b ready (promoted) %s after its start", time.Since(joined).Round(time.Millisecond))
	c := etcd.New(memberConfig(t, files, "c", "127.0.0.3", aURL, bCfg.AdvertisedClientURL()))
	start(t, context.Background(), c)
	ready(t, c)
	assert.ElementsMatch(t, []string{"a/voter", "b/voter", "c/voter"}, members(t, a, files))

	ca, err := a.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer ca.Close()
	cc, err := c.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = ca.Put(ctx, "k", "v")
	require.NoError(t, err)
	got, err := cc.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	assert.Equal(t, "v", string(got.Kvs[0].Value))

	require.NoError(t, stopB())
	assert.True(t, etcd.HasMember(bCfg.DataDir))
	b2 := b.Renew().(*etcd.Etcd)
	start(t, context.Background(), b2)
	ready(t, b2)
	assert.ElementsMatch(t, []string{"a/voter", "b/voter", "c/voter"}, members(t, b2, files), "b restarted as itself")
}

// TestClusterJoinRefused: a join that cannot reach the cluster is a
// *JoinError and leaves an empty data dir; a join whose member cannot
// start (its peer address is not this host's) removes the learner it
// added: no half-member is left.
func TestClusterJoinRefused(t *testing.T) {
	files := clusterPKI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	nowhere := "https://127.0.0.1:" + freePort(t)
	cfg := memberConfig(t, files, "x", "127.0.0.2", nowhere)
	err := etcd.New(cfg).Run(ctx)
	var je *etcd.JoinError
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "listing the cluster's members", je.Step)
	assert.Contains(t, err.Error(), "etcd: joining the cluster at "+nowhere+" as member x (https://127.0.0.2:")
	assert.Empty(t, entries(t, cfg.DataDir))

	a := etcd.New(memberConfig(t, files, "a", "127.0.0.1"))
	start(t, context.Background(), a)
	ready(t, a)
	// 192.0.2.1 (documentation) is no address of this host: the member
	// cannot listen there, after it was added.
	cfg = memberConfig(t, files, "y", "192.0.2.1", a.Config().AdvertisedClientURL())
	err = etcd.New(cfg).Run(ctx)
	require.ErrorAs(t, err, &je)
	assert.Equal(t, "starting the member", je.Step)
	assert.Equal(t, []string{"a/voter"}, members(t, a, files), "the learner added was removed")
	assert.Empty(t, entries(t, cfg.DataDir))

	// A member named as one that exists, at another address: refused
	// before anything is added.
	cfg = memberConfig(t, files, "a", "127.0.0.2", a.Config().AdvertisedClientURL())
	err = etcd.New(cfg).Run(ctx)
	require.ErrorAs(t, err, &je)
	assert.Contains(t, err.Error(), "a member named a already exists")
	assert.Equal(t, []string{"a/voter"}, members(t, a, files))
}

// TestClusterRejoinsWithClearedDataDir: in a cluster of three, a member
// whose data dir was cleared joins again at its address: its former self
// is removed, and it is added anew.
func TestClusterRejoinsWithClearedDataDir(t *testing.T) {
	files := clusterPKI(t)
	a := etcd.New(memberConfig(t, files, "a", "127.0.0.1"))
	start(t, context.Background(), a)
	ready(t, a)
	join := a.Config().AdvertisedClientURL()
	b := etcd.New(memberConfig(t, files, "b", "127.0.0.2", join))
	start(t, context.Background(), b)
	ready(t, b)
	cCfg := memberConfig(t, files, "c", "127.0.0.3", join)
	c := etcd.New(cCfg)
	stopC := start(t, context.Background(), c)
	ready(t, c)
	require.NoError(t, stopC())
	require.NoError(t, os.RemoveAll(cCfg.DataDir))
	c2 := etcd.New(cCfg)
	start(t, context.Background(), c2)
	ready(t, c2)
	assert.ElementsMatch(t, []string{"a/voter", "b/voter", "c/voter"}, members(t, a, files))
}

func freePort(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	require.NoError(t, err)
	return strconv.Itoa(p)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
