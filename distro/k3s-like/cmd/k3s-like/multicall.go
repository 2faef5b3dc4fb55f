package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/plugin"
	"github.com/containerd/plugin/registry"

	// containerd's built-in plugins, the CRI among them, and the runc
	// shim's task service: both register into containerd's one plugin
	// registry at init (see keepPlugins).
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2/task/plugin"
	_ "github.com/containerd/containerd/v2/cmd/containerd/builtins"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// The binary is also the node's container runtime, as k3s's is: run as
// `k3s-like containerd …` it is containerd (the node's Runtime component
// starts it so, as a child). Its shim and CNI plugins are small programs
// of their own, embedded by make build (internal/helpers, cmd/cni); a
// binary built without them (go build ./cmd/k3s-like, for development) is
// them too: under the name containerd-shim-runc-v2 it is containerd's
// runc shim, under bridge, host-local, loopback or portmap that CNI
// plugin, by symlinks to it in the node's bin directory.

// personalityEnv marks a re-executed shim: the shim starts its daemon by
// running os.Executable() — the binary's real path, not the symlink's name
// — with its own arguments.
const personalityEnv = "K3S_LIKE_PERSONALITY"

// personalities are the programs the binary is besides k3s-like, by the
// names the node runs them under (node.ShimName, node.CNIPlugins).
func personalities() map[string]func() {
	m := cni.Mains()
	m[node.ShimName] = shimMain
	return m
}

// runPersonality runs the program the binary was started as, if it is not
// k3s-like itself, and reports whether it did (it does not return then
// unless the program does).
func runPersonality() bool {
	if p := os.Getenv(personalityEnv); p != "" {
		if f, ok := personalities()[p]; ok {
			f()
			return true
		}
	}
	if f, ok := personalities()[filepath.Base(os.Args[0])]; ok {
		f()
		return true
	}
	if len(os.Args) > 1 && os.Args[1] == node.ContainerdCommand {
		os.Args = os.Args[1:]
		containerdMain()
		return true
	}
	return false
}

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
