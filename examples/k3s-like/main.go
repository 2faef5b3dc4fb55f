// Command k3s-like is the reference single binary of kubeharness: a real
// Kubernetes control plane — embedded etcd, kube-apiserver, kube-scheduler,
// kube-controller-manager, TLS and RBAC — in one process, with k3s's flag
// conventions. Each component gets its own flags and feature gates; a
// conflict between them is an error before anything listens.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "k3s-like",
		Short:         "A single-binary Kubernetes control plane built on kubeharness",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCommand(), newFeaturesCommand())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "k3s-like:", err)
		os.Exit(1)
	}
}
