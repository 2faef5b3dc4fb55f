package cli

import (
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// Options are the flags `k3s-like server` and `k3s-like agent` share,
// declared once, with one help text each.
type Options struct {
	// Command is "server" or "agent": the command whose flags a config
	// file's keys are; only a server reads DATA_DIR/token.
	Command      string
	ConfigFile   string
	DataDir      string
	NodeName     string
	Token        string
	TokenFile    string
	ProtectFiles bool // a token or config file open to group or others is an error, not a warning
	Logging      Logging
	StopTimeout  time.Duration
}

// Server and Agent are the values of Options.Command.
const (
	Server = "server"
	Agent  = "agent"
)

// NewCommand is the command o.Command ("server" or "agent") with the
// shared flags: it takes no arguments and, before run, loads the config
// file (Load). The caller adds its own flags.
func (o *Options) NewCommand(short string, run func(cmd *cobra.Command) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   o.Command,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Load(cmd.Flags(), cmd.ErrOrStderr(), os.Getenv); err != nil {
				return err
			}
			return run(cmd)
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

// AddFlags adds the shared flags to f.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	home, _ := os.UserHomeDir()
	hostname, _ := os.Hostname()
	f.StringVarP(&o.ConfigFile, "config", "c", "", "Config file: keys are these flags' long names, repeatable flags are lists, FILE.d/*.yaml drop-ins are merged after it in lexical order (key+: appends), the command line overrides them (default "+DefaultConfigFile+" if it exists; also $K3S_LIKE_CONFIG_FILE)")
	f.StringVarP(&o.DataDir, "data-dir", "d", DefaultDataDir(os.Geteuid(), home), "Folder for the state: certificates, keys, kubeconfigs and the token, a server's embedded etcd data, the node's containerd images and kubelet directory under agent/ (as k3s: /var/lib/k3s-like as root, ~/.k3s-like otherwise)")
	f.StringVar(&o.NodeName, "node-name", hostname, "The node's name, and a server's identity: its entry in the Feature objects' status.servers (default the hostname)")
	f.StringVarP(&o.Token, "token", "t", "", "The cluster's token: the full K10…::server:… form of a server's DATA_DIR/token, which also pins the cluster CA (an agent needs it), or for a server on an external datastore a bare secret (the first server stores the cluster PKI in the datastore encrypted with it, the others fetch it; without any token, the first server generates one into DATA_DIR/token). Visible to every local user in the process's arguments: prefer --token-file. Also $K3S_LIKE_TOKEN")
	f.StringVar(&o.TokenFile, "token-file", "", "File holding the cluster's token: a server's DATA_DIR/token, which the first server writes (the full token, 0600). Also $K3S_LIKE_TOKEN_FILE")
	f.BoolVar(&o.ProtectFiles, "protect-files", false, "Refuse to start, instead of warning, when a file holding the token (--token-file, $K3S_LIKE_TOKEN_FILE, a server's DATA_DIR/token, a config file that sets token) is readable or writable by group or others, or a config file is writable by them; or such a file is owned by a user other than root and the process's, or is in a directory group or others may write or such a user owns")
	o.Logging.AddFlags(f)
	f.DurationVar(&o.StopTimeout, "stop-timeout", 8*time.Second, "How long each component may take to stop")
}

// Load applies the config file and its drop-ins (--config, else
// $K3S_LIKE_CONFIG_FILE, else DefaultConfigFile if it exists) to the flags
// of f the command line did not set, then checks the modes of the files
// the command takes flags and its token from (CheckFileModes).
func (o *Options) Load(f *pflag.FlagSet, stderr io.Writer, getenv func(string) string) error {
	files, err := ConfigFiles(o.ConfigFile, getenv)
	if err != nil {
		return err
	}
	if err := ApplyConfig(f, o.Command, files); err != nil {
		return err
	}
	return o.CheckFileModes(stderr, files, getenv)
}

// CheckFileModes checks, once the config files are merged and before the
// command writes anything or listens (a server's --dry-run too), the files
// it takes flags and its token from: group or others may write none of
// them, nor read a config file that sets token or the token file, and
// each is owned by root or the process's user, in a directory only they
// may write (checkFileModes); a warning each, or with --protect-files an
// error. A config file without the
// token is not a secret (k3s's config.yaml is commonly 0644, and the same
// flags are in every process listing), so warning about reading it would
// be noise.
func (o *Options) CheckFileModes(stderr io.Writer, configFiles []string, getenv func(string) string) error {
	files := append(configFilesToCheck(configFiles), tokenFileToCheck(o.Token, o.TokenFile, o.tokenDataDir(), getenv)...)
	return checkFileModes(stderr, o.ProtectFiles, files)
}

// ResolveToken finds the token, first of: --token, --token-file,
// $K3S_LIKE_TOKEN, $K3S_LIKE_TOKEN_FILE and, on a server, DATA_DIR/token
// (cluster.ResolveToken).
func (o *Options) ResolveToken(getenv func(string) string) (tok cluster.Token, source string, found bool, err error) {
	return cluster.ResolveToken(o.Token, o.TokenFile, o.tokenDataDir(), getenv)
}

// tokenDataDir is the data dir whose token file is a token source: a
// server's; "" for an agent, which never reads DATA_DIR/token.
func (o *Options) tokenDataDir() string {
	if o.Command == Server {
		return o.DataDir
	}
	return ""
}
