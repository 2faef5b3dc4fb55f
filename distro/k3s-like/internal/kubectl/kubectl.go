package kubectl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	basecli "k8s.io/component-base/cli"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"

	// kubectl's client auth plugins (exec, OIDC), as upstream's kubectl main.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// NewCommand is `k3s-like kubectl …`: kubectl built in, as `k3s
// kubectl`. Every argument after "kubectl" is kubectl's, untouched (flag
// parsing is off here): `k3s-like kubectl --help` is kubectl's help.
func NewCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kubectl [kubectl arguments]",
		Short: "Run kubectl; KUBECONFIG defaults to the admin kubeconfig of the default data dir",
		Long: `Run kubectl (the one of the Kubernetes version this binary carries) with
these arguments, as k3s kubectl does: unless --kubeconfig or $KUBECONFIG names
a kubeconfig, KUBECONFIG is the admin kubeconfig of the default data dir
(/var/lib/k3s-like/admin.kubeconfig as root, ~/.k3s-like/admin.kubeconfig
otherwise) when that file exists. Run as "kubectl" (a symlink to this binary),
it is kubectl too. "k3s-like kubectl --help" shows kubectl's help.`,
		DisableFlagParsing: true,
		Run: func(_ *cobra.Command, args []string) {
			Run(args)
		},
	}
}

// CalledAsKubectl reports whether the binary runs as "kubectl" (a symlink
// named kubectl, as k3s's installer makes): then it is kubectl, with
// os.Args[1:] as its arguments.
func CalledAsKubectl() bool { return filepath.Base(os.Args[0]) == "kubectl" }

// Run runs upstream kubectl's command as its own main does (the
// plugin handler for kubectl-* executables on PATH, component-base's
// cli.RunNoErrOutput, kubectl's CheckErr for the message and the exit
// code), after k3s's KUBECONFIG default (k3s's pkg/kubectl). It returns
// only when kubectl succeeded; on failure kubectl exits the process.
func Run(args []string) {
	if kubeconfigArg(args) == "" && os.Getenv("KUBECONFIG") == "" {
		home, _ := os.UserHomeDir()
		config := datadir.AdminKubeconfig(cli.DefaultDataDir(os.Geteuid(), home))
		if _, err := os.Stat(config); err == nil {
			os.Setenv("KUBECONFIG", config)
		}
		if f, err := os.Open(config); os.IsPermission(err) {
			fmt.Fprintf(os.Stderr, "k3s-like: warning: unable to read %s: start the server with --write-kubeconfig-mode (e.g. 0640) to let others read it\n", config)
		} else if err == nil {
			f.Close()
		}
	}
	// kubectl reads its command line from os.Args (the plugin lookup, and
	// cobra without SetArgs): argv as k3s runs it, "kubectl" then the
	// arguments. pflag.CommandLine, which cobra adds to every command, holds
	// this binary's --version: kubectl has no such flag.
	os.Args = append([]string{"kubectl"}, args...)
	pflag.CommandLine = pflag.NewFlagSet("kubectl", pflag.ExitOnError)
	if err := basecli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
}

// kubeconfigArg is the value of the last --kubeconfig among kubectl's
// arguments (--kubeconfig=FILE or --kubeconfig FILE), "" without one.
// Arguments after "--" are a command's (kubectl exec), not kubectl's.
func kubeconfigArg(args []string) string {
	var config string
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
			config = v
		} else if a == "--kubeconfig" && i+1 < len(args) {
			config = args[i+1]
		}
	}
	return config
}
