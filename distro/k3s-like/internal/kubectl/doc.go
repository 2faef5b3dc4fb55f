// Package kubectl is `k3s-like kubectl …`, and the binary run under the
// name kubectl: upstream's kubectl of the binary's Kubernetes version, as
// `k3s kubectl`, its arguments untouched, KUBECONFIG defaulting to the
// admin kubeconfig of the default data dir.
package kubectl
