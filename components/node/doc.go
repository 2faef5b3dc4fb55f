// Package node is what a distro sets up around the node's components: the
// kubelet's and kube-proxy's default flags for a node of the control
// plane's PKI (DefaultKubeletFlags, DefaultKubeProxyFlags, CgroupV1), the
// wait for a Node's address or pod CIDR (WaitForNode, HasAddress,
// HasPodCIDR), and the cleanup of the host rules both leave once stopped
// (CleanupProxyRules, CleanupKubeletRules).
//
// The node's components themselves are in the packages below it:
//   - kubelet: the kubelet adapter (kubelet.Kubelet);
//   - proxy: the kube-proxy adapter (proxy.KubeProxy);
//   - runtime: containerd as a child process of the binary
//     (runtime.Runtime);
//   - sandboxes: the removal of a node's pod sandboxes through the CRI;
//   - proctree: /proc's process tree, for what the runtime leaves.
//
// A node in the server's process:
//
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(runtime.New(runtimeConfig), nil)
//	h.Add(kubelet.New(), kubeletArgs, components.APIServerName, runtime.Name)
//	h.Add(proxy.New(), proxyArgs, kubelet.Name)
//	err := h.Run(ctx)
//	node.CleanupProxyRules(ctx) // once stopped, if the distro cleans up
//
// They are apart from package components so that a binary that runs only
// the control plane links none of the kubelet (cAdvisor's global flags,
// its init-time side effects). The approver of the kubelets' serving
// certificates runs on the servers: package approvers.
package node
