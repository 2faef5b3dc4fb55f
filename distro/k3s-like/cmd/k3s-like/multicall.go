package main

import (
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// The binary is also what its node runs, as k3s's is. make build embeds
// containerd, its runc shim and the CNI plugins as small programs of their
// own (internal/helpers, cmd/cni). A binary built without them (go build
// ./cmd/k3s-like, for development) is them itself: `k3s-like containerd …`
// is containerd, and under the name containerd-shim-runc-v2 the binary is
// containerd's runc shim (runtime_personality.go); in every build, under
// bridge, host-local, loopback or portmap it is that CNI plugin, by
// symlinks to it in the node's bin directory.

// personalityEnv marks a re-executed shim: the shim starts its daemon by
// running os.Executable() — the binary's real path, not the symlink's name
// — with its own arguments.
const personalityEnv = "K3S_LIKE_PERSONALITY"

// personalities are the programs the binary is besides k3s-like, by the
// names the node runs them under (node.ShimName, node.CNIPlugins).
func personalities() map[string]func() {
	m := cni.Mains()
	addRuntimePersonalities(m)
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
