package scoping

import (
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// SetGateVersions is setGateVersions, for the tests that restore the
// process gate on any supported component-base minor.
var SetGateVersions = setGateVersions

// GateMinCompatibilityVersion is the gate's min-compatibility version, or
// nil on component-base v0.34, whose gates have none.
func GateMinCompatibilityVersion(g featuregate.MutableVersionedFeatureGate) *version.Version {
	if mg, ok := g.(minCompatGate); ok {
		return mg.MinCompatibilityVersion()
	}
	return nil
}

// TargetUnchanged is targetUnchanged, for the test of when Apply skips its
// validation copy.
func (b *Barrier) TargetUnchanged() bool { return b.targetUnchanged() }

// The upstream messages of upstream_strings.go, for TestUpstreamStrings.
const (
	UpstreamMinCompatibilityInvalid = upstreamMinCompatibilityInvalid
	UpstreamLoggingChanged          = upstreamLoggingChanged
)
