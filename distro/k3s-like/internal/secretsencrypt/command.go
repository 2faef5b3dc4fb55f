package secretsencrypt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// commandOptions are the flags of `k3s-like secrets-encrypt`.
type commandOptions struct {
	dataDir    string
	kubeconfig string
	provider   string
	timeout    time.Duration
}

func (o *commandOptions) client() (kubernetes.Interface, error) {
	path := o.kubeconfig
	if path == "" {
		path = datadir.AdminKubeconfig(o.dataDir)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig=%s: %w", path, err)
	}
	cfg.UserAgent = "k3s-like-secrets-encrypt"
	return kubernetes.NewForConfig(cfg)
}

// NewCommand is `k3s-like secrets-encrypt`, k3s's status and rotate-keys.
func NewCommand() *cobra.Command {
	o := &commandOptions{}
	root := &cobra.Command{
		Use:   "secrets-encrypt",
		Short: "Show and rotate the key that encrypts Secrets at rest (server --secrets-encryption)",
		Long: `Show and rotate the key kube-apiserver encrypts Secrets with in the datastore, as
k3s secrets-encrypt does. Run it on the server, as the user that runs it: it
reads and rewrites DATA_DIR/cred/encryption-config.json, which kube-apiserver
reloads (about once a minute), and reaches kube-apiserver with the admin
kubeconfig.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	home, _ := os.UserHomeDir()
	f := root.PersistentFlags()
	f.StringVarP(&o.dataDir, "data-dir", "d", cli.DefaultDataDir(os.Geteuid(), home), "The server's data dir: DATA_DIR/cred/encryption-config.json, DATA_DIR/admin.kubeconfig")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "An admin's kubeconfig (default DATA_DIR/admin.kubeconfig)")
	status := &cobra.Command{
		Use:   "status",
		Short: "Print whether Secrets are encrypted, the provider, the active and the inactive keys (names only), whether a rotation stopped half way, and whether kube-apiserver loaded the config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			return o.status(ctx, cmd.OutOrStdout())
		},
	}
	rotate := &cobra.Command{
		Use:   "rotate-keys",
		Short: "Add a new key first, wait until kube-apiserver loaded it, rewrite every Secret with it, then drop the old keys; run again after a failure, it finishes the rotation",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			return o.rotate(ctx, cmd.OutOrStdout())
		},
	}
	rotate.Flags().StringVar(&o.provider, "secrets-encryption-provider", "", "The new key's provider, "+strings.Join(Providers(), " or ")+" (default the active key's): a different one migrates every Secret to it")
	rotate.Flags().DurationVar(&o.timeout, "timeout", 10*time.Minute, "How long the rotation may take (kube-apiserver reloads the config about once a minute, twice per rotation)")
	root.AddCommand(status, rotate)
	return root
}

func (o *commandOptions) rotate(ctx context.Context, stdout io.Writer) error {
	if o.provider != "" && !slices.Contains(Providers(), o.provider) {
		return fmt.Errorf("--secrets-encryption-provider=%s: want one of %s", o.provider, strings.Join(Providers(), ", "))
	}
	path := datadir.EncryptionConfig(o.dataDir)
	if _, err := Load(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("secrets-encrypt rotate-keys: no %s: start the server with --secrets-encryption first", path)
	} else if err != nil {
		return err
	}
	c, err := o.client()
	if err != nil {
		return err
	}
	res, err := Rotation{Path: path, Provider: o.provider, Cluster: KubeCluster{Client: c}, Now: time.Now, Log: cli.Logger().WithName("secrets-encrypt")}.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Active key: %s\nDropped keys: %s\nSecrets rewritten: %d\n", res.Active, strings.Join(res.Dropped, ", "), res.Secrets)
	return nil
}

func (o *commandOptions) status(ctx context.Context, stdout io.Writer) error {
	path := datadir.EncryptionConfig(o.dataDir)
	c, err := Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stdout, "Encryption Status: Disabled (no %s: start the server with --secrets-encryption)\n", path)
		return nil
	}
	if err != nil {
		return err
	}
	var inactive []string
	for _, k := range c.Keys()[1:] {
		inactive = append(inactive, k.Name)
	}
	stage := "finished"
	if len(inactive) > 0 {
		stage = fmt.Sprintf("unfinished (%d keys): run secrets-encrypt rotate-keys to finish it", len(inactive)+1)
	}
	fmt.Fprintf(stdout, "Encryption Status: Enabled\nConfig: %s\nProvider: %s\nActive Key: %s\nInactive Keys: %s\nRotation: %s\n",
		path, c.Providers[0].Type, c.Active().Name, strings.Join(inactive, ", "), stage)
	hash, err := FileHash(path)
	if err != nil {
		return err
	}
	loaded := "unknown"
	if client, err := o.client(); err != nil {
		loaded += " (" + err.Error() + ")"
	} else if hashes, err := (KubeCluster{Client: client}).LoadedHashes(ctx); err != nil {
		loaded += " (" + err.Error() + ")"
	} else if slices.Contains(hashes, hash) {
		loaded = "yes"
	} else {
		loaded = fmt.Sprintf("not yet (it reports %s; the file is %s)", strings.Join(hashes, ", "), hash)
	}
	fmt.Fprintf(stdout, "Loaded by kube-apiserver: %s\n", loaded)
	return nil
}
