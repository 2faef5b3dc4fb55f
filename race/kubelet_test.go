package race_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// kubelet is the kubelet's component name.
const kubelet = "kubelet"

// staleGate is the process gate as an agent-only process has it in
// k3s#11937: created at the emulation version of a hard-coded constant
// (component-base's DefaultKubeBinaryVersion, left at the previous minor,
// 1.36 here, in a 1.37 binary) that nothing in the process corrects — the
// kubelet has no --emulated-version and never calls the registry's Set.
func staleGate(tb testing.TB) featuregate.MutableVersionedFeatureGate {
	tb.Helper()
	gate := featuregate.NewVersionedFeatureGate(version.MustParse("1.36"))
	require.NoError(tb, gate.AddVersioned(kubeFeatures()))
	return gate
}

// TestUpstream_KubeletGate_StaleEmulationVersion: k3s#11937. Upstream's
// kubelet writes its --feature-gates into the process gate
// (utilfeature.DefaultMutableFeatureGate.SetFromMap, in NewKubeletCommand
// and again in run), so a gate of the binary's own minor is judged at
// whatever emulation version the process gate has. In an agent-only
// process that is the stale constant's, and the kubelet refuses to start;
// in a process where another component registered the kube effective
// version first (a server), the same arguments start. The kubelet's own
// arguments do not decide.
func TestUpstream_KubeletGate_StaleEmulationVersion(t *testing.T) {
	args := map[string]bool{NewIn137: true}

	agent := staleGate(t)
	err := agent.SetFromMap(args)
	require.Error(t, err, "the agent's kubelet refuses its own minor's alpha gate")
	assert.ErrorContains(t, err, NewIn137)
	assert.Equal(t, "1.36", agent.EmulationVersion().String())

	server := staleGate(t)
	reg := basecompat.NewComponentGlobalsRegistry()
	require.NoError(t, reg.Register(basecompat.DefaultKubeComponent, newEffectiveVersion(), server))
	require.NoError(t, server.SetFromMap(args), "the same arguments, once another component registered the binary's version")
	assert.True(t, server.Enabled(NewIn137))
}

// TestHarness_KubeletGate_AtTheBinaryOrTheControlPlaneVersion: the same
// kubelet arguments through scoping. The kubelet's scope gets the binary's
// effective version (the target's NewEffectiveVersion), not the process
// gate's, so its gate is judged at 1.37 whether it runs alone or beside an
// apiserver, whatever the order; the barrier then applies the emulation
// version and the gate to the stale process gate together. With an
// apiserver that emulates 1.36, the kubelet runs at 1.36 too (it has no
// version of its own), and its 1.37 gate is refused at the barrier,
// naming it — before anything starts.
func TestHarness_KubeletGate_AtTheBinaryOrTheControlPlaneVersion(t *testing.T) {
	target := func(t *testing.T) scoping.Target {
		gate := staleGate(t)
		reg := basecompat.NewComponentGlobalsRegistry()
		require.NoError(t, reg.Register(scoping.KubeComponent, newEffectiveVersion(), gate))
		require.NoError(t, gate.SetEmulationVersion(version.MustParse("1.36")), "the constant's version again, after Register")
		return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: newEffectiveVersion}
	}
	for _, tc := range []struct {
		name  string
		order []component
	}{
		{"agent only", []component{{kubelet, []string{"--feature-gates=NewIn137=true"}}}},
		{"kubelet first", []component{{kubelet, []string{"--feature-gates=NewIn137=true"}}, {apiserver, nil}}},
		{"apiserver first", []component{{apiserver, nil}, {kubelet, []string{"--feature-gates=NewIn137=true"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt := target(t)
			b, err := scoping.NewBarrier(tgt, discard)
			require.NoError(t, err)
			for _, c := range tc.order {
				_, err := parseScope(b, c.name, c.args...)
				require.NoError(t, err, c.name)
			}
			plan, err := b.Reconcile()
			require.NoError(t, err)
			require.NoError(t, b.Apply(plan))
			assert.True(t, tgt.Gate.Enabled(NewIn137))
			assert.Equal(t, "1.37", tgt.Gate.EmulationVersion().String())
		})
	}
	t.Run("control plane emulates 1.36", func(t *testing.T) {
		tgt := target(t)
		b, err := scoping.NewBarrier(tgt, discard)
		require.NoError(t, err)
		_, err = parseScope(b, apiserver, "--emulated-version=1.36")
		require.NoError(t, err)
		_, err = parseScope(b, kubelet, "--feature-gates=NewIn137=true")
		require.NoError(t, err)
		_, err = b.Reconcile()
		require.Error(t, err)
		assert.ErrorContains(t, err, NewIn137)
		assert.ErrorContains(t, err, kubelet)
		assert.False(t, tgt.Gate.Enabled(NewIn137), "nothing applied")
	})
}
