package harness_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// completing is a fake whose Complete reads features "from a file" and
// records when it was called.
type completing struct {
	*fake
	features map[string]bool
	err      error
	parsed   bool // the scope was parsed when Complete ran
}

func (c *completing) Complete(s *scoping.Scope) error {
	c.parsed = s.FlagSet().Parsed()
	if c.err != nil {
		return c.err
	}
	return s.SetFeatures("--config=/etc/"+c.name+".yaml", c.features)
}

// TestCompleterFeaturesMeetTheBarrier: what Complete sets after Parse takes
// part in the barrier like a flag: a conflict with another component's flag
// is the barrier's conflict, naming the file, and nothing runs; agreeing, it
// is applied with the others and SET-BY names the component.
func TestCompleterFeaturesMeetTheBarrier(t *testing.T) {
	t.Run("conflict", func(t *testing.T) {
		h, target := newHarness(t)
		j := &journal{}
		a := newFake("kube-apiserver", j)
		k := &completing{fake: newFake("kubelet", j), features: map[string]bool{"Foo": true}}
		require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=false"}))
		require.NoError(t, h.Add(k, nil, "kube-apiserver"))
		err := h.Run(t.Context())
		var pe *harness.PhaseError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, harness.PhaseBarrier, pe.Phase)
		assert.ErrorContains(t, err, "kubelet sets true (--config=/etc/kubelet.yaml)")
		assert.True(t, k.parsed, "Complete runs after Parse")
		assert.False(t, a.runCalled.Load())
		assert.False(t, k.runCalled.Load())
		assert.False(t, target.Gate.Enabled(Foo), "nothing applied")
	})
	t.Run("agree", func(t *testing.T) {
		h, _ := newHarness(t)
		k := &completing{fake: newFake("kubelet", &journal{}), features: map[string]bool{"Foo": true}}
		require.NoError(t, h.Add(k, nil))
		plan, err := h.DryRun(t.Context())
		require.NoError(t, err)
		var found bool
		for _, f := range plan.FeatureStates() {
			if f.Name == string(Foo) {
				found = true
				assert.True(t, f.Enabled)
				assert.Equal(t, "kubelet=true", f.SetBy())
			}
		}
		assert.True(t, found, "Foo in the plan")
	})
	t.Run("error fails the parse phase", func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		k := &completing{fake: newFake("kubelet", j), err: errors.New("--config=/etc/kubelet.yaml: no such file")}
		require.NoError(t, h.Add(k, nil))
		err := h.Run(t.Context())
		var ce *harness.ComponentError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, harness.PhaseParse, ce.Phase)
		assert.Equal(t, "kubelet", ce.Component)
		assert.ErrorContains(t, err, "no such file")
		assert.False(t, k.runCalled.Load())
		assert.Equal(t, harness.Failed, state(h, "kubelet"))
	})
}
