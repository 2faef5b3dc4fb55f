//go:build k8s1_36 && !embedhelpers

package main

import (
	"context"

	shimmanager "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/manager"
	ctrdcmd "github.com/containerd/containerd/v2/cmd/containerd/command"
	"github.com/containerd/containerd/v2/pkg/shim"
)

// runContainerd runs containerd's command (urfave/cli v2).
func runContainerd(args []string) error { return ctrdcmd.App().Run(args) }

// runShim runs the shim (v2.2: Run).
func runShim(ctx context.Context) { shim.Run(ctx, shimmanager.NewShimManager(runcRuntime)) }
