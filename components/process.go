package components

import (
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/scoping"

	// What the upstream binaries' main packages import, so that a single
	// binary built from these adapters behaves like them.
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics in legacyregistry
	_ "k8s.io/component-base/metrics/prometheus/version"  // kubernetes_build_info
	_ "time/tzdata"                                       // CronJob time zones
)

// AfterBarrier sets, once, the process-wide state that the upstream commands
// would each set for themselves, from the reconciled plan the barrier
// applied. Put it in harness.Harness.AfterBarrier:
//
//	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
//
// It installs client-go's default warning handler rest.NoWarnings (what
// kube-apiserver and kube-controller-manager each install in their
// PersistentPreRunE) and records the feature-enablement metric
// (kubernetes_feature_enabled) from the process gate and the compatibility
// version metric from the process registry (what each command's RunE does
// with its own registry's gate, which after the barrier holds the same
// values). See docs/components.md, "Process-wide state", for why each is done
// here.
func AfterBarrier(_ *scoping.Plan) error {
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	addFeatureMetrics(utilfeature.DefaultMutableFeatureGate)
	apiservercompat.DefaultComponentGlobalsRegistry.AddMetrics()
	return nil
}
