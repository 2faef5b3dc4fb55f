//go:build k8s1_36

package kubelet_test

// kubeletAlphaNew is an alpha kubelet feature new in this minor (v1.36),
// not available when the process emulates previousMinor.
const (
	kubeletAlphaNew = "CRIListStreaming"
	previousMinor   = "1.35"
)
