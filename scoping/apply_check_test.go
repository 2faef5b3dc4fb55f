package scoping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// TestApplySkipsTheCheckOnlyWhenTheGateIsUnchanged: Apply validates the plan
// on a copy of the process gate unless the gate still has the features,
// specs and dependencies the barrier was made from. Values and versions set
// on it in between do not count (Apply replaces them); a new feature, an
// overridden default or a new dependency does, and then the plan is
// checked again (all-or-nothing: TestApply's "process gate changed since
// reconcile").
func TestApplySkipsTheCheckOnlyWhenTheGateIsUnchanged(t *testing.T) {
	fresh := func(t *testing.T) (*scoping.Barrier, scoping.Target) {
		target := newTarget(t, testFeatures())
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		return b, target
	}
	b, target := fresh(t)
	assert.True(t, b.TargetUnchanged())
	require.NoError(t, target.Gate.SetFromMap(map[string]bool{AlphaC: true}))
	require.NoError(t, scoping.SetGateVersions(target.Gate, version.MustParse("1.36"), version.MustParse("1.35")))
	assert.True(t, b.TargetUnchanged(), "values and versions do not count")

	b, target = fresh(t)
	require.NoError(t, target.Gate.Add(map[featuregate.Feature]featuregate.FeatureSpec{"NewOne": {Default: false, PreRelease: featuregate.Alpha}}))
	assert.False(t, b.TargetUnchanged(), "a new feature")

	b, target = fresh(t)
	require.NoError(t, target.Gate.OverrideDefault(AlphaB, true))
	assert.False(t, b.TargetUnchanged(), "an overridden default")

	b, target = fresh(t)
	if addDependencies(t, target.Gate, map[featuregate.Feature][]featuregate.Feature{AlphaA: {AlphaB}}) {
		assert.False(t, b.TargetUnchanged(), "a new dependency")
	}

	// Applied on an unchanged gate: the same result as with the check.
	b, target = fresh(t)
	parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true"), "--emulated-version=1.36"}}, apiserver)
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.NoError(t, target.Gate.SetFromMap(map[string]bool{AlphaC: true})) // set outside, reset by Apply
	require.True(t, b.TargetUnchanged())
	require.NoError(t, b.Apply(plan))
	assert.True(t, target.Gate.Enabled(AlphaA))
	assert.False(t, target.Gate.ExplicitlySet(AlphaC), "Apply reset what was set outside")
	assert.Equal(t, "1.36", target.Gate.EmulationVersion().String())
}
