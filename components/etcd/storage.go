package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/coreos/go-semver/semver"
	"go.etcd.io/bbolt"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/storage/datadir"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
)

// BinaryVersion is the minor of the etcd this package embeds ("3.7"): the
// newest storage version it can open.
func BinaryVersion() string { return minorOf(*semver.New(version.Version)) }

func minorOf(v semver.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// parseMinor parses "3.6" (or "3.6.0") into major.minor.
func parseMinor(s string) (semver.Version, error) {
	var major, minor int64
	var rest string
	if n, _ := fmt.Sscanf(s+" ", "%d.%d%s", &major, &minor, &rest); n < 2 || (rest != "" && rest[0] != '.') {
		return semver.Version{}, fmt.Errorf("%q is not an etcd version (major.minor, e.g. 3.6)", s)
	}
	return semver.Version{Major: major, Minor: minor}, nil
}

// StorageVersion returns the storage version recorded in the etcd data dir
// dir (Config.DataDir) as major.minor ("3.6"): the oldest etcd minor that
// can open it. It returns "" when dir holds no etcd data yet, or data from
// before etcd 3.6 (which records none). It opens the backend read-only and
// fails if an etcd holds it open for more than a second.
func StorageVersion(dir string) (string, error) {
	path := datadir.ToBackendFileName(dir)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	db, err := bbolt.Open(path, 0o400, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return "", fmt.Errorf("etcd: reading the storage version of %s: %w", dir, err)
	}
	defer db.Close()
	var v *semver.Version
	if err := db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(schema.Meta.Name()) == nil {
			return nil
		}
		v = schema.ReadStorageVersionFromSnapshot(tx)
		return nil
	}); err != nil {
		return "", fmt.Errorf("etcd: reading the storage version of %s: %w", dir, err)
	}
	if v == nil {
		return "", nil
	}
	return minorOf(*v), nil
}

// StorageVersionError is returned by Run when the data dir's storage is at
// a newer etcd minor than the one embedded: etcd cannot open it without its
// downgrade procedure (run the newer etcd on it with Config.StorageVersion
// set to this one's, stop it, then start this one).
//
//	etcd: the data dir /var/lib/k3s-like/etcd is at etcd storage version 3.7; this etcd is 3.6 and cannot open it: run etcd 3.7 on it with the storage version kept at 3.6 (etcd's downgrade) first
type StorageVersionError struct {
	// DataDir is Config.DataDir.
	DataDir string
	// Storage is the data dir's storage version, Binary this etcd's minor.
	Storage, Binary string
}

func (e *StorageVersionError) Error() string {
	return fmt.Sprintf("etcd: the data dir %s is at etcd storage version %s; this etcd is %s and cannot open it: run etcd %s on it with the storage version kept at %s (etcd's downgrade) first",
		e.DataDir, e.Storage, e.Binary, e.Storage, e.Binary)
}

// checkStorage refuses, before etcd starts, a data dir it cannot open.
func (c Config) checkStorage() error {
	have, err := StorageVersion(c.DataDir)
	if err != nil || have == "" {
		return err
	}
	hv, err := parseMinor(have)
	if err != nil {
		return err
	}
	bin := *semver.New(version.Version)
	if bin.Major < hv.Major || (bin.Major == hv.Major && bin.Minor < hv.Minor) {
		return &StorageVersionError{DataDir: c.DataDir, Storage: have, Binary: BinaryVersion()}
	}
	return nil
}

// storageTarget returns the storage version Config.StorageVersion asks
// for, nil when it is this etcd's own (or empty).
func (c Config) storageTarget() (*semver.Version, error) {
	if c.StorageVersion == "" {
		return nil, nil
	}
	t, err := parseMinor(c.StorageVersion)
	if err != nil {
		return nil, fmt.Errorf("etcd: Config.StorageVersion: %w", err)
	}
	bin := *semver.New(version.Version)
	bin = semver.Version{Major: bin.Major, Minor: bin.Minor}
	switch {
	case t.Equal(bin):
		return nil, nil
	case bin.LessThan(t):
		return nil, fmt.Errorf("etcd: Config.StorageVersion %s is newer than this etcd (%s)", c.StorageVersion, minorOf(bin))
	case t.Major != bin.Major || t.Minor != bin.Minor-1:
		return nil, fmt.Errorf("etcd: Config.StorageVersion %s: etcd %s can keep its storage only one minor back (%d.%d)", c.StorageVersion, minorOf(bin), bin.Major, bin.Minor-1)
	}
	return &t, nil
}

// settleStorage runs once the member serves clients, before Ready: with a
// target (Config.StorageVersion one minor back), it enables etcd's
// downgrade to it as soon as the cluster version has risen above it, and
// waits until the member reports the target storage version; without one,
// it cancels a downgrade an earlier run left enabled, unless that
// downgrade's target is this etcd's own minor (etcd finishes that one
// itself). It polls every 100 ms until ctx ends.
func settleStorage(ctx context.Context, logger klog.Logger, s *etcdserver.EtcdServer, target *semver.Version) error {
	if target == nil {
		info := s.DowngradeInfo()
		if info == nil || !info.Enabled {
			return nil
		}
		if tv := info.GetTargetVersion(); tv != nil && minorOf(*tv) == BinaryVersion() {
			return nil
		}
		logger.Info("Cancelling the etcd downgrade an earlier run enabled", "target", info.TargetVersion)
		_, err := s.Downgrade(ctx, &pb.DowngradeRequest{Action: pb.DowngradeRequest_CANCEL})
		if err != nil && s.DowngradeInfo().Enabled {
			return fmt.Errorf("etcd: cancelling the downgrade to %s: %w", info.TargetVersion, err)
		}
		return nil
	}
	want := minorOf(*target)
	enabled := false
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.StopNotify():
			return false, errors.New("etcd: the server stopped while keeping the storage version")
		default:
		}
		info := s.DowngradeInfo()
		downgrading := info != nil && info.Enabled
		if downgrading {
			if tv := info.GetTargetVersion(); tv == nil || minorOf(*tv) != want {
				return false, fmt.Errorf("etcd: a downgrade to %s is in progress, not to %s", info.TargetVersion, want)
			}
			if sv := s.StorageVersion(); sv != nil && minorOf(*sv) == want {
				return true, nil
			}
			return false, nil
		}
		cv := s.ClusterVersion()
		if cv == nil || !target.LessThan(semver.Version{Major: cv.Major, Minor: cv.Minor}) {
			// Not decided yet, or still at the target: etcd raises the
			// cluster version to the member's within a few seconds; the
			// downgrade can be enabled only from above.
			return false, nil
		}
		if enabled {
			return false, errors.New("etcd: the downgrade was enabled, then disabled by someone else")
		}
		logger.Info("Keeping the etcd storage at an older version (etcd's downgrade)", "storageVersion", want, "clusterVersion", minorOf(*cv))
		if _, err := s.Downgrade(ctx, &pb.DowngradeRequest{Action: pb.DowngradeRequest_ENABLE, Version: want + ".0"}); err != nil {
			return false, fmt.Errorf("etcd: enabling the downgrade to %s: %w", want, err)
		}
		enabled = true
		return false, nil
	})
}

// storageVersionOf is s's storage version as major.minor, "" if unknown.
func storageVersionOf(s *etcdserver.EtcdServer) string {
	if v := s.StorageVersion(); v != nil {
		return minorOf(*v)
	}
	return ""
}
