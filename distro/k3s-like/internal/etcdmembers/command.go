package etcdmembers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// Member is one line of `k3s-like etcd-members`.
type Member struct {
	Name       string   `json:"name"`
	ID         string   `json:"id"`
	Status     string   `json:"status"` // voter, learner, or unstarted (added, not yet started)
	Leader     bool     `json:"leader"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
}

// NewCommand is `k3s-like etcd-members`: the member list of a server's
// embedded etcd, as etcdctl member list shows it, and which is the leader.
func NewCommand() *cobra.Command {
	var (
		dataDir, output string
		port            int
		timeout         time.Duration
	)
	cmd := &cobra.Command{
		Use:   "etcd-members",
		Short: "List the members of a running server's embedded etcd (etcdctl member list), and which one leads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output=%s: want table or json", output)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			members, err := List(ctx, dataDir, port)
			if err != nil {
				return err
			}
			return write(cmd.OutOrStdout(), output, members)
		},
	}
	home, _ := os.UserHomeDir()
	f := cmd.Flags()
	f.StringVarP(&dataDir, "data-dir", "d", cli.DefaultDataDir(os.Geteuid(), home), "The server's data dir: its etcd client certificate")
	f.IntVar(&port, "etcd-client-port", etcd.DefaultClientPort, "The server's etcd client port (loopback)")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.DurationVar(&timeout, "timeout", 15*time.Second, "How long to wait for the member")
	return cmd
}

// List lists the members through the server's local member.
func List(ctx context.Context, dataDir string, port int) ([]Member, error) {
	l := datadir.PKI(dataDir)
	client := l.APIServerEtcdClient()
	tlsInfo := transport.TLSInfo{CertFile: client.CertFile, KeyFile: client.KeyFile, TrustedCAFile: l.EtcdCA().CertFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("the server's etcd client certificate in %s: %w", l.Dir, err)
	}
	endpoint := etcd.Config{ClientPort: port}.ClientURL()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: nopLogger()})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	resp, err := c.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the members through %s: %w", endpoint, err)
	}
	st, err := c.Status(ctx, endpoint)
	if err != nil {
		return nil, fmt.Errorf("the status of %s: %w", endpoint, err)
	}
	var out []Member
	for _, m := range resp.Members {
		status := "voter"
		switch {
		case m.Name == "":
			status = "unstarted"
		case m.IsLearner:
			status = "learner"
		}
		out = append(out, Member{Name: m.Name, ID: fmt.Sprintf("%x", m.ID), Status: status, Leader: m.ID == st.Leader, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs})
	}
	return out, nil
}

func write(w io.Writer, output string, members []Member) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(members)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tID\tSTATUS\tLEADER\tPEER URLS\tCLIENT URLS")
	for _, m := range members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\t%s\n", m.Name, m.ID, m.Status, m.Leader, strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","))
	}
	return tw.Flush()
}
