// Package proxy runs the real kube-proxy of k8s.io/kubernetes as a harness
// component (KubeProxy), beside the kubelet.
//
//	h.Add(kubelet.New(), kubeletArgs, components.APIServerName)
//	h.Add(proxy.New(), proxyArgs, kubelet.Name)
//
// AddFlags adds kube-proxy's flags to its scope; Complete reads only its
// --config file's feature gates, as kube-proxy's requests for the
// barrier. Run, after the barrier, checks its ports, waits for its Node to
// have an address (package node), then runs upstream's Complete, Validate
// and Run; Ready waits for its /healthz (its rules synced once).
//
// A process starts its kube-proxy once (harness.Once): upstream's runs
// informers on wait.NeverStop and a sync loop that never ends, and exits
// the process when its Node is deleted or changes address. Like the
// kubelet it has no --emulated-version. Its default flags, and the
// cleanup of the host rules it leaves (--cleanup is refused), are in
// package node.
package proxy
