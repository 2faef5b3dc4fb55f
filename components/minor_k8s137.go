//go:build !k8s1_36

package components

// Upstream differences between the Kubernetes minors the adapters build
// against live in these two files, selected by the build tag k8s1_36 (set by
// make K8S_MINOR=1.36 with components/go.k8s-1.36.mod); without it, v1.37.

import (
	"k8s.io/client-go/tools/cache"
	kasopts "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	schedopts "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// setAPIServerInformerName gives v1.37's apiserver options the adapter's
// informer name (released when Run returns), instead of the one upstream's
// app.Run registers and never releases.
func setAPIServerInformerName(o *kasopts.ServerRunOptions, n *cache.InformerName) {
	o.InformerName = n
}

// setSchedulerInformerName does the same for v1.37's scheduler options.
func setSchedulerInformerName(o *schedopts.Options, n *cache.InformerName) {
	o.InformerName = n
}
