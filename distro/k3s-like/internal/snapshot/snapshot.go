package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/robfig/cron/v3"
	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// Defaults, k3s's.
const (
	DefaultSchedule  = "0 */12 * * *"
	DefaultRetention = 5
	// ScheduledName and OnDemandName begin the names of scheduled
	// snapshots and of `etcd-snapshot save`'s.
	ScheduledName = "etcd-snapshot"
	OnDemandName  = "on-demand"
)

// Options are a server's snapshot flags.
type Options struct {
	Dir       string // --etcd-snapshot-dir; "" is DATA_DIR/snapshots
	Schedule  string // --etcd-snapshot-schedule-cron
	Retention int    // --etcd-snapshot-retention
	schedule  cron.Schedule
}

// AddFlags adds the server's snapshot flags to f.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Dir, "etcd-snapshot-dir", "", "Directory of the embedded etcd's snapshots (default DATA_DIR/snapshots)")
	f.StringVar(&o.Schedule, "etcd-snapshot-schedule-cron", DefaultSchedule, "When a member of an embedded etcd cluster takes its snapshots, in cron syntax (minute hour day-of-month month day-of-week)")
	f.IntVar(&o.Retention, "etcd-snapshot-retention", DefaultRetention, "How many of its scheduled snapshots a server keeps; older ones are deleted")
}

// Check parses the schedule and checks the retention.
func (o *Options) Check() error {
	s, err := cron.ParseStandard(o.Schedule)
	if err != nil {
		return fmt.Errorf("--etcd-snapshot-schedule-cron=%s: %v (e.g. %q: every 12 hours)", o.Schedule, err, DefaultSchedule)
	}
	o.schedule = s
	if o.Retention < 1 {
		return fmt.Errorf("--etcd-snapshot-retention=%d: want at least 1", o.Retention)
	}
	return nil
}

// Config is where a server's snapshots go and how they reach its member.
type Config struct {
	DataDir        string
	NodeName       string
	EtcdClientPort int    // the member's client port on loopback; 0 is etcd's default
	Dir            string // "" is DATA_DIR/snapshots
}

// SnapshotDir is c.Dir, or DATA_DIR/snapshots.
func (c Config) SnapshotDir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return datadir.Snapshots(c.DataDir)
}

// Save takes a snapshot of the server's member into
// SnapshotDir()/NAME-NODE-UNIXTIME and verifies it.
func Save(ctx context.Context, log logr.Logger, c Config, name string) (etcd.SnapshotInfo, error) {
	if strings.ContainsAny(name, "/\x00") || name == "" || name == "." || name == ".." {
		return etcd.SnapshotInfo{}, fmt.Errorf("--name=%s: want a file name, without /", name)
	}
	l := datadir.PKI(c.DataDir)
	endpoint := etcd.Config{ClientPort: c.EtcdClientPort}.ClientURL()
	path := filepath.Join(c.SnapshotDir(), fmt.Sprintf("%s-%s-%d", name, c.NodeName, time.Now().Unix()))
	client := l.APIServerEtcdClient()
	return etcd.SaveSnapshot(ctx, log, endpoint, l.EtcdCA().CertFile, client.CertFile, client.KeyFile, path)
}

// Entry is one file of the snapshot directory.
type Entry struct {
	Name    string
	Created time.Time // the file's modification time
	Info    etcd.SnapshotInfo
	Err     error // why it is not a snapshot etcd can restore, if it is not
}

// List lists the snapshot directory, oldest first, each file verified.
func List(dir string) ([]Entry, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		if de.IsDir() || strings.HasSuffix(de.Name(), ".part") {
			continue
		}
		fi, err := de.Info()
		if err != nil {
			continue
		}
		e := Entry{Name: de.Name(), Created: fi.ModTime()}
		e.Info, e.Err = etcd.VerifySnapshot(filepath.Join(dir, de.Name()))
		if e.Err != nil {
			e.Info.Size = fi.Size()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Delete deletes the snapshots names from dir; a name must be a file of
// dir (no path).
func Delete(dir string, names []string) error {
	var errs []error
	for _, n := range names {
		if n != filepath.Base(n) || n == "." || n == ".." {
			errs = append(errs, fmt.Errorf("%s: a snapshot's name, not a path", n))
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Prune deletes the snapshots of dir whose names begin with prefix but
// the newest retention of them, and returns the names deleted.
func Prune(dir, prefix string, retention int) ([]string, error) {
	all, err := List(dir)
	if err != nil {
		return nil, err
	}
	var mine []Entry
	for _, e := range all {
		if strings.HasPrefix(e.Name, prefix) {
			mine = append(mine, e)
		}
	}
	if len(mine) <= retention {
		return nil, nil
	}
	var deleted []string
	for _, e := range mine[:len(mine)-retention] {
		deleted = append(deleted, e.Name)
	}
	return deleted, Delete(dir, deleted)
}

// prefix is the name prefix of node's snapshots named name.
func prefix(name, node string) string { return name + "-" + node + "-" }

// FormatSize is n bytes, as ls -h writes it.
func FormatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
