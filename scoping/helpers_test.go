package scoping_test

import (
	"github.com/spf13/pflag"
	basecompat "k8s.io/component-base/compatibility"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// Features of the synthetic kube gate the tests use. The binary is 1.37 and
// may emulate down to 1.34, as kube's rules say.
const (
	AlphaA     = "AlphaA"     // alpha since 1.35, off
	AlphaB     = "AlphaB"     // alpha since 1.35, off
	AlphaC     = "AlphaC"     // alpha since 1.35, off
	BetaOn     = "BetaOn"     // alpha 1.34, beta and on since 1.36: default differs at 1.35
	LockedGA   = "LockedGA"   // GA and locked to true since 1.36
	NewIn137   = "NewIn137"   // alpha since 1.37: not available when emulating 1.36
	NeedsAlpha = "NeedsAlpha" // alpha since 1.35, depends on AlphaA
	NeedsBeta  = "NeedsBeta"  // alpha since 1.35, depends on BetaOn (on by default at 1.37)
)

func testFeatures() map[featuregate.Feature]featuregate.VersionedSpecs {
	v := version.MustParse
	alpha := featuregate.VersionedSpecs{{Version: v("1.35"), Default: false, PreRelease: featuregate.Alpha}}
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		AlphaA:     alpha,
		AlphaB:     alpha,
		AlphaC:     alpha,
		NeedsAlpha: alpha,
		NeedsBeta:  alpha,
		BetaOn: {
			{Version: v("1.34"), Default: false, PreRelease: featuregate.Alpha},
			{Version: v("1.36"), Default: true, PreRelease: featuregate.Beta},
		},
		LockedGA: {
			{Version: v("1.33"), Default: false, PreRelease: featuregate.Beta},
			{Version: v("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
		},
		NewIn137: {{Version: v("1.37"), Default: false, PreRelease: featuregate.Alpha}},
	}
}

var newEffectiveVersion = scopingtest.NewEffectiveVersion

// newTarget builds a hermetic stand-in for the process-wide gate and registry.
func newTarget(tb testing.TB, features map[featuregate.Feature]featuregate.VersionedSpecs) scoping.Target {
	tb.Helper()
	target, err := scopingtest.NewTarget(features)
	require.NoError(tb, err)
	if _, ok := features[NeedsAlpha]; ok {
		addDependencies(tb, target.Gate, map[featuregate.Feature][]featuregate.Feature{NeedsAlpha: {AlphaA}, NeedsBeta: {BetaOn}})
	}
	return target
}

// addComponentFlags adds what an upstream component's options add: the
// registry's flags and component-base's logging flags, bound to the
// component's own logging configuration.
func addComponentFlags(s *scoping.Scope) {
	s.AddFlags()
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), s.FlagSet())
}

// parseAll creates and parses one scope per component, in order.
func parseAll(tb testing.TB, b *scoping.Barrier, args map[string][]string, order ...string) map[string]*scoping.Scope {
	tb.Helper()
	out := map[string]*scoping.Scope{}
	for _, name := range order {
		s, err := b.NewScope(name)
		require.NoError(tb, err)
		addComponentFlags(s)
		require.NoError(tb, s.Parse(args[name]), "parse %s", name)
		out[name] = s
	}
	return out
}

// gateState reads every feature of a gate: the view a component would see.
func gateState(g featuregate.FeatureGate, features map[featuregate.Feature]featuregate.VersionedSpecs) map[string]bool {
	out := map[string]bool{}
	for name := range features {
		out[string(name)] = g.Enabled(name)
	}
	return out
}

func fg(items ...string) string { return "--feature-gates=" + strings.Join(items, ",") }

// enabledOnly keeps the features that are on.
func enabledOnly(m map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		if v {
			out[k] = v
		}
	}
	return out
}

// dependencyGate is a gate with feature dependencies: component-base v0.35
// and later (the core module supports v0.34 to v0.37).
type dependencyGate interface {
	AddDependencies(map[featuregate.Feature][]featuregate.Feature) error
}

// addDependencies adds deps where the gate has dependencies; it reports
// whether it did.
func addDependencies(tb testing.TB, g featuregate.MutableVersionedFeatureGate, deps map[featuregate.Feature][]featuregate.Feature) bool {
	tb.Helper()
	dg, ok := g.(dependencyGate)
	if ok {
		require.NoError(tb, dg.AddDependencies(deps))
	}
	return ok
}

// requireDependencies skips a test about feature dependencies on a
// component-base minor without them (v0.34).
func requireDependencies(t *testing.T) {
	t.Helper()
	var g featuregate.MutableVersionedFeatureGate = featuregate.NewVersionedFeatureGate(version.MustParse("1.37"))
	if _, ok := g.(dependencyGate); !ok {
		t.Skip("component-base v0.34: feature gates have no dependencies")
	}
}

// requireMinCompatibilityFlag skips a test of --min-compatibility-version on
// a component-base minor whose registry does not have the flag (v0.34).
func requireMinCompatibilityFlag(t *testing.T) {
	t.Helper()
	fs := pflag.NewFlagSet("probe", pflag.ContinueOnError)
	basecompat.NewComponentGlobalsRegistry().AddFlags(fs)
	if fs.Lookup("min-compatibility-version") == nil {
		t.Skip("component-base v0.34: no --min-compatibility-version")
	}
}

// usesMinCompatibility reports whether any argument sets --min-compatibility-version.
func usesMinCompatibility(args ...[]string) bool {
	for _, a := range args {
		for _, arg := range a {
			if strings.HasPrefix(arg, "--min-compatibility-version") {
				return true
			}
		}
	}
	return false
}
