// Package scopingtest builds hermetic stand-ins for the process-wide kube
// feature gate and compatibility registry, so that tests of code built on
// scoping and harness never touch the real process-wide state.
package scopingtest

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// BinaryVersion is the kube binary version the stand-ins claim; kube's rules
// let it emulate down to three minors below.
const BinaryVersion = "1.37"

// NewEffectiveVersion is a fresh kube effective version at BinaryVersion with
// kube's floor (binary-3).
func NewEffectiveVersion() basecompat.MutableEffectiveVersion {
	return basecompat.NewEffectiveVersionFromString(BinaryVersion, "1.34", "1.34")
}

// AlphaFeatures returns alpha features (since 1.35, off by default) with the
// given names.
func AlphaFeatures(names ...string) map[featuregate.Feature]featuregate.VersionedSpecs {
	out := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for _, n := range names {
		out[featuregate.Feature(n)] = featuregate.VersionedSpecs{{Version: version.MustParse("1.35"), PreRelease: featuregate.Alpha}}
	}
	return out
}

// NewTarget returns a scoping.Target with a fresh gate holding features and a
// fresh registry with that gate registered as "kube". ApplyLogging is nil.
func NewTarget(features map[featuregate.Feature]featuregate.VersionedSpecs) (scoping.Target, error) {
	gate := featuregate.NewVersionedFeatureGate(version.MustParse(BinaryVersion))
	if err := gate.AddVersioned(features); err != nil {
		return scoping.Target{}, fmt.Errorf("scopingtest: %w", err)
	}
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(scoping.KubeComponent, NewEffectiveVersion(), gate); err != nil {
		return scoping.Target{}, fmt.Errorf("scopingtest: %w", err)
	}
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: NewEffectiveVersion}, nil
}
