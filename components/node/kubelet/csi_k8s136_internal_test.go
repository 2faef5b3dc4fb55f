//go:build k8s1_36

package kubelet

import "k8s.io/kubernetes/pkg/volume/csi"

// deregisterCSIDriver is what the kubelet's plugin watcher calls when a
// CSI driver's registration socket goes away (v1.36: no context).
func deregisterCSIDriver(name string) { csi.PluginHandler.DeRegisterPlugin(name, "") }
