package snapshot

import (
	"context"
	"time"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/harness"
)

// ScheduledComponentName is the scheduled snapshots' harness component.
const ScheduledComponentName = "etcd-snapshots"

// Scheduled is the harness component that takes the server's snapshots on
// o's schedule (Check parsed it) and keeps o.Retention of them; a
// snapshot that fails is logged, and the next one is taken on schedule.
// It is ready at once.
func (o *Options) Scheduled(c Config) harness.Component {
	sched := o.schedule
	retention := o.Retention
	return &harness.Func{
		ComponentName: ScheduledComponentName,
		RunFunc: func(ctx context.Context) error {
			log := cli.Logger().WithName(ScheduledComponentName)
			if sched == nil {
				return nil
			}
			for {
				next := sched.Next(time.Now())
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Until(next)):
				}
				started := time.Now()
				info, err := Save(ctx, log, c, ScheduledName)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					log.Error(err, "Scheduled etcd snapshot failed")
					continue
				}
				log.Info("Saved a scheduled etcd snapshot", "path", info.Path, "size", info.Size, "revision", info.Revision, "took", time.Since(started).Round(time.Millisecond))
				deleted, err := Prune(c.SnapshotDir(), prefix(ScheduledName, c.NodeName), retention)
				if err != nil {
					log.Error(err, "Pruning the scheduled etcd snapshots")
				} else if len(deleted) > 0 {
					log.Info("Pruned scheduled etcd snapshots", "deleted", deleted, "retention", retention)
				}
			}
		},
	}
}
