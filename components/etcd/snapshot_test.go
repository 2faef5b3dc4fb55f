package etcd_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeharness/kubeharness/components/etcd"
)

// TestSnapshotSaveVerifyRestore: a snapshot saved while writes go on is
// verified (size, revision); a truncated copy and a corrupted one are
// refused before anything is written, the data dir untouched; a restore
// brings back what was deleted after the snapshot, into a new
// one-member cluster, the former data dir kept aside.
func TestSnapshotSaveVerifyRestore(t *testing.T) {
	cfg, files := newConfig(t)
	e := etcd.New(cfg)
	stop := start(t, context.Background(), e)
	ready(t, e)
	c, err := e.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, k := range []string{"a", "b", "c"} {
		_, err := c.Put(ctx, "/keep/"+k, k)
		require.NoError(t, err)
	}
	// Writes go on while the snapshot is taken.
	wctx, wcancel := context.WithCancel(ctx)
	writing := make(chan struct{})
	go func() {
		defer close(writing)
		for i := 0; wctx.Err() == nil; i++ {
			_, _ = c.Put(wctx, "/during", time.Now().String())
		}
	}()
	path := filepath.Join(t.TempDir(), "snaps", "s1")
	info, err := etcd.SaveSnapshot(ctx, logr.Discard(), e.ClientURL(), files.EtcdCA.CertFile,
		files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile, path)
	wcancel()
	<-writing
	require.NoError(t, err)
	assert.Positive(t, info.Size)
	assert.Positive(t, info.Revision)
	assert.GreaterOrEqual(t, info.Keys, 3)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), info.Size)
	again, err := etcd.VerifySnapshot(path)
	require.NoError(t, err)
	assert.Equal(t, info, again)

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	truncated := filepath.Join(t.TempDir(), "truncated")
	require.NoError(t, os.WriteFile(truncated, b[:len(b)/2], 0o600))
	var se *etcd.SnapshotError
	_, err = etcd.VerifySnapshot(truncated)
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "truncated")
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	bad := append([]byte(nil), b...)
	bad[4096] ^= 0xff
	require.NoError(t, os.WriteFile(corrupt, bad, 0o600))
	_, err = etcd.VerifySnapshot(corrupt)
	require.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "corrupt")

	_, err = c.Delete(ctx, "/keep/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.NoError(t, stop())

	before := entries(t, cfg.DataDir)
	_, err = etcd.RestoreSnapshot(logr.Discard(), cfg, truncated)
	require.ErrorAs(t, err, &se)
	assert.Equal(t, before, entries(t, cfg.DataDir), "the data dir is untouched")
	_, err = os.Stat(cfg.DataDir + ".restoring")
	assert.True(t, os.IsNotExist(err), "nothing left beside it")

	old, err := etcd.RestoreSnapshot(logr.Discard(), cfg, path)
	require.NoError(t, err)
	assert.DirExists(t, old, "the former data dir, kept")
	e2 := etcd.New(cfg)
	start(t, context.Background(), e2)
	ready(t, e2)
	c2, err := e2.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c2.Close()
	got, err := c2.Get(ctx, "/keep/", clientv3.WithPrefix())
	require.NoError(t, err)
	assert.EqualValues(t, 3, got.Count, "the deleted keys are back")
	assert.Greater(t, got.Header.Revision, info.Revision+999_999_999, "revisions bumped past any a client saw")
}

// TestResetCluster: the member of a two-member cluster, reset, is the one
// member of a new cluster with its data.
func TestResetCluster(t *testing.T) {
	files := clusterPKI(t)
	aCfg := memberConfig(t, files, "a", "127.0.0.1")
	a := etcd.New(aCfg)
	stopA := start(t, context.Background(), a)
	ready(t, a)
	b := etcd.New(memberConfig(t, files, "b", "127.0.0.2", aCfg.AdvertisedClientURL()))
	stopB := start(t, context.Background(), b)
	ready(t, b)
	c, err := a.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = c.Put(ctx, "k", "v")
	require.NoError(t, err)
	c.Close()
	require.NoError(t, stopB())
	require.NoError(t, stopA())

	require.NoError(t, etcd.ResetCluster(ctx, aCfg))
	a2 := etcd.New(aCfg)
	start(t, context.Background(), a2)
	ready(t, a2)
	assert.Equal(t, []string{"a/voter"}, members(t, a2, files))
	c2, err := a2.Client(logr.Discard(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c2.Close()
	got, err := c2.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
}
