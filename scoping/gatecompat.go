package scoping

import (
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// The core module supports k8s.io/component-base v0.34 to v0.37 (go.mod
// requires the oldest, so a distro keeps its own minor). The one API
// difference it uses lives here: from v0.35 on, a feature gate has a
// min-compatibility version besides its emulation version
// (SetEmulationVersionAndMinCompatibilityVersion, MinCompatibilityVersion);
// v0.34's gate has only SetEmulationVersion. It is detected on the gate
// itself, not by a build tag, so a consumer on any of the four minors
// builds this package as it is, with no flag to remember.
type minCompatGate interface {
	SetEmulationVersionAndMinCompatibilityVersion(emulation, minCompatibility *version.Version) error
	MinCompatibilityVersion() *version.Version
}

// setGateVersions sets a gate's emulation version and, where the gate has
// one (v0.35+), its min-compatibility version.
func setGateVersions(g featuregate.MutableVersionedFeatureGate, emulation, minCompatibility *version.Version) error {
	if mg, ok := g.(minCompatGate); ok {
		return mg.SetEmulationVersionAndMinCompatibilityVersion(emulation, minCompatibility)
	}
	return g.SetEmulationVersion(emulation)
}

// sameGateVersions reports whether two gates are at the same versions.
func sameGateVersions(a, b featuregate.MutableVersionedFeatureGate) bool {
	if !a.EmulationVersion().EqualTo(b.EmulationVersion()) {
		return false
	}
	ma, okA := a.(minCompatGate)
	mb, okB := b.(minCompatGate)
	return !okA || !okB || ma.MinCompatibilityVersion().EqualTo(mb.MinCompatibilityVersion())
}
