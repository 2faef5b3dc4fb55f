package scoping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/scoping"
)

// applied returns a barrier that applied the plan of args, with its scopes.
func applied(t *testing.T, target scoping.Target, args map[string][]string) (*scoping.Barrier, map[string]*scoping.Scope) {
	t.Helper()
	b, err := scoping.NewBarrier(target)
	require.NoError(t, err)
	scopes := parseAll(t, b, args, apiserver, scheduler)
	plan, err := b.Reconcile()
	require.NoError(t, err)
	require.NoError(t, b.Apply(plan))
	return b, scopes
}

func rescope(t *testing.T, b *scoping.Barrier, name string, args ...string) *scoping.Scope {
	t.Helper()
	s, err := b.Rescope(name)
	require.NoError(t, err)
	addComponentFlags(s)
	require.NoError(t, s.Parse(args))
	return s
}

func TestAdmit(t *testing.T) {
	target := newTarget(t, testFeatures())
	b, _ := applied(t, target, map[string][]string{apiserver: {fg("AlphaA=true"), "-v=2"}, scheduler: {fg("AlphaB=true")}})

	t.Run("settings in force, and none: admitted, sealed, the plan's view", func(t *testing.T) {
		s := rescope(t, b, scheduler, fg("AlphaA=true"), "-v=2", "--emulated-version=1.37")
		require.NoError(t, b.Admit(s))
		assert.True(t, s.FeatureGate().Enabled(AlphaA))
		assert.True(t, s.FeatureGate().Enabled(AlphaB), "what only the previous instance asked for stays in force")
		assert.ErrorIs(t, s.Parse(nil), scoping.ErrSealed)
	})
	t.Run("every change of a process-wide setting, all at once", func(t *testing.T) {
		before := gateState(target.Gate, testFeatures())
		s := rescope(t, b, scheduler, fg("AllAlpha=false"), "-v=3", "--emulated-version=1.36")
		err := b.Admit(s)
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		var settings []string
		for _, c := range ce.Conflicts {
			settings = append(settings, c.Setting)
		}
		assert.Equal(t, []string{"--emulated-version", "--v", `feature gate "AlphaA"`, `feature gate "AlphaB"`}, settings, err.Error())
		assert.Equal(t, `feature gate "AlphaA": kube-apiserver sets true (--feature-gates=AlphaA=true), kube-scheduler sets false (--feature-gates=AllAlpha=false): feature gate "AlphaA" is true in the running control plane; a restarted component cannot change a process-wide setting while the others run`, ce.Conflicts[2].Error())
		assert.Equal(t, before, gateState(target.Gate, testFeatures()))
	})
	t.Run("a default the new instance's code overrides", func(t *testing.T) {
		s, err := b.Rescope(scheduler)
		require.NoError(t, err)
		require.NoError(t, s.FeatureGate().OverrideDefault(AlphaC, true))
		addComponentFlags(s)
		require.NoError(t, s.Parse(nil))
		assert.ErrorContains(t, b.Admit(s), `feature gate "AlphaC": kube-scheduler sets true (default overridden in the component's code)`)
	})
	t.Run("-v at its default when nobody set it", func(t *testing.T) {
		b, _ := applied(t, newTarget(t, testFeatures()), nil)
		require.NoError(t, b.Admit(rescope(t, b, scheduler, "-v=0")))
		assert.ErrorContains(t, b.Admit(rescope(t, b, scheduler, "-v=1")), "--v is 0 in the running control plane")
	})
	t.Run("refused", func(t *testing.T) {
		_, err := b.Rescope("nosuch")
		assert.ErrorContains(t, err, `"nosuch" is not a component of the applied plan`)
		fresh, err := scoping.NewBarrier(newTarget(t, testFeatures()))
		require.NoError(t, err)
		_, err = fresh.Rescope(scheduler)
		assert.ErrorContains(t, err, "before the barrier applied")
		unparsed, err := b.Rescope(scheduler)
		require.NoError(t, err)
		assert.ErrorContains(t, b.Admit(unparsed), "has not parsed")
	})
}
