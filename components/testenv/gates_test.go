package testenv_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // registers the kube gates in utilfeature.DefaultMutableFeatureGate

	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// TestGates: the three gates the tests turn on are, in the k8s.io/kubernetes
// this test is built with (1.37 by default, 1.36 under make
// test-components-minors), registered, alpha, off by default, off now,
// without dependencies, and distinct, one per component.
func TestGates(t *testing.T) {
	all := utilfeature.DefaultMutableFeatureGate.GetAll()
	deps := utilfeature.DefaultMutableFeatureGate.Dependencies()
	seen := map[string]string{}
	for _, c := range []string{names.APIServer, names.Scheduler, names.ControllerManager} {
		g := testenv.GateOf(c)
		require.NotEmpty(t, g, c)
		require.NotContains(t, seen, g, "%s's gate is %s's too", c, seen[g])
		seen[g] = c
		spec, ok := all[featuregate.Feature(g)]
		require.True(t, ok, "%s's gate %s is registered", c, g)
		assert.Equal(t, featuregate.Alpha, spec.PreRelease, "%s is alpha", g)
		assert.False(t, spec.Default, "%s is off by default", g)
		assert.False(t, spec.LockToDefault, "%s can be set", g)
		assert.Empty(t, deps[featuregate.Feature(g)], "%s depends on no gate", g)
		assert.False(t, utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(g)), "%s is off", g)
	}
	assert.Empty(t, testenv.GateOf("etcd"))
}
