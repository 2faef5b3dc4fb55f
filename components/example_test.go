package components_test

import (
	"errors"
	"fmt"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/harness"
)

// A distro keeps its apiserver serving when the scheduler or the
// controller-manager loses its lease (a datastore stalled past the renew
// deadline): the harness restarts that component alone, as a standby that
// campaigns again. Without Recover, the first failure stops the harness,
// as upstream exits the process.
func ExampleRecoverLostLease() {
	h := &harness.Harness{Recover: components.RecoverLostLease}
	// ... h.Add(components.NewAPIServer(), …) and the others, then h.Run(ctx).

	lost := fmt.Errorf("%w kube-system/kube-scheduler (held as node-1_0a1b)", components.ErrLeaseLost)
	fmt.Println(h.Recover(components.SchedulerName, lost))
	fmt.Println(h.Recover(components.APIServerName, errors.New("listen tcp 127.0.0.1:6443: bind: address already in use")))
	// Output:
	// true
	// false
}
