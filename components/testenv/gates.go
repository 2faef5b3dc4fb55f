package testenv

import "github.com/kubeharness/kubeharness/components/names"

// Three real alpha feature gates of k8s.io/kubernetes/pkg/features that the
// tests turn on to see where a component's value lands. Each is alpha and
// off by default in every minor this module builds against (v1.36 and
// v1.37), depends on no other gate, and changes nothing the tests' control
// plane does:
//   - APIServerGate: MutablePVNodeAffinity, read by PersistentVolume validation;
//   - SchedulerGate: TaintTolerationComparisonOperators, read by the
//     scheduler's TaintToleration and NodeUnschedulable plugins (and the
//     DaemonSet controller);
//   - ControllerManagerGate: CrossNamespaceVolumeDataSource, read where
//     PersistentVolumeClaims are stored (no controller reads an alpha gate
//     without dependencies in both minors other than the scheduler's).
//
// TestGates checks these properties against the minor the test is built
// with; when a gate graduates (adding v1.38), pick another there.
const (
	APIServerGate         = "MutablePVNodeAffinity"
	SchedulerGate         = "TaintTolerationComparisonOperators"
	ControllerManagerGate = "CrossNamespaceVolumeDataSource"
)

// GateOf returns the gate of the component named name (APIServerGate,
// SchedulerGate or ControllerManagerGate), or "" for another name.
func GateOf(name string) string {
	switch name {
	case names.APIServer:
		return APIServerGate
	case names.Scheduler:
		return SchedulerGate
	case names.ControllerManager:
		return ControllerManagerGate
	}
	return ""
}
