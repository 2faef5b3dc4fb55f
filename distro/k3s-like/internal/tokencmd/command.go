// Package tokencmd is `k3s-like token`, k3s's token subcommand: create
// (a bootstrap token for agents that expires) and rotate (a new server
// token, or a new agent token).
package tokencmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// options are the flags of `k3s-like token`.
type options struct {
	dataDir, kubeconfig string
	ttl                 time.Duration
	description         string
	newTokenFile        string
	agentTokenFile      string
	timeout             time.Duration
	// The server's external datastore, as its flags name it.
	datastoreEndpoint, datastoreCA, datastoreCert, datastoreKey string
}

// NewCommand is `k3s-like token`.
func NewCommand() *cobra.Command {
	o := &options{}
	home, _ := os.UserHomeDir()
	root := &cobra.Command{
		Use:   "token",
		Short: "Create bootstrap tokens for agents, rotate the server or agent token",
		Long: `Manage a server's join tokens, as k3s token does. Run it on a server, with its
--data-dir; create and rotate talk to the running server through DATA_DIR's
admin kubeconfig (or --kubeconfig). Tokens are printed or written to files,
never taken from the command line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	pf := root.PersistentFlags()
	pf.StringVarP(&o.dataDir, "data-dir", "d", cli.DefaultDataDir(os.Geteuid(), home), "The server's data dir: its token, CA and admin kubeconfig")
	pf.StringVar(&o.kubeconfig, "kubeconfig", "", "Kubeconfig of the running server (default DATA_DIR/admin.kubeconfig)")
	pf.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long to wait for the server")
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a bootstrap token that joins agents (never servers) until it expires; print it in the full K10<CA hash>::ID.SECRET form",
		Long: `Create a random bootstrap token (a Secret kube-system/bootstrap-token-ID of type
bootstrap.kubernetes.io/token) and print it in the full form, which pins the
cluster CA: K10<sha256 of the server CA>::ID.SECRET. An agent joins with it
(--token-file) until it expires; a server never does. The apiserver refuses
it once expired; delete the Secret to revoke it sooner. Every token expires:
--ttl must be positive (k3s's 0, never, is refused).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.create(cmd.Context(), cmd.OutOrStdout()) },
	}
	create.Flags().DurationVar(&o.ttl, "ttl", 24*time.Hour, "How long the token joins agents (at most 8760h)")
	create.Flags().StringVar(&o.description, "description", "made by k3s-like token create", "The token's description")
	rotate := &cobra.Command{
		Use:   "rotate",
		Short: "Replace the server token (DATA_DIR/token and the sealed PKI record), or with --agent-token-file the agent token",
		Long: `Rotate the server token, as k3s token rotate: the new one (random, or the one in
--new-token-file) seals the cluster's PKI record for joining servers
(kube-system/k3s-like-server-bootstrap; on an external datastore, with
--datastore-endpoint and its TLS files, the record there) in place of the old,
and is written to DATA_DIR/token. Then, as k3s documents: restart this server (its apiserver
reads the join credentials when it starts; if it starts with --token,
--token-file or $K3S_LIKE_TOKEN[_FILE], put the new token there first); stop,
give the new token to, and start every other server; agents keep running, and
those that joined with the server token need the new one before their next
start. Until a server restarts, the old token still joins through it.

With --agent-token-file FILE it rotates the agent token instead: a new random
agent token, in the full K10<CA hash>::node:SECRET form, replaces FILE's (0600).
Give that file to every server (--agent-token-file) and restart each; agents
keep running, and need the new token before their next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.rotate(cmd.Context(), cmd.OutOrStdout()) },
	}
	rotate.Flags().StringVar(&o.newTokenFile, "new-token-file", "", "File holding the new server token (a bare secret, or the full form for this cluster's CA); default a random one")
	rotate.Flags().StringVar(&o.agentTokenFile, "agent-token-file", "", "Rotate the agent token: write a new one to this file (the servers' --agent-token-file)")
	rotate.Flags().StringVar(&o.datastoreEndpoint, "datastore-endpoint", "", "The server's external datastore (its --datastore-endpoint): re-seal the cluster's PKI record there")
	rotate.Flags().StringVar(&o.datastoreCA, "datastore-cafile", "", "CA file of the external datastore")
	rotate.Flags().StringVar(&o.datastoreCert, "datastore-certfile", "", "Client certificate file for the external datastore")
	rotate.Flags().StringVar(&o.datastoreKey, "datastore-keyfile", "", "Client key file for the external datastore")
	root.AddCommand(create, rotate)
	return root
}

// client is the running server's client, and its CA.
func (o *options) client() (kubernetes.Interface, []byte, error) {
	ca, err := os.ReadFile(datadir.PKI(o.dataDir).ServerCA().CertFile)
	if err != nil {
		return nil, nil, fmt.Errorf("the server's CA (is --data-dir=%s a server's?): %w", o.dataDir, err)
	}
	kc := o.kubeconfig
	if kc == "" {
		kc = datadir.AdminKubeconfig(o.dataDir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, nil, fmt.Errorf("--kubeconfig=%s: %w", kc, err)
	}
	cfg.UserAgent = "k3s-like-token"
	c, err := kubernetes.NewForConfig(cfg)
	return c, ca, err
}

func (o *options) create(ctx context.Context, out io.Writer) error {
	client, ca, err := o.client()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	tok, exp, err := cluster.CreateBootstrapToken(ctx, client, o.ttl, o.description, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "A bootstrap token for agents, valid until %s:\n", exp.Format(time.RFC3339))
	_, err = fmt.Fprintln(out, tok.Full(ca))
	return err
}

func (o *options) rotate(ctx context.Context, out io.Writer) error {
	client, ca, err := o.client()
	if err != nil {
		return err
	}
	if o.agentTokenFile != "" {
		if o.newTokenFile != "" {
			return errors.New("--new-token-file and --agent-token-file: rotate one token at a time")
		}
		secret, err := cluster.NewSecret()
		if err != nil {
			return err
		}
		full := cluster.Token{Secret: secret, Kind: cluster.AgentToken}.Full(ca)
		if err := atomicfile.Write(o.agentTokenFile, []byte(full+"\n"), 0o600); err != nil {
			return fmt.Errorf("--agent-token-file=%s: %w", o.agentTokenFile, err)
		}
		_, err = fmt.Fprintf(out, "Wrote a new agent token to %s (0600). Now give that file to every server (--agent-token-file) and restart each: "+
			"the old agent token joins agents until then. Agents keep running; each needs the new token before its next start.\n", o.agentTokenFile)
		return err
	}
	oldTok, _, found, err := cluster.ResolveToken("", "", o.dataDir, func(string) string { return "" })
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%s: no server token: is --data-dir=%s a server's?", cluster.TokenFile(o.dataDir), o.dataDir)
	}
	if o.datastoreEndpoint == "" {
		if _, err := os.Stat(datadir.Etcd(o.dataDir)); err != nil {
			return fmt.Errorf("the server of --data-dir=%s has no embedded etcd (%s): give --datastore-endpoint (and --datastore-cafile, --datastore-certfile, --datastore-keyfile) of its external datastore, whose PKI record is re-sealed", o.dataDir, datadir.Etcd(o.dataDir))
		}
	}
	newTok, err := o.newServerToken(ca)
	if err != nil {
		return err
	}
	if newTok.Secret == oldTok.Secret {
		return errors.New("--new-token-file holds the current server token")
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	what, err := o.reseal(ctx, client, oldTok, newTok)
	if err != nil {
		return err
	}
	if _, err := cluster.WriteTokenFile(o.dataDir, newTok.Full(ca)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "Rotated the server token: %s holds the new one (0600); %s. Now: "+
		"restart this server (if it starts with --token, --token-file or $K3S_LIKE_TOKEN[_FILE], put the new token there first); "+
		"stop every other server, give it the new token (--token-file) and start it; agents keep running, and those that joined with the server token need the new one before their next start. "+
		"Until a server restarts, the old token still joins through it.\n", cluster.TokenFile(o.dataDir), what)
	return err
}

// reseal seals the cluster's PKI record with next in place of old: in the
// external datastore with --datastore-endpoint, otherwise the record
// joining servers of the embedded etcd fetch, if there is one. what says
// which.
func (o *options) reseal(ctx context.Context, client kubernetes.Interface, old, next cluster.Token) (what string, err error) {
	if o.datastoreEndpoint != "" {
		kv, err := bootstrap.Dial(o.datastoreEndpoint, o.datastoreCA, o.datastoreCert, o.datastoreKey)
		if err != nil {
			return "", err
		}
		defer kv.Close()
		found, err := bootstrap.Rotate(ctx, kv, old.Secret, next.Secret)
		if errors.Is(err, bootstrap.ErrWrongToken) {
			return "", fmt.Errorf("the cluster's PKI record in %s does not open with %s: not re-sealing it", o.datastoreEndpoint, cluster.TokenFile(o.dataDir))
		}
		if err != nil {
			return "", err
		}
		if !found {
			return "", fmt.Errorf("--datastore-endpoint=%s holds no cluster PKI record: is it this server's datastore?", o.datastoreEndpoint)
		}
		return "the cluster's PKI record in the datastore is sealed with it", nil
	}
	found, err := cluster.ResealServerRecord(ctx, client, datadir.PKI(o.dataDir).Dir, old, next)
	if err != nil {
		return "", err
	}
	if !found {
		return "no server joined this one's etcd yet: no sealed record to re-seal", nil
	}
	return "kube-system/k3s-like-server-bootstrap is sealed with it", nil
}

// newServerToken is --new-token-file's token, or a random one.
func (o *options) newServerToken(ca []byte) (cluster.Token, error) {
	if o.newTokenFile == "" {
		secret, err := cluster.NewSecret()
		return cluster.Token{Secret: secret, Kind: cluster.ServerToken}, err
	}
	b, err := os.ReadFile(o.newTokenFile)
	if err != nil {
		return cluster.Token{}, fmt.Errorf("--new-token-file: %w", err)
	}
	tok, err := cluster.ParseToken(string(b))
	if err != nil {
		return cluster.Token{}, fmt.Errorf("--new-token-file=%s: %w", o.newTokenFile, err)
	}
	if tok.Kind != "" && tok.Kind != cluster.ServerToken {
		return cluster.Token{}, fmt.Errorf("--new-token-file=%s: a %s token, not a server token", o.newTokenFile, tok.Kind)
	}
	if err := tok.CheckCA(ca); err != nil {
		return cluster.Token{}, fmt.Errorf("--new-token-file=%s: %w", o.newTokenFile, err)
	}
	tok.Kind = cluster.ServerToken
	return tok, nil
}
