package scoping_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/scoping"
)

// TestSetFeatures: features a component read from a file are its requests,
// named by their origin, reconciled like flags: the same value as another
// component's is fine and SET-BY names both; a different one is a conflict
// naming the file; the component's own flag takes precedence over its file.
func TestSetFeatures(t *testing.T) {
	const kubelet, origin = "kubelet", "--config=/etc/kubelet.yaml"
	newScopes := func(t *testing.T, apiserverArgs, kubeletArgs []string) (*scoping.Barrier, *scoping.Scope) {
		b, err := scoping.NewBarrier(newTarget(t, testFeatures()))
		require.NoError(t, err)
		parseAll(t, b, map[string][]string{apiserver: apiserverArgs}, apiserver)
		s := parseAll(t, b, map[string][]string{kubelet: kubeletArgs}, kubelet)[kubelet]
		return b, s
	}

	t.Run("agree", func(t *testing.T) {
		b, s := newScopes(t, []string{fg("AlphaA=true")}, nil)
		require.NoError(t, s.SetFeatures(origin, map[string]bool{AlphaA: true, AlphaB: true}))
		assert.Equal(t, scoping.Request{Component: kubelet, Value: "true", Flag: origin}, s.Requested().Features[AlphaB])
		plan, err := b.Reconcile()
		require.NoError(t, err)
		states := map[string]scoping.FeatureState{}
		for _, f := range plan.FeatureStates() {
			states[f.Name] = f
		}
		assert.Equal(t, "kube-apiserver=true,kubelet=true", states[AlphaA].SetBy())
		assert.Equal(t, "kubelet=true", states[AlphaB].SetBy())
		assert.True(t, states[AlphaB].Enabled)
		require.NoError(t, b.Apply(plan))
		assert.ErrorIs(t, s.SetFeatures(origin, map[string]bool{AlphaC: true}), scoping.ErrSealed)
	})

	t.Run("conflict names the origin", func(t *testing.T) {
		b, s := newScopes(t, []string{fg("AlphaA=false")}, nil)
		require.NoError(t, s.SetFeatures(origin, map[string]bool{AlphaA: true}))
		_, err := b.Reconcile()
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.ErrorContains(t, err, "kubelet sets true ("+origin+")")
		assert.ErrorContains(t, err, "kube-apiserver sets false (--feature-gates=AlphaA=false)")
	})

	t.Run("the flag wins over the file", func(t *testing.T) {
		b, s := newScopes(t, nil, []string{fg("AlphaA=false")})
		require.NoError(t, s.SetFeatures(origin, map[string]bool{AlphaA: true}))
		assert.Equal(t, "--feature-gates=AlphaA=false", s.Requested().Features[AlphaA].Flag)
		assert.False(t, s.FeatureGate().Enabled(AlphaA))
		_, err := b.Reconcile()
		require.NoError(t, err)
	})

	t.Run("unknown feature", func(t *testing.T) {
		_, s := newScopes(t, nil, nil)
		err := s.SetFeatures(origin, map[string]bool{"NoSuchFeature": true})
		var fe *scoping.FlagError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, scoping.FlagError{Component: kubelet, Flag: origin, Value: "NoSuchFeature=true", Err: fe.Err}, *fe)
		assert.ErrorContains(t, err, "kubelet: "+origin+"=NoSuchFeature=true: ")
	})

	t.Run("before Parse", func(t *testing.T) {
		b, err := scoping.NewBarrier(newTarget(t, testFeatures()))
		require.NoError(t, err)
		s, err := b.NewScope(kubelet)
		require.NoError(t, err)
		err = s.SetFeatures(origin, map[string]bool{AlphaA: true})
		var fe *scoping.FlagError
		require.True(t, errors.As(err, &fe), "%v", err)
		assert.ErrorContains(t, err, "before a successful Parse")
		assert.False(t, s.FeatureGate().Enabled(AlphaA))
	})
}
