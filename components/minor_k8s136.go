//go:build k8s1_36

package components

import (
	"k8s.io/client-go/tools/cache"
	kasopts "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	schedopts "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// v1.36's apiserver and scheduler options have no InformerName, and
// upstream registers none for them: the adapter's name is registered and
// released, unused.
func setAPIServerInformerName(*kasopts.ServerRunOptions, *cache.InformerName) {}

// setSchedulerInformerName: see setAPIServerInformerName.
func setSchedulerInformerName(*schedopts.Options, *cache.InformerName) {}
