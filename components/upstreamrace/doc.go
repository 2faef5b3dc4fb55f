// Package upstreamrace holds, as tests only, the reproductions of the
// upstream clobbering with the real commands of k8s.io/kubernetes v1.37.2 —
// kube-scheduler's and kube-controller-manager's cobra commands and
// kube-apiserver's flag set, built in one process the way k3s builds them —
// and beside each the same through the harness with the real adapters. The
// registry-level reproductions, including the data race under -race, are in
// the core module's race/ (see race/README.md).
package upstreamrace
