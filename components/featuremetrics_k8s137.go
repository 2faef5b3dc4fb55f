//go:build !k8s1_38

package components

import "k8s.io/component-base/featuregate"

// addFeatureMetrics records the kubernetes_feature_enabled metric of every
// gate of g (1.36 and 1.37: the gate records it itself).
func addFeatureMetrics(g featuregate.MutableVersionedFeatureGate) { g.AddMetrics() }
