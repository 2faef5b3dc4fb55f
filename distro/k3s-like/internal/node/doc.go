// Package node is a k3s-like node, on a server or an agent: its flags
// (Options), its components' arguments and the harness components.
//
//	Config.Args    // the kubelet's and kube-proxy's: components/node's defaults,
//	               // the logging and feature-gate shorthands, --kubelet-arg, --kube-proxy-arg
//	Config.Add     // containerd (the embedded helper program; built without helpers,
//	               // `k3s-like containerd`; none with --container-runtime-endpoint),
//	               // the kubelet, kube-proxy, the CNI
//	               // configuration writer, the feature reporter
//	after the barrier: PrepareRuntime
//	               // containerd's config.toml, the registry mirrors (registries.yaml),
//	               // containerd, the shim and CNI plugins: DATA_DIR/agent/bin, a link to the embedded
//	               // helpers unpacked into DATA_DIR/data/HASH/bin (internal/helpers), or,
//	               // built without them, the binary under their names
//	after the stop: AfterStop
//	               // unmount what the kubelet and containerd mounted; with
//	               // --cleanup-on-stop, remove the host rules
//
// Its files are under DATA_DIR/agent; its sockets under /run/k3s-like/HASH
// (a unix socket's path is short). ShimName, ContainerdCommand and
// CNIPlugins are the names cmd/k3s-like dispatches on.
package node
