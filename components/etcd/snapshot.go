package etcd

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientsnapshot "go.etcd.io/etcd/client/v3/snapshot"
	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"k8s.io/klog/v2"
)

// SnapshotInfo describes a snapshot file: what etcd's snapshot status
// reports, and the file's size.
type SnapshotInfo struct {
	Path     string
	Size     int64  // the file's size, in bytes
	Revision int64  // the etcd revision it holds
	Keys     int    // its number of keys
	Hash     uint32 // etcd's hash of its contents (crc32 Castagnoli)
	Version  string // the storage version of the etcd that wrote it
}

// SnapshotError is a snapshot file that is not one etcd can restore, found
// before anything is written: truncated, corrupt, or not a snapshot.
//
//	etcd: snapshot /var/lib/k3s-like/snapshots/s1: no sha256 at its end (12345 bytes, not 32 more than a multiple of 512): truncated, or not an etcd snapshot
type SnapshotError struct {
	Path    string
	Problem string
}

func (e *SnapshotError) Error() string {
	return fmt.Sprintf("etcd: snapshot %s: %s", e.Path, e.Problem)
}

// SaveSnapshot streams a snapshot of the member at endpoint (a client URL,
// one member's) into path, authenticated by the client certificate
// certFile and keyFile and trusting caFile, and verifies it
// (VerifySnapshot). The file appears at path only once it is complete
// and synced (etcd's client writes path.part, then renames it); etcd
// appends the sha256 of the rest, which VerifySnapshot and a restore
// check.
func SaveSnapshot(ctx context.Context, logger klog.Logger, endpoint, caFile, certFile, keyFile, path string) (SnapshotInfo, error) {
	tlsInfo := transport.TLSInfo{CertFile: certFile, KeyFile: keyFile, TrustedCAFile: caFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd: client TLS: %w", err)
	}
	zl, err := NewZapLogger(logger.WithName(Name+"-snapshot"), "warn")
	if err != nil {
		return SnapshotInfo{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd: snapshot directory: %w", err)
	}
	cfg := clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 10 * time.Second}
	if _, err := clientsnapshot.SaveWithVersion(ctx, zl, cfg, path); err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd: saving a snapshot of %s to %s: %w", endpoint, path, err)
	}
	return VerifySnapshot(path)
}

// VerifySnapshot checks the snapshot file at path as a restore would,
// reading it only: the sha256 etcd appends to a snapshot matches the rest
// (a truncated or altered file does not), and the database in it passes
// bbolt's consistency check. It returns what the snapshot holds, or a
// *SnapshotError.
func VerifySnapshot(path string) (SnapshotInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd: snapshot: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd: snapshot: %w", err)
	}
	bad := func(format string, a ...any) error {
		return &SnapshotError{Path: path, Problem: fmt.Sprintf(format, a...)}
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		return SnapshotInfo{}, bad("not a regular file")
	}
	// etcd's rule (etcdutl's hasChecksum): a snapshot is a bbolt file
	// (pages of at least 512 bytes) and 32 bytes of sha256.
	if size < 512+sha256.Size || size%512 != sha256.Size {
		return SnapshotInfo{}, bad("no sha256 at its end (%d bytes, not 32 more than a multiple of 512): truncated, or not an etcd snapshot", size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return SnapshotInfo{}, bad("reading: %v", err)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return SnapshotInfo{}, bad("reading its sha256: %v", err)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return SnapshotInfo{}, bad("its contents do not match the sha256 at its end (%x, recorded %x): corrupt", got, want)
	}
	st2, err := etcdutlsnapshot.NewV3(nopZap()).Status(path)
	if err != nil {
		return SnapshotInfo{}, bad("%v", err)
	}
	return SnapshotInfo{Path: path, Size: size, Revision: st2.Revision, Keys: st2.TotalKey, Hash: st2.Hash, Version: st2.Version}, nil
}

// RestoreSnapshot replaces the member in c.DataDir with one restored from
// the snapshot at path: the only member of a new cluster (c.MemberName at
// c.PeerURL()), as etcd's snapshot restore makes it, its revisions bumped
// by a billion and marked compacted so that clients that watched the old
// data list again instead of waiting for revisions that will not come
// back. Nothing of c.DataDir is touched before the snapshot has been
// verified (VerifySnapshot) and restored, complete, next to it; then the
// current data dir is renamed DATA_DIR-old-UNIXTIME (returned; "" if there
// was none) and the restored one takes its place.
func RestoreSnapshot(logger klog.Logger, c Config, path string) (old string, err error) {
	if _, err := VerifySnapshot(path); err != nil {
		return "", err
	}
	tmp := c.DataDir + ".restoring"
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("etcd: restoring: %w", err)
	}
	zl, err := NewZapLogger(logger.WithName(Name+"-restore"), "warn")
	if err != nil {
		return "", err
	}
	name := c.memberName()
	err = etcdutlsnapshot.NewV3(zl).Restore(etcdutlsnapshot.RestoreConfig{
		SnapshotPath:        path,
		Name:                name,
		OutputDataDir:       tmp,
		PeerURLs:            []string{c.PeerURL()},
		InitialCluster:      name + "=" + c.PeerURL(),
		InitialClusterToken: "etcd-cluster", // embed's default
		RevisionBump:        1_000_000_000,
		MarkCompacted:       true,
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("etcd: restoring %s (the data dir %s is untouched): %w", path, c.DataDir, err)
	}
	if err := os.Chmod(tmp, 0o700); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("etcd: restoring: %w", err)
	}
	if _, err := os.Stat(c.DataDir); err == nil {
		old = fmt.Sprintf("%s-old-%d", c.DataDir, time.Now().Unix())
		if err := os.Rename(c.DataDir, old); err != nil {
			_ = os.RemoveAll(tmp)
			return "", fmt.Errorf("etcd: moving the data dir aside before the restore (it is untouched): %w", err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("etcd: restoring: %w", err)
	}
	if err := os.Rename(tmp, c.DataDir); err != nil {
		return old, fmt.Errorf("etcd: putting the restored data dir in place (the former one is %s): %w", old, err)
	}
	return old, nil
}

// ResetCluster makes the member in c.DataDir the only member of a new
// cluster, with its data (etcd's --force-new-cluster; k3s's
// --cluster-reset): it starts the member so, waits until it serves, and
// stops it. The other members of the former cluster are not in the new
// one: their data dirs must be cleared before they join it again.
func ResetCluster(ctx context.Context, c Config) error {
	if !HasMember(c.DataDir) {
		return fmt.Errorf("etcd: resetting the cluster: the data dir %s holds no member", c.DataDir)
	}
	c.forceNewCluster = true
	if c.Cluster != nil {
		cl := *c.Cluster
		cl.Join = nil
		c.Cluster = &cl
	}
	e := New(c)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	select {
	case <-e.ready.Done():
		cancel()
		return <-done
	case err := <-done:
		if err == nil {
			err = ctx.Err()
		}
		return fmt.Errorf("etcd: resetting the cluster in %s: %w", c.DataDir, err)
	}
}
