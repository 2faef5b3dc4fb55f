// Package names holds the harness component names of the adapters in this
// module, so that a package that only needs a name (featurepub,
// controlplane) does not import the adapters and, with them,
// k8s.io/kubernetes.
package names

// The component names, each the upstream binary's.
const (
	// APIServer is the kube-apiserver adapter's (components.APIServer).
	APIServer = "kube-apiserver"
	// Scheduler is the kube-scheduler adapter's (components.Scheduler).
	Scheduler = "kube-scheduler"
	// ControllerManager is the kube-controller-manager adapter's
	// (components.ControllerManager).
	ControllerManager = "kube-controller-manager"
	// Etcd is the embedded etcd's (etcd.Etcd).
	Etcd = "etcd"
	// Kubelet is the kubelet adapter's (kubelet.Kubelet, in node/kubelet).
	Kubelet = "kubelet"
	// KubeProxy is the kube-proxy adapter's (proxy.KubeProxy, in node/proxy).
	KubeProxy = "kube-proxy"
	// Containerd is the node's container runtime child's (runtime.Runtime,
	// in node/runtime).
	Containerd = "containerd"
	// Flannel is the node's pod network's (flannel.Flannel).
	Flannel = "flannel"
)
