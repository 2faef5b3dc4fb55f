//go:build k8s1_38

package components

import (
	"k8s.io/component-base/featuregate"
	featuremetrics "k8s.io/component-base/metrics/prometheus/feature"
)

// addFeatureMetrics records the kubernetes_feature_enabled metric of every
// gate of g. From 1.38 the gate takes the recorder (component-base no longer
// imports its metrics package from featuregate).
func addFeatureMetrics(g featuregate.MutableVersionedFeatureGate) {
	g.AddMetrics(featuremetrics.RecordFeatureInfo)
}
