package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/datadir"
	"go.etcd.io/etcd/server/v3/storage/schema"

	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/pki"
)

// previousMinor is one etcd minor below the embedded one ("3.6" for 3.7).
func previousMinor(t *testing.T) string {
	t.Helper()
	major, minor, ok := strings.Cut(etcd.BinaryVersion(), ".")
	require.True(t, ok, etcd.BinaryVersion())
	m, err := strconv.Atoi(minor)
	require.NoError(t, err)
	return fmt.Sprintf("%s.%d", major, m-1)
}

// TestStorageVersionKeptBackAndReturned: a member with StorageVersion one
// minor back is Ready only once its storage is at that minor, serves
// meanwhile, and leaves the data dir at it (what the older etcd opens);
// the next run without StorageVersion cancels the downgrade, and its
// storage returns to the embedded etcd's minor.
func TestStorageVersionKeptBackAndReturned(t *testing.T) {
	cfg, files := newConfig(t)
	have, err := etcd.StorageVersion(cfg.DataDir)
	require.NoError(t, err)
	assert.Equal(t, "", have, "no data yet")

	// First run at the embedded version: the data dir is at it.
	e := etcd.New(cfg)
	stop := start(t, context.Background(), e)
	ready(t, e)
	require.Eventually(t, func() bool { return statusStorage(t, e, files) == etcd.BinaryVersion() }, 20*time.Second, 100*time.Millisecond)
	require.NoError(t, stop())
	have, err = etcd.StorageVersion(cfg.DataDir)
	require.NoError(t, err)
	assert.Equal(t, etcd.BinaryVersion(), have)

	// Kept one minor back.
	back := previousMinor(t)
	cfg.StorageVersion = back
	e = etcd.New(cfg)
	stop = start(t, context.Background(), e)
	ready(t, e)
	assert.Equal(t, back, statusStorage(t, e, files), "Ready waited for the storage version")
	require.NoError(t, stop())
	have, err = etcd.StorageVersion(cfg.DataDir)
	require.NoError(t, err)
	if back == "3.5" {
		back = "" // etcd 3.5 records no storage version
	}
	assert.Equal(t, back, have, "the data dir is left at the older minor")

	// Back to the embedded version: the downgrade is cancelled.
	cfg.StorageVersion = ""
	e = etcd.New(cfg)
	stop = start(t, context.Background(), e)
	ready(t, e)
	require.Eventually(t, func() bool { return statusStorage(t, e, files) == etcd.BinaryVersion() }, 30*time.Second, 200*time.Millisecond,
		"the storage returns to %s", etcd.BinaryVersion())
	require.NoError(t, stop())
	have, err = etcd.StorageVersion(cfg.DataDir)
	require.NoError(t, err)
	assert.Equal(t, etcd.BinaryVersion(), have)
}

// statusStorage is the member's storage version as its Status reports it
// (major.minor).
func statusStorage(t *testing.T, e *etcd.Etcd, files *pki.Files) string {
	t.Helper()
	c, err := e.Client(klog.Background(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx, e.ClientURL())
	require.NoError(t, err)
	major, minor, _ := strings.Cut(st.StorageVersion, ".")
	minor, _, _ = strings.Cut(minor, ".")
	if major == "" {
		return ""
	}
	return major + "." + minor
}

// TestStorageVersionConfigErrors: a StorageVersion etcd cannot keep is an
// error before anything is written (not even the data dir).
func TestStorageVersionConfigErrors(t *testing.T) {
	major, minor, _ := strings.Cut(etcd.BinaryVersion(), ".")
	m, _ := strconv.Atoi(minor)
	for _, tc := range []struct{ version, want string }{
		{fmt.Sprintf("%s.%d", major, m+1), "is newer than this etcd"},
		{fmt.Sprintf("%s.%d", major, m-2), "only one minor back"},
		{"x.y", `"x.y" is not an etcd version`},
		{"3", `"3" is not an etcd version`},
		{"3.6-rc", `"3.6-rc" is not an etcd version`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			cfg, _ := newConfig(t)
			cfg.StorageVersion = tc.version
			err := etcd.New(cfg).Run(context.Background())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "Config.StorageVersion")
			assert.Contains(t, err.Error(), tc.want)
			_, statErr := os.Stat(cfg.DataDir)
			assert.True(t, errors.Is(statErr, os.ErrNotExist), "nothing written")
		})
	}
	// The embedded minor itself, with or without a patch, is etcd's own.
	cfg, _ := newConfig(t)
	cfg.StorageVersion = etcd.BinaryVersion() + ".0"
	e := etcd.New(cfg)
	stop := start(t, context.Background(), e)
	ready(t, e)
	require.NoError(t, stop())
}

// TestStorageTooNew: a data dir whose storage is at a newer etcd minor is
// refused before etcd starts, with a *StorageVersionError naming both.
func TestStorageTooNew(t *testing.T) {
	cfg, _ := newConfig(t)
	path := datadir.ToBackendFileName(cfg.DataDir)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	db, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(schema.Meta.Name())
		if err != nil {
			return err
		}
		return b.Put(schema.MetaStorageVersionName, []byte("9.9.0"))
	}))
	require.NoError(t, db.Close())
	have, err := etcd.StorageVersion(cfg.DataDir)
	require.NoError(t, err)
	assert.Equal(t, "9.9", have)

	err = etcd.New(cfg).Run(context.Background())
	var sv *etcd.StorageVersionError
	require.ErrorAs(t, err, &sv)
	assert.Equal(t, &etcd.StorageVersionError{DataDir: cfg.DataDir, Storage: "9.9", Binary: etcd.BinaryVersion()}, sv)
	assert.Contains(t, err.Error(), "is at etcd storage version 9.9; this etcd is "+etcd.BinaryVersion()+" and cannot open it")

	// A data dir an etcd holds open cannot be read within the second.
	held, err := bbolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer held.Close()
	_, err = etcd.StorageVersion(cfg.DataDir)
	assert.ErrorContains(t, err, "reading the storage version of "+cfg.DataDir)
}

// TestSetStorageVersion: settable before Run (what a barrier hook does),
// checked like Config.StorageVersion, refused once Run was called.
func TestSetStorageVersion(t *testing.T) {
	cfg, files := newConfig(t)
	e := etcd.New(cfg)
	assert.ErrorContains(t, e.SetStorageVersion("2.0"), "only one minor back")
	assert.Equal(t, "", e.Config().StorageVersion, "a refused version is not kept")
	require.NoError(t, e.SetStorageVersion(previousMinor(t)))
	assert.Equal(t, previousMinor(t), e.Config().StorageVersion)
	assert.Equal(t, previousMinor(t), e.Renew().(*etcd.Etcd).Config().StorageVersion, "Renew keeps it")
	stop := start(t, context.Background(), e)
	ready(t, e)
	assert.Equal(t, previousMinor(t), statusStorage(t, e, files))
	assert.ErrorContains(t, e.SetStorageVersion(""), "after Run")
	require.NoError(t, stop())
}
