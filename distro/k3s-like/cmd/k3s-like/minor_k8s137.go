//go:build !k8s1_36 && !embedhelpers

package main

// containerd's API differs between the versions each Kubernetes minor is
// built with (go.mod: containerd v2.4 for v1.37; go.k8s-1.36.mod: v2.2 for
// v1.36, whose dependencies it shares): these two files, selected by the
// build tag k8s1_36, hold what differs.

import (
	"context"

	shimmanager "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	ctrdcmd "github.com/containerd/containerd/v2/cmd/containerd/command"
	"github.com/containerd/containerd/v2/pkg/shim"
)

// runContainerd runs containerd's command (urfave/cli v3: with a context).
func runContainerd(args []string) error { return ctrdcmd.App().Run(context.Background(), args) }

// runShim runs the shim (v2.3+: RunShim).
func runShim(ctx context.Context) { shim.RunShim(ctx, shimmanager.NewShimManager(runcRuntime)) }
