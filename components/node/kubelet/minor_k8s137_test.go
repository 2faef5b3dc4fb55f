//go:build !k8s1_36

package kubelet_test

// kubeletAlphaNew is an alpha kubelet feature new in this minor (v1.37),
// not available when the process emulates previousMinor.
const (
	kubeletAlphaNew = "KubeletAllocatedPodsEndpoint"
	previousMinor   = "1.36"
)
