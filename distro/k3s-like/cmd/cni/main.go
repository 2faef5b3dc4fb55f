// Command cni is the node's CNI plugins (internal/cni) in one small
// program, as k3s's: run under a plugin's name (a symlink in the node's
// bin directory), it is that plugin. make build embeds it in k3s-like
// (internal/helpers). `cni --plugins` lists the names.
package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni"
)

func main() {
	name := filepath.Base(os.Args[0])
	if m, ok := cni.Mains()[name]; ok {
		m()
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--plugins" { // the names to link it under (hack/helpers.sh)
		fmt.Println(strings.Join(slices.Sorted(maps.Keys(cni.Mains())), "\n"))
		return
	}
	fmt.Fprintf(os.Stderr, "cni: run as %s: run it under a plugin's name (%s), a symlink to it\n", name, strings.Join(slices.Sorted(maps.Keys(cni.Mains())), ", "))
	os.Exit(2)
}
