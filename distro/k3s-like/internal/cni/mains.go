package cni

import (
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni/bridge"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni/hostlocal"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni/loopback"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cni/portmap"
)

// Mains are the plugins' mains, by the name the node runs each under
// (cmd/cni, and the k3s-like binary's personalities).
func Mains() map[string]func() {
	return map[string]func(){
		"bridge":     bridge.Main,
		"host-local": hostlocal.Main,
		"loopback":   loopback.Main,
		"portmap":    portmap.Main,
	}
}
