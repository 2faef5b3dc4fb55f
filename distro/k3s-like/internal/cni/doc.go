// Package cni holds the CNI plugins the node runs from this binary
// (bridge, host-local, loopback, portmap): the sources of
// github.com/containernetworking/plugins at the version go.mod requires,
// each made an importable package with its main as Main (gen.sh; Apache
// License 2.0, in LICENSE). Mains are their mains by name: cmd/cni is
// the small program containerd runs them from (embedded by make build),
// and a binary built without it runs itself under each plugin's name
// (cmd/k3s-like/multicall.go).
package cni

//go:generate ./gen.sh
