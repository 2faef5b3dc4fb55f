//go:build embedhelpers

package main

import (
	"fmt"
	"os"
)

// addRuntimePersonalities adds nothing: containerd and its shim are
// embedded helper programs of their own (internal/helpers).
func addRuntimePersonalities(map[string]func()) {}

// containerdMain refuses: this build's node runs the embedded containerd.
func containerdMain() {
	fmt.Fprintln(os.Stderr, "k3s-like containerd: this build runs containerd as the helper program it embeds (DATA_DIR/agent/bin/containerd); a build without -tags embedhelpers is containerd itself")
	os.Exit(1)
}
