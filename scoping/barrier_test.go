package scoping_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

func TestMain(m *testing.M) {
	// klog's flush daemon is started once per process by logsapi.ValidateAndApply
	// (TestProcessTargetAppliesLoggingOnce) and never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

const (
	apiserver = "kube-apiserver"
	scheduler = "kube-scheduler"
	kcm       = "kube-controller-manager"
)

var k3s = []string{apiserver, scheduler, kcm}

func TestReconcile(t *testing.T) {
	features := testFeatures()
	tests := []struct {
		name string
		args map[string][]string
		// want: enabled state of features after apply (others at default)
		want map[string]bool
		// wantConflicts: setting → components named, in order
		wantConflicts map[string][]string
		wantEmulation string
		wantMinCompat string
		wantLogging   scoping.LoggingSettings
		wantWarning   bool
		// needsDependencies: only where gates have feature dependencies (v0.35+).
		needsDependencies bool
	}{{
		name: "k3s#11853: disjoint gates in three components are all applied",
		args: map[string][]string{
			apiserver: {fg("AlphaA=true")},
			scheduler: {fg("AlphaB=true")},
			kcm:       {fg("AlphaC=true")},
		},
		want:          map[string]bool{AlphaA: true, AlphaB: true, AlphaC: true, BetaOn: true, LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
	}, {
		name: "same value from several components is fine, kube: prefix or not",
		args: map[string][]string{
			apiserver: {fg("AlphaA=true")},
			scheduler: {fg("kube:AlphaA=true", "kube:AlphaB=false")},
			kcm:       {"--feature-gates", "AlphaB=false"},
		},
		want:          map[string]bool{AlphaA: true, AlphaB: false, BetaOn: true, LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
	}, {
		name: "one conflicting gate names both components and their flags",
		args: map[string][]string{
			apiserver: {fg("AlphaA=true")},
			scheduler: {fg("AlphaA=false")},
			kcm:       {fg("AlphaC=true")},
		},
		wantConflicts: map[string][]string{`feature gate "AlphaA"`: {apiserver, scheduler}},
	}, {
		name: "every conflict at once: two gates, emulated version, -v",
		args: map[string][]string{
			apiserver: {fg("AlphaA=true", "AlphaB=true"), "--emulated-version=1.36", "-v=2"},
			scheduler: {fg("AlphaA=false"), "--emulated-version=kube=1.35", "-v=4"},
			kcm:       {fg("AlphaB=false"), "-v=2"},
		},
		wantConflicts: map[string][]string{
			`feature gate "AlphaA"`: {apiserver, scheduler},
			`feature gate "AlphaB"`: {apiserver, kcm},
			"--emulated-version":    {apiserver, scheduler},
			"--v":                   {apiserver, kcm, scheduler},
		},
	}, {
		name: "emulated version set by one component is accepted by the others",
		args: map[string][]string{
			apiserver: {"--emulated-version=1.36"},
			scheduler: {fg("AlphaB=true")},
			kcm:       {"--emulated-version=kube=1.36"},
		},
		want:          map[string]bool{AlphaB: true, BetaOn: true, LockedGA: true},
		wantEmulation: "1.36", wantMinCompat: "1.35",
	}, {
		name: "emulated version two below the binary changes defaults and warns",
		args: map[string][]string{
			apiserver: {"--emulated-version=1.35"},
			scheduler: {},
			kcm:       {},
		},
		want:          map[string]bool{BetaOn: false, LockedGA: false},
		wantEmulation: "1.35", wantMinCompat: "1.34",
		wantWarning: true,
	}, {
		name: "min-compatibility versions must agree",
		args: map[string][]string{
			apiserver: {"--min-compatibility-version=1.35"},
			scheduler: {"--min-compatibility-version=1.36"},
			kcm:       {},
		},
		wantConflicts: map[string][]string{"--min-compatibility-version": {apiserver, scheduler}},
	}, {
		name: "min-compatibility of one component above the emulated version of another",
		args: map[string][]string{
			apiserver: {"--emulated-version=1.35"},
			scheduler: {"--min-compatibility-version=1.36"},
			kcm:       {},
		},
		wantConflicts: map[string][]string{"--emulated-version/--min-compatibility-version": {apiserver, scheduler}},
	}, {
		name: "a feature one component enables does not exist at the version another emulates",
		args: map[string][]string{
			apiserver: {"--emulated-version=1.36"},
			scheduler: {fg("NewIn137=true")},
			kcm:       {},
		},
		wantConflicts: map[string][]string{`feature gate "NewIn137"`: {scheduler, apiserver}},
	}, {
		name: "a feature and its dependency in one component, the dependency also enabled in another",
		args: map[string][]string{
			apiserver: {fg("NeedsAlpha=true", "AlphaA=true")},
			scheduler: {},
			kcm:       {fg("AlphaA=true")},
		},
		want:          map[string]bool{NeedsAlpha: true, AlphaA: true, BetaOn: true, LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
	}, {
		// Each is valid alone (BetaOn is on by default for the apiserver; the
		// controller-manager does not enable NeedsBeta): only together do they
		// break the dependency.
		name: "a feature one component enables depends on one another disables",
		args: map[string][]string{
			apiserver: {fg("NeedsBeta=true")},
			scheduler: {},
			kcm:       {fg("BetaOn=false")},
		},
		wantConflicts:     map[string][]string{"feature gates": {apiserver, kcm}},
		needsDependencies: true,
	}, {
		name: "AllAlpha in one component, one of its features the same way in another",
		args: map[string][]string{
			apiserver: {fg("AllAlpha=true")},
			scheduler: {fg("AlphaA=true")},
			kcm:       {},
		},
		want:          map[string]bool{AlphaA: true, AlphaB: true, AlphaC: true, NeedsAlpha: true, NeedsBeta: true, NewIn137: true, BetaOn: true, LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
	}, {
		name: "AllAlpha=true in one component, an alpha feature off in another",
		args: map[string][]string{
			apiserver: {fg("AllAlpha=true")},
			scheduler: {fg("AlphaC=false")},
			kcm:       {},
		},
		wantConflicts: map[string][]string{`feature gate "AlphaC"`: {apiserver, scheduler}},
	}, {
		name: "AllBeta=false in one component, a beta feature on in another",
		args: map[string][]string{
			apiserver: {},
			scheduler: {fg("BetaOn=true")},
			kcm:       {fg("AllBeta=false")},
		},
		wantConflicts: map[string][]string{`feature gate "BetaOn"`: {kcm, scheduler}},
	}, {
		name: "AllBeta=false alone turns every beta feature off in every view",
		args: map[string][]string{
			apiserver: {},
			scheduler: {},
			kcm:       {fg("AllBeta=false")},
		},
		want:          map[string]bool{LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
	}, {
		name: "AllAlpha itself in conflict is one conflict, not one per alpha feature",
		args: map[string][]string{
			apiserver: {fg("AllAlpha=true")},
			scheduler: {fg("AllAlpha=false")},
			kcm:       {fg("AlphaA=false")},
		},
		wantConflicts: map[string][]string{`feature gate "AllAlpha"`: {apiserver, scheduler}},
	}, {
		name: "AllAlpha is expanded at the reconciled emulated version",
		args: map[string][]string{
			apiserver: {fg("AllAlpha=true")},
			scheduler: {"--emulated-version=1.36"},
			kcm:       {},
		},
		// NewIn137 does not exist at 1.36; BetaOn is beta (on) at 1.36.
		want:          map[string]bool{AlphaA: true, AlphaB: true, AlphaC: true, NeedsAlpha: true, NeedsBeta: true, BetaOn: true, LockedGA: true},
		wantEmulation: "1.36", wantMinCompat: "1.35",
	}, {
		name: "dependencies across components: enabled in one, its dependency disabled in another",
		args: map[string][]string{
			apiserver: {fg("NeedsAlpha=true", "AlphaA=true")},
			scheduler: {},
			kcm:       {fg("AlphaA=false")},
		},
		wantConflicts: map[string][]string{`feature gate "AlphaA"`: {apiserver, kcm}},
	}, {
		name: "logging settings agree",
		args: map[string][]string{
			apiserver: {"-v=3", "--vmodule=foo=5"},
			scheduler: {"--v=3"},
			kcm:       {"--logging-format=text"},
		},
		want:          map[string]bool{BetaOn: true, LockedGA: true},
		wantEmulation: "1.37", wantMinCompat: "1.36",
		wantLogging: scoping.LoggingSettings{"v": "3", "vmodule": "foo=5", "logging-format": "text"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsDependencies {
				requireDependencies(t)
			}
			if usesMinCompatibility(tc.args[apiserver], tc.args[scheduler], tc.args[kcm]) {
				requireMinCompatibilityFlag(t)
			}
			target := newTarget(t, features)
			before := gateState(target.Gate, features)
			var applied []scoping.LoggingSettings
			target.ApplyLogging = func(s scoping.LoggingSettings) error { applied = append(applied, s); return nil }
			b, err := scoping.NewBarrier(target)
			require.NoError(t, err)
			scopes := parseAll(t, b, tc.args, k3s...)

			plan, err := b.Reconcile()
			if tc.wantConflicts != nil {
				var ce *scoping.ConflictError
				require.ErrorAs(t, err, &ce)
				got := map[string][]string{}
				for _, c := range ce.Conflicts {
					got[c.Setting] = c.Components()
					assert.Contains(t, err.Error(), c.Error())
				}
				assert.Equal(t, tc.wantConflicts, got)
				var one *scoping.Conflict
				assert.ErrorAs(t, err, &one, "each conflict is reachable with errors.As")
				assert.Nil(t, plan)
				assert.Equal(t, before, gateState(target.Gate, features), "a conflict leaves the process gate untouched")
				assert.Empty(t, applied, "logging not applied")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantEmulation, plan.EmulationVersion)
			assert.Equal(t, tc.wantMinCompat, plan.MinCompatibilityVersion)
			assert.Equal(t, tc.wantWarning, len(plan.Warnings) > 0, "warnings: %v", plan.Warnings)
			require.NoError(t, b.Apply(plan))

			wantState := map[string]bool{}
			for name := range features {
				wantState[string(name)] = tc.want[string(name)]
			}
			assert.Equal(t, wantState, gateState(target.Gate, features), "process gate")
			for name, s := range scopes {
				assert.Equal(t, wantState, gateState(s.FeatureGate(), features), "every scope sees the same: %s", name)
				assert.Equal(t, tc.wantEmulation, s.EffectiveVersion().EmulationVersion().String(), name)
				assert.Equal(t, tc.wantMinCompat, s.EffectiveVersion().MinCompatibilityVersion().String(), name)
			}
			ev := target.Registry.EffectiveVersionFor(scoping.KubeComponent)
			assert.Equal(t, tc.wantEmulation, ev.EmulationVersion().String(), "process registry's kube emulation version")
			assert.Equal(t, tc.wantMinCompat, ev.MinCompatibilityVersion().String())
			want := tc.wantLogging
			if want == nil {
				want = scoping.LoggingSettings{}
			}
			assert.Equal(t, []scoping.LoggingSettings{want}, applied, "logging applied once")
		})
	}
}

func TestConflictErrorText(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	parseAll(t, b, map[string][]string{
		apiserver: {fg("AlphaA=true")},
		scheduler: {fg("AlphaA=false")},
	}, apiserver, scheduler)
	_, err = b.Reconcile()
	require.Error(t, err)
	assert.Equal(t, "components conflict on 1 process-wide setting:\n"+
		`  feature gate "AlphaA": kube-apiserver sets true (--feature-gates=AlphaA=true), kube-scheduler sets false (--feature-gates=AlphaA=false)`,
		err.Error())
	var c *scoping.Conflict
	require.ErrorAs(t, err, &c)
	assert.Equal(t, scoping.FeatureGateConflict, c.Kind)
	assert.Equal(t, "FeatureGate", c.Kind.String())
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		wantFlag  string
		wantValue string
		wantErr   string
	}{
		{"unknown feature", []string{fg("NoSuchFeature=true")}, "--feature-gates", "NoSuchFeature=true", "unrecognized feature gate: NoSuchFeature"},
		{"malformed feature-gates value", []string{fg("AlphaA=maybe")}, "--feature-gates", "AlphaA=maybe", "not a bool"},
		{"feature-gates item without value", []string{fg("AlphaA")}, "--feature-gates", "AlphaA", "expected [component:]Feature=true|false"},
		{"unknown registry component prefix", []string{fg("wardle:AlphaA=true")}, "--feature-gates", "wardle:AlphaA=true", `unknown registry component "wardle"`},
		{"locked-to-default feature set to the other value", []string{fg("LockedGA=false")}, "--feature-gates", "LockedGA=false", "locked to true"},
		{"feature not yet available at the emulated version", []string{"--emulated-version=1.36", fg("NewIn137=true")}, "--feature-gates", "NewIn137=true", "PreAlpha"},
		{"enabled feature whose dependency is off", []string{fg("NeedsAlpha=true")}, "--feature-gates", "NeedsAlpha=true", "depends on features that are disabled"},
		{"malformed emulated version", []string{"--emulated-version=one.two"}, "--emulated-version", "one.two", "could not parse"},
		{"emulated version with a patch number", []string{"--emulated-version=1.36.2"}, "--emulated-version", "1.36.2", "patch version not allowed"},
		{"emulated version above the binary", []string{"--emulated-version=1.38"}, "--emulated-version", "1.38", "emulation version 1.38 is not between [1.34, 1.37.0]"},
		{"emulated version below the floor", []string{"--emulated-version=1.33"}, "--emulated-version", "1.33", "not between [1.34, 1.37.0]"},
		{"emulated version of an unknown registry component", []string{"--emulated-version=wardle=1.2"}, "--emulated-version", "wardle=1.2", `unknown registry component "wardle"`},
		{"malformed min-compatibility version", []string{"--min-compatibility-version=x"}, "--min-compatibility-version", "x", "could not parse"},
		{"min-compatibility above emulated", []string{"--emulated-version=1.35", "--min-compatibility-version=1.36"}, "--min-compatibility-version", "1.36", "is not between [1.34, 1.35]"},
		{"unknown flag", []string{"--no-such-flag=1"}, "", "", "unknown flag: --no-such-flag"},
		{"bad -v", []string{"-v=lots"}, "", "", "invalid argument"},
		{"positional argument", []string{"extra"}, "", "", "unexpected positional arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "dependency") {
				requireDependencies(t)
			}
			if usesMinCompatibility(tc.args) {
				requireMinCompatibilityFlag(t)
			}
			target := newTarget(t, testFeatures())
			before := gateState(target.Gate, testFeatures())
			b, err := scoping.NewBarrier(target)
			require.NoError(t, err)
			s, err := b.NewScope(scheduler)
			require.NoError(t, err)
			addComponentFlags(s)
			err = s.Parse(tc.args)
			var fe *scoping.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, scheduler, fe.Component)
			assert.Equal(t, tc.wantFlag, fe.Flag)
			assert.Equal(t, tc.wantValue, fe.Value)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), scheduler+": ", "the message starts with the component")
			assert.Equal(t, before, gateState(target.Gate, testFeatures()), "bad input changes nothing")
			_, err = b.Reconcile()
			assert.ErrorContains(t, err, "kube-scheduler has not parsed", "no plan without a parse")
			assert.ErrorContains(t, s.Parse(nil), "already parsed", "a failed scope cannot be parsed again")
		})
	}
}

func TestPrivateRegistryComponentsAreNotReconciled(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	newWardle := func(name string) *scoping.Scope {
		s, err := b.NewScope(name)
		require.NoError(t, err)
		gate := featuregate.NewVersionedFeatureGate(version.MustParse("1.2"))
		require.NoError(t, gate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
			"Banana": {{Version: version.MustParse("1.0"), Default: false, PreRelease: featuregate.Alpha}},
		}))
		require.NoError(t, s.Registry().Register("wardle", basecompat.NewEffectiveVersionFromString("1.2", "1.0", "1.0"), gate))
		s.AddFlags()
		return s
	}
	a, c := newWardle("distro-a"), newWardle("distro-b")
	require.NoError(t, a.Parse([]string{fg("wardle:Banana=true"), "--emulated-version=wardle=1.1"}))
	require.NoError(t, c.Parse([]string{fg("wardle:Banana=false")}))
	plan, err := b.Reconcile()
	require.NoError(t, err, "private registry components never conflict")
	require.NoError(t, b.Apply(plan))
	assert.True(t, a.Registry().FeatureGateFor("wardle").Enabled("Banana"))
	assert.False(t, c.Registry().FeatureGateFor("wardle").Enabled("Banana"))
	assert.Equal(t, "1.1", a.Registry().EffectiveVersionFor("wardle").EmulationVersion().String())
	assert.Equal(t, "1.2", c.Registry().EffectiveVersionFor("wardle").EmulationVersion().String())
	assert.Empty(t, a.Requested().Features, "wardle features are not kube requests")
}

func TestApplyOnceAndSeal(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	scopes := parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true")}}, apiserver)
	assert.ErrorContains(t, scopes[apiserver].Parse(nil), "already parsed")
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.NoError(t, b.Apply(plan))
	assert.True(t, b.Applied())
	assert.ErrorIs(t, b.Apply(plan), scoping.ErrSealed)
	_, err = b.Reconcile()
	assert.ErrorIs(t, err, scoping.ErrSealed)
	assert.ErrorIs(t, scopes[apiserver].Parse(nil), scoping.ErrSealed)
	_, err = b.NewScope("late")
	assert.ErrorIs(t, err, scoping.ErrSealed)
}

func TestApplyIsAllOrNothing(t *testing.T) {
	t.Run("logging fails: gate and versions untouched", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		target.ApplyLogging = func(scoping.LoggingSettings) error { return errors.New("boom") }
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		before := gateState(target.Gate, testFeatures())
		parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true"), "--emulated-version=1.36"}}, apiserver)
		plan, err := b.Reconcile()
		require.NoError(t, err)
		assert.ErrorContains(t, b.Apply(plan), "boom")
		assert.Equal(t, before, gateState(target.Gate, testFeatures()))
		assert.Equal(t, "1.37", target.Gate.EmulationVersion().String())
		assert.Equal(t, "1.37", target.Registry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion().String())
		assert.False(t, b.Applied())
	})
	t.Run("process gate changed since reconcile: nothing applied", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true"), "--emulated-version=1.36"}}, apiserver)
		plan, err := b.Reconcile()
		require.NoError(t, err)
		// Someone outside the barrier makes AlphaA depend on AlphaB on the
		// process gate: the plan (AlphaA on, AlphaB off) no longer fits.
		requireDependencies(t)
		addDependencies(t, target.Gate, map[featuregate.Feature][]featuregate.Feature{AlphaA: {AlphaB}})
		require.NoError(t, target.Gate.SetFromMap(map[string]bool{AlphaC: true}))
		before := gateState(target.Gate, testFeatures())
		assert.ErrorContains(t, b.Apply(plan), "changed since the plan was made")
		assert.Equal(t, before, gateState(target.Gate, testFeatures()))
		assert.Equal(t, "1.37", target.Gate.EmulationVersion().String())
		assert.False(t, target.Gate.ExplicitlySet(AlphaA))
		assert.True(t, target.Gate.ExplicitlySet(AlphaC), "a failed Apply does not even reset")
		assert.False(t, b.Applied())
	})
	t.Run("values set on the process gate outside the barrier are reset", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		require.NoError(t, target.Gate.SetFromMap(map[string]bool{AlphaC: true, "AllBeta": false}))
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		scopes := parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true")}}, apiserver)
		assert.False(t, scopes[apiserver].FeatureGate().Enabled(AlphaC), "a scope starts from the defaults")
		assert.True(t, scopes[apiserver].FeatureGate().Enabled(BetaOn), "a scope starts from the defaults")
		plan, err := b.Reconcile()
		require.NoError(t, err)
		require.NoError(t, b.Apply(plan))
		assert.Equal(t, map[string]bool{AlphaA: true, BetaOn: true, LockedGA: true}, enabledOnly(gateState(target.Gate, testFeatures())))
		assert.False(t, target.Gate.ExplicitlySet(AlphaC))
	})
	t.Run("a scope created after reconcile", func(t *testing.T) {
		b, err := scoping.NewBarrier(newTarget(t, testFeatures()))
		require.NoError(t, err)
		parseAll(t, b, nil, apiserver)
		plan, err := b.Reconcile()
		require.NoError(t, err)
		_, err = b.NewScope("late")
		require.NoError(t, err)
		assert.ErrorContains(t, b.Apply(plan), "reconcile again")
	})
}

func TestScopesDoNotLeakIntoEachOther(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	scopes := parseAll(t, b, map[string][]string{
		apiserver: {fg("AlphaA=true"), "--emulated-version=1.36"},
		scheduler: {fg("AlphaB=true")},
	}, apiserver, scheduler)
	assert.True(t, scopes[apiserver].FeatureGate().Enabled(AlphaA))
	assert.False(t, scopes[apiserver].FeatureGate().Enabled(AlphaB))
	assert.False(t, scopes[scheduler].FeatureGate().Enabled(AlphaA))
	assert.True(t, scopes[scheduler].FeatureGate().Enabled(AlphaB))
	assert.Equal(t, "1.36", scopes[apiserver].EffectiveVersion().EmulationVersion().String())
	assert.Equal(t, "1.37", scopes[scheduler].EffectiveVersion().EmulationVersion().String())
	assert.False(t, target.Gate.Enabled(AlphaA), "parsing never touches the process gate")
	assert.False(t, target.Gate.Enabled(AlphaB))
	assert.Equal(t, "1.37", target.Registry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion().String())

	req := scopes[apiserver].Requested()
	assert.Equal(t, map[string]scoping.Request{AlphaA: {Component: apiserver, Value: "true", Flag: "--feature-gates=AlphaA=true"}}, req.Features)
	assert.Equal(t, &scoping.Request{Component: apiserver, Value: "1.36", Flag: "--emulated-version=1.36"}, req.EmulatedVersion)
	assert.Nil(t, req.MinCompatibilityVersion)
}

func TestPlanFeatures(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	parseAll(t, b, map[string][]string{
		apiserver: {fg("AlphaA=true"), "--emulated-version=1.35"},
		scheduler: {fg("AlphaA=true")},
	}, apiserver, scheduler)
	plan, err := b.Reconcile()
	require.NoError(t, err)
	byName := map[string]scoping.FeatureState{}
	for _, f := range plan.FeatureStates() {
		byName[f.Name] = f
	}
	assert.Equal(t, scoping.FeatureState{Name: AlphaA, Stage: "Alpha", Enabled: true, Source: scoping.SourceFlag, Requests: []scoping.Request{
		{Component: apiserver, Value: "true", Flag: "--feature-gates=AlphaA=true"},
		{Component: scheduler, Value: "true", Flag: "--feature-gates=AlphaA=true"},
	}}, byName[AlphaA])
	assert.Equal(t, scoping.FeatureState{Name: BetaOn, Stage: "Alpha", Source: scoping.SourceEmulatedVersion}, byName[BetaOn],
		"at 1.35 BetaOn is alpha and off; at the 1.37 binary it is beta and on")
	assert.Equal(t, scoping.FeatureState{Name: LockedGA, Stage: "Beta", Source: scoping.SourceEmulatedVersion}, byName[LockedGA])
	assert.NotContains(t, byName, NewIn137, "not available at 1.35")
	assert.Equal(t, map[string]bool{AlphaA: true}, plan.Overrides)
	assert.Equal(t, "1.37", plan.BinaryVersion)
}

func TestNewBarrierChecksTarget(t *testing.T) {
	good := newTarget(t, testFeatures())
	other := newTarget(t, testFeatures())
	for name, tgt := range map[string]scoping.Target{
		"nil gate":        {Registry: good.Registry, NewEffectiveVersion: newEffectiveVersion},
		"nil registry":    {Gate: good.Gate, NewEffectiveVersion: newEffectiveVersion},
		"nil version":     {Gate: good.Gate, Registry: good.Registry},
		"gate not in reg": {Gate: other.Gate, Registry: good.Registry, NewEffectiveVersion: newEffectiveVersion},
	} {
		_, err := scoping.NewBarrier(tgt)
		assert.Error(t, err, name)
	}
	b, err := scoping.NewBarrier(good)
	require.NoError(t, err)
	_, err = b.NewScope("")
	assert.Error(t, err)
	_, err = b.NewScope("x")
	require.NoError(t, err)
	_, err = b.NewScope("x")
	assert.ErrorContains(t, err, "already exists")
}

// A plan is plain data: its feature table is there without asking, it
// survives JSON, and only the barrier that made it applies it.
func TestPlanIsPlainData(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	parseAll(t, b, map[string][]string{apiserver: {fg("AlphaA=true")}}, apiserver)
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.Len(t, plan.Features, len(testFeatures())+2, "every feature, AllAlpha and AllBeta included")
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	var decoded scoping.Plan
	require.NoError(t, json.Unmarshal(data, &decoded))
	assert.Equal(t, plan.Features, decoded.Features)
	assert.Equal(t, plan.Overrides, decoded.Overrides)
	assert.ErrorContains(t, b.Apply(&decoded), "the plan this barrier's last Reconcile returned", "a decoded plan is refused, not a panic")
	other, err := scoping.NewBarrier(newTarget(t, testFeatures()))
	require.NoError(t, err)
	assert.ErrorContains(t, other.Apply(plan), "last Reconcile returned")
	again, err := json.Marshal(plan)
	require.NoError(t, err)
	assert.Equal(t, data, again, "encoding does not change the plan")
	require.NoError(t, b.Apply(plan))
	assert.True(t, target.Gate.Enabled(AlphaA))
}
