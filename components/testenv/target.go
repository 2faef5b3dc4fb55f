package testenv

import (
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompat "k8s.io/component-base/compatibility"

	"github.com/kubeharness/kubeharness/scoping"
)

// PrivateTarget returns a barrier target of a deep copy of the process gate
// and a fresh registry with the kube component registered: tests that only
// parse and reconcile use it and leave the process-wide state alone.
func PrivateTarget() (scoping.Target, error) {
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(scoping.KubeComponent, apiservercompat.DefaultBuildEffectiveVersion(), gate); err != nil {
		return scoping.Target{}, err
	}
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: apiservercompat.DefaultBuildEffectiveVersion}, nil
}

// MustPrivateTarget is PrivateTarget for tests, panicking on its error
// (which only a broken build gives).
func MustPrivateTarget() scoping.Target {
	target, err := PrivateTarget()
	if err != nil {
		panic(err)
	}
	return target
}
