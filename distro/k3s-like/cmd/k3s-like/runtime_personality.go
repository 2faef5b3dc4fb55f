//go:build !embedhelpers

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"

	// containerd's built-in plugins, the CRI among them, and the runc
	// shim's task service: both register into containerd's one plugin
	// registry at init (see keepPlugins).
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// addRuntimePersonalities adds the runc shim to m.
func addRuntimePersonalities(m map[string]func()) { m[node.ShimName] = shimMain }

// containerdMain is containerd's main, with the shim's plugin left out.
func containerdMain() {
	keepPlugins(func(uri string) bool { return uri != shimTaskPlugin })
	if err := runContainerd(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "containerd:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// shimMain is the runc shim's main, with only its own plugin.
func shimMain() {
	os.Setenv(personalityEnv, node.ShimName)
	keepPlugins(func(uri string) bool { return uri == shimTaskPlugin })
	runShim(context.Background())
	os.Exit(0)
}

// runcRuntime is the runtime the shim serves.
const runcRuntime = "io.containerd.runc.v2"

// shimTaskPlugin is the runc shim's task service plugin.
const shimTaskPlugin = "io.containerd.ttrpc.v1.task"

// keepPlugins keeps in containerd's plugin registry only the plugins keep
// accepts: containerd's built-ins and the shim's task service all register
// at init, and a shim initialises every registered plugin (it would try
// to start containerd's metadata store and CRI, and fail).
func keepPlugins(keep func(uri string) bool) {
	regs := registry.Graph(func(r *plugin.Registration) bool { return !keep(r.URI()) })
	registry.Reset()
	for i := range regs {
		registry.Register(&regs[i])
	}
}
