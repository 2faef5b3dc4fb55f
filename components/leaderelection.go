package components

import (
	"errors"

	"github.com/kubeharness/kubeharness/components/internal/election"
)

// LeaderElection is the leader-election configuration an adapter read from
// its upstream options after parsing, and runs with its own elector
// (Scheduler.LeaderElection, ControllerManager.LeaderElection).
// Upstream's elector is always off in the adapters: its OnStoppedLeading
// exits the process.
type LeaderElection = election.Settings

// ErrLeaseLost is the cause when a component lost its leader-election
// lease: its Run returns an error wrapping it. Upstream would have exited
// the process; here only that component stops, and the harness decides what
// happens to the others (it stops them: the first failure stops all).
var ErrLeaseLost = election.ErrLeaseLost

// ErrAPIServerUnhealthy is the cause when kube-controller-manager, leading,
// found kube-apiserver's /healthz not ok for the 10 s upstream waits
// before it builds any controller (CreateControllerContext: "failed to wait
// for apiserver being healthy") — a datastore that stalls just after the
// lease was taken: the apiserver's etcd check fails while the lease, renewed
// moments before, has not yet run out. Run returns an error wrapping it and
// upstream's; the lease is released (or expires), and RecoverLostLease
// keeps it, as it keeps a lost lease. Upstream exits the process.
var ErrAPIServerUnhealthy = errors.New("kube-apiserver was not healthy when kube-controller-manager started leading")

// RecoverLostLease is a harness.Harness.Recover for the adapters: it keeps
// a failure that is a lost lease (ErrLeaseLost) — a datastore stalled past
// the renew deadline, say — so the harness restarts that component (a
// standby that campaigns again, under the same identity: see Renew) while
// kube-apiserver and the rest keep running. It also keeps the other face of
// the same stall, a controller-manager that took its lease and found the
// apiserver unhealthy (ErrAPIServerUnhealthy). Every other failure stops
// the harness. Upstream's behaviour, the process exiting on a lost lease,
// is a Harness without Recover.
func RecoverLostLease(_ string, err error) bool {
	return errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrAPIServerUnhealthy)
}
