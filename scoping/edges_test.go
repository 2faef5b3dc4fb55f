package scoping_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// AllAlpha in one component against an explicit alpha feature in another:
// the message names the feature, both components and both flag texts.
func TestAllAlphaConflictText(t *testing.T) {
	b, err := scoping.NewBarrier(newTarget(t, testFeatures()))
	require.NoError(t, err)
	parseAll(t, b, map[string][]string{
		apiserver: {fg("AllAlpha=true")},
		scheduler: {fg("AlphaA=false")},
	}, apiserver, scheduler)
	_, err = b.Reconcile()
	var c *scoping.Conflict
	require.ErrorAs(t, err, &c)
	assert.Equal(t, `feature gate "AlphaA": kube-apiserver sets true (--feature-gates=AllAlpha=true), kube-scheduler sets false (--feature-gates=AlphaA=false)`, c.Error())
	assert.Equal(t, "AllAlpha", c.Requests[0].Via)
	assert.Empty(t, c.Requests[1].Via)
	assert.Equal(t, scoping.FeatureGateConflict, c.Kind)
}

// What a component's own code changes in its scope's gate before the
// barrier is a request (Source code), reconciled like a flag.
func TestCodeChangesAreRequests(t *testing.T) {
	t.Run("a default overridden in code reaches every view", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		sched, err := b.NewScope(scheduler)
		require.NoError(t, err)
		require.NoError(t, sched.FeatureGate().OverrideDefault(AlphaA, true)) // before AddFlags closes the gate
		addComponentFlags(sched)
		require.NoError(t, sched.Parse(nil))
		api, err := b.NewScope(apiserver)
		require.NoError(t, err)
		addComponentFlags(api)
		require.NoError(t, api.Parse(nil))

		plan, err := b.Reconcile()
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{AlphaA: true}, plan.Overrides)
		require.NoError(t, b.Apply(plan))
		for name, g := range map[string]featuregate.FeatureGate{"process": target.Gate, scheduler: sched.FeatureGate(), apiserver: api.FeatureGate()} {
			assert.True(t, g.Enabled(AlphaA), name)
		}
		i := slices.IndexFunc(plan.FeatureStates(), func(f scoping.FeatureState) bool { return f.Name == AlphaA })
		require.GreaterOrEqual(t, i, 0)
		fs := plan.FeatureStates()[i]
		assert.Equal(t, scoping.SourceCode, fs.Source)
		assert.Equal(t, []scoping.Request{{Component: scheduler, Value: "true", Flag: scoping.CodeDefaultFlag, Source: scoping.SourceCode}}, fs.Requests)
	})
	t.Run("a value set in code after Parse counts too", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		scopes := parseAll(t, b, nil, apiserver, scheduler)
		require.NoError(t, scopes[scheduler].FeatureGate().SetFromMap(map[string]bool{AlphaB: true}))
		plan, err := b.Reconcile()
		require.NoError(t, err)
		require.NoError(t, b.Apply(plan))
		assert.True(t, target.Gate.Enabled(AlphaB))
		assert.True(t, scopes[apiserver].FeatureGate().Enabled(AlphaB))
	})
	t.Run("code against a flag in another component is a conflict", func(t *testing.T) {
		target := newTarget(t, testFeatures())
		before := gateState(target.Gate, testFeatures())
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		sched, err := b.NewScope(scheduler)
		require.NoError(t, err)
		require.NoError(t, sched.FeatureGate().OverrideDefault(AlphaA, true))
		addComponentFlags(sched)
		require.NoError(t, sched.Parse(nil))
		api, err := b.NewScope(apiserver)
		require.NoError(t, err)
		addComponentFlags(api)
		require.NoError(t, api.Parse([]string{fg("AlphaA=false")}))
		_, err = b.Reconcile()
		var c *scoping.Conflict
		require.ErrorAs(t, err, &c)
		assert.Equal(t, `feature gate "AlphaA": kube-apiserver sets false (--feature-gates=AlphaA=false), kube-scheduler sets true (default overridden in the component's code)`, c.Error())
		assert.Equal(t, before, gateState(target.Gate, testFeatures()))
	})
	t.Run("a flag overrides the component's own code", func(t *testing.T) {
		b, err := scoping.NewBarrier(newTarget(t, testFeatures()))
		require.NoError(t, err)
		sched, err := b.NewScope(scheduler)
		require.NoError(t, err)
		require.NoError(t, sched.FeatureGate().OverrideDefault(AlphaA, true))
		addComponentFlags(sched)
		require.NoError(t, sched.Parse([]string{fg("AlphaA=false")}))
		plan, err := b.Reconcile()
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{AlphaA: false}, plan.Overrides)
	})
}

// A later start in the same process is computed from the process defaults:
// what the first start switched on and the second does not ask for is back
// at its default, and so is the emulated version.
func TestLaterStartFromDefaults(t *testing.T) {
	target := newTarget(t, testFeatures())
	start := func(args map[string][]string) map[string]*scoping.Scope {
		b, err := scoping.NewBarrier(target)
		require.NoError(t, err)
		scopes := parseAll(t, b, args, apiserver, scheduler)
		plan, err := b.Reconcile()
		require.NoError(t, err)
		require.NoError(t, b.Apply(plan))
		return scopes
	}
	start(map[string][]string{apiserver: {fg("AlphaA=true", "AllBeta=false"), "--emulated-version=1.36"}, scheduler: {fg("AlphaB=true")}})
	require.True(t, target.Gate.Enabled(AlphaA))
	require.False(t, target.Gate.Enabled(BetaOn))
	scopes := start(map[string][]string{scheduler: {fg("AlphaC=true")}})
	want := map[string]bool{AlphaC: true, BetaOn: true, LockedGA: true}
	assert.Equal(t, want, enabledOnly(gateState(target.Gate, testFeatures())), "process gate")
	for name, s := range scopes {
		assert.Equal(t, want, enabledOnly(gateState(s.FeatureGate(), testFeatures())), name)
	}
	assert.Equal(t, "1.37", target.Gate.EmulationVersion().String())
	assert.Equal(t, "1.37", target.Registry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion().String())
	assert.False(t, target.Gate.ExplicitlySet(AlphaA))
	assert.False(t, target.Gate.ExplicitlySet("AllBeta"))
}

// startActions is what one component does before the barrier, in a
// property test: flags, a default its code overrides, a value its code sets.
type startActions struct {
	args        []string
	codeDefault map[string]bool
	codeSet     map[string]bool
}

// runStart plays one control-plane start on target: each component's code
// changes, flags, then the barrier. It returns the scopes and, when every
// parse succeeded, Reconcile's plan or error.
func runStart(t *testing.T, target scoping.Target, comps []startActions) (b *scoping.Barrier, scopes []*scoping.Scope, plan *scoping.Plan, parsed bool, err error) {
	b, err = scoping.NewBarrier(target)
	require.NoError(t, err)
	parsed = true
	for i, a := range comps {
		s, err := b.NewScope(fmt.Sprintf("component-%d", i))
		require.NoError(t, err)
		for _, name := range sortedNames(a.codeDefault) {
			_ = s.FeatureGate().OverrideDefault(featuregate.Feature(name), a.codeDefault[name]) // refused for locked/unavailable features: nothing changed
		}
		addComponentFlags(s)
		if s.Parse(a.args) != nil {
			parsed = false
		}
		if len(a.codeSet) > 0 && s.FeatureGate().DeepCopy().SetFromMap(a.codeSet) == nil {
			require.NoError(t, s.FeatureGate().SetFromMap(a.codeSet))
		}
		scopes = append(scopes, s)
	}
	if !parsed {
		return b, scopes, nil, false, nil
	}
	plan, err = b.Reconcile()
	return b, scopes, plan, true, err
}

func sortedNames(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// every view of every feature, AllAlpha and AllBeta included.
func allState(g featuregate.FeatureGate) map[string]bool {
	features := testFeatures()
	features["AllAlpha"], features["AllBeta"] = nil, nil
	return gateState(g, features)
}

// TestPropertyEveryViewAgrees: random requests over the synthetic gate —
// flags, AllAlpha/AllBeta, defaults overridden and values set in code,
// emulated versions — in 2 to 4 components give either a conflict, or,
// after Apply, the same answer for every feature from the process gate,
// every scope and the plan's table; and a start on a target that already ran
// others gives the same process state as the same start on a fresh target.
func TestPropertyEveryViewAgrees(t *testing.T) {
	seed := uint64(20261130)
	rng := rand.New(rand.NewPCG(seed, seed))
	names := []string{AlphaA, AlphaB, AlphaC, BetaOn, LockedGA, NewIn137, NeedsAlpha, NeedsBeta, "AllAlpha", "AllBeta"}
	pick := func() (string, bool) { return names[rng.IntN(len(names))], rng.IntN(2) == 0 }
	target := newTarget(t, testFeatures()) // reused: every start after the first is a later start
	iterations := 3000
	if raceEnabled || testing.Short() {
		iterations = 1000
	}
	var applied, conflicts, badParse int
	for it := range iterations {
		comps := make([]startActions, 2+rng.IntN(3))
		for i := range comps {
			a := &comps[i]
			var items []string
			for range rng.IntN(3) {
				n, v := pick()
				items = append(items, n+"="+strconv.FormatBool(v))
			}
			if len(items) > 0 {
				a.args = append(a.args, fg(items...))
			}
			if rng.IntN(5) == 0 {
				a.args = append(a.args, "--emulated-version=1."+strconv.Itoa(35+rng.IntN(3)))
			}
			if rng.IntN(4) == 0 {
				n, v := pick()
				a.codeDefault = map[string]bool{n: v}
			}
			if rng.IntN(4) == 0 {
				n, v := pick()
				a.codeSet = map[string]bool{n: v}
			}
		}
		b, scopes, plan, parsed, err := runStart(t, target, comps)
		switch {
		case !parsed:
			badParse++
			continue
		case err != nil:
			var ce *scoping.ConflictError
			require.ErrorAs(t, err, &ce, "iteration %d: %+v", it, comps)
			conflicts++
			continue
		}
		require.NoError(t, b.Apply(plan), "iteration %d: %+v", it, comps)
		applied++
		want := allState(target.Gate)
		for _, s := range scopes {
			require.Equal(t, want, allState(s.FeatureGate()), "iteration %d: %s disagrees with the process gate: %+v", it, s.Name(), comps)
		}
		for _, fs := range plan.FeatureStates() {
			if w, ok := want[fs.Name]; ok {
				require.Equal(t, w, fs.Enabled, "iteration %d: plan table for %s: %+v", it, fs.Name, comps)
			}
		}
		fresh := newTarget(t, testFeatures())
		fb, _, freshPlan, _, err := runStart(t, fresh, comps)
		require.NoError(t, err)
		require.NoError(t, fb.Apply(freshPlan))
		require.Equal(t, allState(fresh.Gate), want, "iteration %d: a later start differs from the same start in a fresh process: %+v", it, comps)
		require.Equal(t, fresh.Gate.EmulationVersion().String(), target.Gate.EmulationVersion().String())
	}
	t.Logf("%d starts: %d applied, %d conflicts, %d with a bad parse", iterations, applied, conflicts, badParse)
	// Not vacuous: each outcome happens often.
	assert.Greater(t, applied, iterations/10)
	assert.Greater(t, conflicts, iterations/10)
}
