package snapshot

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
)

// commandOptions are the flags of `k3s-like etcd-snapshot`.
type commandOptions struct {
	Config
	name      string
	retention int
	timeout   time.Duration
}

func (o *commandOptions) addFlags(f *pflag.FlagSet) {
	home, _ := os.UserHomeDir()
	hostname, _ := os.Hostname()
	f.StringVarP(&o.DataDir, "data-dir", "d", cli.DefaultDataDir(os.Geteuid(), home), "The server's data dir: its etcd client certificate, and DATA_DIR/snapshots")
	f.StringVar(&o.Dir, "etcd-snapshot-dir", "", "Directory of the snapshots (default DATA_DIR/snapshots)")
	f.StringVar(&o.NodeName, "node-name", hostname, "The server's node name, in the snapshots' names")
	f.IntVar(&o.EtcdClientPort, "etcd-client-port", etcd.DefaultClientPort, "The server's etcd client port (loopback)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Minute, "How long save may take")
}

// NewCommand is `k3s-like etcd-snapshot`, k3s's: save, ls, delete, prune.
func NewCommand() *cobra.Command {
	o := &commandOptions{}
	root := &cobra.Command{
		Use:   "etcd-snapshot",
		Short: "Save, list, delete and prune snapshots of a server's embedded etcd",
		Long: `Save, list, delete and prune snapshots of a running server's embedded etcd,
as k3s etcd-snapshot does. A snapshot is etcd's: the database and its sha256,
which ls and a restore (k3s-like server --cluster-reset
--cluster-reset-restore-path=FILE) verify. It holds the datastore only: the
server's PKI (DATA_DIR/tls) and token are not in it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	o.addFlags(root.PersistentFlags())
	save := &cobra.Command{
		Use:   "save",
		Short: "Take a snapshot of the server's etcd member now: --etcd-snapshot-dir/NAME-NODE-UNIXTIME",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			started := time.Now()
			info, err := Save(ctx, cli.Logger(), o.Config, o.name)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Saved %s: %s (%d bytes), revision %d, %d keys, in %s\n",
				info.Path, FormatSize(info.Size), info.Size, info.Revision, info.Keys, time.Since(started).Round(time.Millisecond))
			return err
		},
	}
	save.Flags().StringVar(&o.name, "name", OnDemandName, "The snapshot's name, before -NODE-UNIXTIME")
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the snapshots, verified: name, size, revision, creation time",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			entries, err := List(o.SnapshotDir())
			if err != nil {
				return err
			}
			return writeList(cmd.OutOrStdout(), o.SnapshotDir(), entries)
		},
	}
	del := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete snapshots by name",
		Args:  cobra.MinimumNArgs(1),
		RunE:  func(_ *cobra.Command, args []string) error { return Delete(o.SnapshotDir(), args) },
	}
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Delete this node's snapshots of --name but the newest --snapshot-retention",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.retention < 1 {
				return fmt.Errorf("--snapshot-retention=%d: want at least 1", o.retention)
			}
			deleted, err := Prune(o.SnapshotDir(), prefix(o.name, o.NodeName), o.retention)
			for _, d := range deleted {
				fmt.Fprintln(cmd.OutOrStdout(), "Deleted", d)
			}
			return err
		},
	}
	prune.Flags().StringVar(&o.name, "name", OnDemandName, "Which snapshots: those named NAME-NODE-*")
	prune.Flags().IntVar(&o.retention, "snapshot-retention", DefaultRetention, "How many to keep")
	root.AddCommand(save, ls, del, prune)
	return root
}

func writeList(w io.Writer, dir string, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tREVISION\tCREATED\tLOCATION")
	var bad []error
	for _, e := range entries {
		rev := fmt.Sprint(e.Info.Revision)
		if e.Err != nil {
			rev = "INVALID"
			bad = append(bad, e.Err)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", e.Name, e.Info.Size, rev, e.Created.UTC().Format(time.RFC3339), dir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, err := range bad {
		fmt.Fprintln(w, "#", err)
	}
	return nil
}
