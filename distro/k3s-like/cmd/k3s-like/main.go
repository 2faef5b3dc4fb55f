// Command k3s-like is the reference single binary of kubeharness: a real
// Kubernetes control plane — embedded etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, TLS and RBAC — in one process, with k3s's flag
// conventions. Each component gets its own flags and feature gates; a
// conflict between them is an error before anything listens.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"

	// Before any package that calls kubectl's i18n.T at init: kubectl's
	// catalogs load only in a process that runs kubectl.
	_ "github.com/kubeharness/kubeharness/examples/k3s-like/internal/kubectli18n"
)

func main() {
	if runPersonality() {
		return
	}
	if calledAsKubectl() {
		runKubectl(os.Args[1:])
		return
	}
	useVersionFlag()
	root := &cobra.Command{
		Use:           "k3s-like",
		Short:         "A single-binary Kubernetes control plane built on kubeharness",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand: the help, or the version (see versionRequested).
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return versionRequested(cmd)
		},
	}
	root.AddCommand(newServerCommand(), newAgentCommand(), newFeaturesCommand(), newUpgradePlanCommand(), newKubectlCommand(), newTopCommand())
	logs.InitLogs() // Go's log package writes through klog: one log stream
	err := root.Execute()
	logs.FlushLogs()
	if errors.As(err, new(versionPrinted)) {
		return
	}
	var code exitCode
	if errors.As(err, &code) {
		os.Exit(int(code))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k3s-like:", err)
		os.Exit(1)
	}
}

// exitCode ends the process with that status and no message: the command
// printed what it had to say (upgrade-plan's 3: something changes).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
