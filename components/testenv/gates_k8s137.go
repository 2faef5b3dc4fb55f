//go:build !k8s1_36

package testenv

// KubeletGate is an alpha kubelet feature gate new in the minor the tests
// are built with (v1.37: KubeletAllocatedPodsEndpoint, the kubelet's
// /allocatedPods endpoint), off by default: what k3s#11937's agents could
// not turn on.
const KubeletGate = "KubeletAllocatedPodsEndpoint"
