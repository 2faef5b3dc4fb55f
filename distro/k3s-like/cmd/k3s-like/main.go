// Command k3s-like is the reference single binary of kubeharness: a real
// Kubernetes control plane — embedded etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, TLS and RBAC — and a node (the kubelet,
// kube-proxy, containerd) in one process, with k3s's flag conventions.
// Each component gets its own flags and feature gates; a conflict between
// them is an error before anything listens.
//
// This package is the command tree and the multi-call dispatch; the
// commands live in the distro's internal packages.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"

	// Before any package that calls kubectl's i18n.T at init: kubectl's
	// catalogs load only in a process that runs kubectl.
	_ "github.com/kubeharness/kubeharness/distro/k3s-like/internal/kubectli18n"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/agent"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/etcdmembers"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/features"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/kubectl"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/secretsencrypt"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/server"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/snapshot"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/tokencmd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/top"
)

func main() {
	if runPersonality() {
		return
	}
	if kubectl.CalledAsKubectl() {
		kubectl.Run(os.Args[1:])
		return
	}
	cli.UseVersionFlag()
	root := &cobra.Command{
		Use:           "k3s-like",
		Short:         "A single-binary Kubernetes control plane built on kubeharness",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Without a subcommand: the help, or the version (see cli.VersionRequested).
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return cli.VersionRequested(cmd)
		},
	}
	root.AddCommand(server.NewCommand(), agent.NewCommand(), features.NewCommand(), features.NewUpgradePlanCommand(), kubectl.NewCommand(), top.NewCommand(), snapshot.NewCommand(), etcdmembers.NewCommand(), secretsencrypt.NewCommand(), tokencmd.NewCommand())
	logs.InitLogs() // Go's log package writes through klog: one log stream
	err := root.Execute()
	logs.FlushLogs()
	if errors.As(err, new(cli.VersionPrinted)) {
		return
	}
	var code cli.ExitCode
	if errors.As(err, &code) {
		os.Exit(int(code))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "k3s-like:", err)
		os.Exit(1)
	}
}
