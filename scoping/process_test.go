package scoping_test

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	genericfeatures "k8s.io/apiserver/pkg/features"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/scoping"
)

// restoreProcessGlobals puts the process gate and the process registry's kube
// effective version back as they were when the test ends. Only the tests in
// this file touch process-wide state; they must not run in parallel.
func restoreProcessGlobals(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate
	ev := scoping.ProcessTarget().Registry.EffectiveVersionFor(scoping.KubeComponent)
	emu, minCompat := gate.EmulationVersion(), scoping.GateMinCompatibilityVersion(gate)
	evEmu, evMin := ev.EmulationVersion(), ev.MinCompatibilityVersion()
	explicit := map[featuregate.Feature]bool{}
	for name := range gate.GetAllVersioned() {
		explicit[name] = gate.ExplicitlySet(name)
	}
	t.Cleanup(func() {
		for name, was := range explicit {
			if !was && gate.ExplicitlySet(name) {
				require.NoError(t, gate.ResetFeatureValueToDefault(name))
			}
		}
		require.NoError(t, scoping.SetGateVersions(gate, emu, minCompat))
		mev := ev.(interface {
			SetEmulationVersion(*version.Version)
			SetMinCompatibilityVersion(*version.Version)
		})
		mev.SetEmulationVersion(evEmu)
		mev.SetMinCompatibilityVersion(evMin)
	})
}

// TestProcessTarget applies to the real process-wide state upstream reads:
// utilfeature.DefaultMutableFeatureGate and
// compatibility.DefaultComponentGlobalsRegistry's "kube" effective version.
// It restores both when it ends.
func TestProcessTarget(t *testing.T) {
	restoreProcessGlobals(t)
	target := scoping.ProcessTarget()
	target.ApplyLogging = nil // logsapi applies once per process: TestApplyLoggingSettings does it
	require.Same(t, apiservercompat.DefaultComponentGlobalsRegistry, target.Registry)
	b, err := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	// Two real apiserver alpha gates, one per component.
	one, two := genericfeatures.APIServingWithRoutine, genericfeatures.CBORServingAndStorage
	require.False(t, utilfeature.DefaultFeatureGate.Enabled(one))
	require.False(t, utilfeature.DefaultFeatureGate.Enabled(two))
	for name, f := range map[string]featuregate.Feature{"kube-apiserver": one, "kube-scheduler": two} {
		s, err := b.NewScope(name)
		require.NoError(t, err)
		s.AddFlags()
		require.NoError(t, s.Parse([]string{"--feature-gates=" + string(f) + "=true"}))
	}
	assert.False(t, utilfeature.DefaultFeatureGate.Enabled(one), "parsing does not touch the process gate")
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.NoError(t, b.Apply(plan))
	assert.True(t, utilfeature.DefaultFeatureGate.Enabled(one))
	assert.True(t, utilfeature.DefaultFeatureGate.Enabled(two))
	assert.Equal(t, plan.EmulationVersion, apiservercompat.DefaultComponentGlobalsRegistry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion().String())
}

// TestApplyLoggingSettings applies logging through logsapi, which applies
// it once per process: this is the one test that does. A later start with
// the same settings is a no-op; other settings are an error naming the
// difference (logsapi's diff), matched here so that an upstream change of
// its message fails this test.
func TestApplyLoggingSettings(t *testing.T) {
	require.Error(t, scoping.ApplyLoggingSettings(scoping.LoggingSettings{"v": "many"}, utilfeature.DefaultFeatureGate), "bad value is reported before anything is applied")
	require.NoError(t, scoping.ApplyLoggingSettings(scoping.LoggingSettings{"v": "0", "logging-format": "text"}, utilfeature.DefaultFeatureGate))
	require.NoError(t, scoping.ApplyLoggingSettings(scoping.LoggingSettings{"v": "0", "logging-format": "text"}, utilfeature.DefaultFeatureGate), "the same settings again: a no-op")
	require.NoError(t, scoping.ApplyLoggingSettings(scoping.LoggingSettings{}, utilfeature.DefaultFeatureGate), "the defaults are the same settings")
	err := scoping.ApplyLoggingSettings(scoping.LoggingSettings{"v": "3"}, utilfeature.DefaultFeatureGate)
	require.ErrorIs(t, err, scoping.ErrLoggingChanged)
	assert.ErrorContains(t, err, `+  "verbosity": 3`, "logsapi's diff names the field")
	assert.False(t, klog.V(1).Enabled(), "-v was not changed")

	// Through the barrier: the error names the flag and the component.
	restoreProcessGlobals(t)
	b, err := scoping.NewBarrier(scoping.ProcessTarget(), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope("kube-scheduler")
	require.NoError(t, err)
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), s.FlagSet())
	require.NoError(t, s.Parse([]string{"--v=3"}))
	plan, err := b.Reconcile()
	require.NoError(t, err)
	err = b.Apply(plan)
	var le *scoping.LoggingError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, scoping.ErrLoggingChanged)
	assert.ErrorContains(t, err, "scoping: applying logging settings --v=3 (kube-scheduler): logging was applied earlier in this process with other settings")
	assert.False(t, b.Applied())
}

// A binary that applied logging itself: ApplyLogging nil, the barrier does
// not touch logsapi, and says that the components' logging flags take no
// effect.
func TestProcessTargetWithoutLogging(t *testing.T) {
	restoreProcessGlobals(t)
	target := scoping.ProcessTarget()
	target.ApplyLogging = nil
	b, err := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope("kube-scheduler")
	require.NoError(t, err)
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), s.FlagSet())
	require.NoError(t, s.Parse([]string{"--v=7"}))
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.NoError(t, b.Apply(plan), "no 'logging changed' error: logsapi is not called")
	require.Len(t, plan.Warnings, 1)
	assert.Contains(t, plan.Warnings[0], "--v=7 (kube-scheduler) take no effect")
	assert.False(t, klog.V(7).Enabled())
}
