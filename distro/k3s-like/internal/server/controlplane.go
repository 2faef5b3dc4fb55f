package server

import (
	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/harness"
)

// controlPlane is the harness and the components this server runs.
type controlPlane struct {
	h         *harness.Harness
	db        *etcd.Etcd                    // nil on an external datastore
	scheduler *components.Scheduler         // nil with --disable-scheduler
	kcm       *components.ControllerManager // nil with --disable-controller-manager
	summary   *featurepub.Summarizer
}

// leaderElection reports each elected component's leader election: whether
// it is on and the identity it holds (or waits for) its lease as.
func (cp *controlPlane) leaderElection() map[string]components.LeaderElection {
	out := map[string]components.LeaderElection{}
	if cp.scheduler != nil {
		out[components.SchedulerName] = cp.scheduler.LeaderElection()
	}
	if cp.kcm != nil {
		out[components.ControllerManagerName] = cp.kcm.LeaderElection()
	}
	return out
}

// serverGCPercent is the server's collector goal once ready, unless GOGC
// is set: a heap after a workload no larger than separate processes'
// (docs/memory.md).
const serverGCPercent = 70

// serverStartGCPercent is the goal until then: the start allocates the
// most, and collecting half as often makes it faster and cheaper, for a
// heap at ready that the lower goal then brings down (docs/memory.md).
const serverStartGCPercent = 200

// newControlPlane adds the components this server runs, with their arguments.
func (o *options) newControlPlane(args map[string][]string) (*controlPlane, error) {
	h := &harness.Harness{StopTimeout: o.StopTimeout, AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
	if !o.exitOnLeaseLoss {
		// A lost lease (a datastore stalled longer than the renew
		// deadline) demotes that component to a standby that campaigns
		// again; upstream would exit the process, apiserver and all.
		h.Recover = components.RecoverLostLease
	}
	cp := &controlPlane{h: h}
	if !o.externalDatastore() {
		cp.db = etcd.New(o.etcdConfig())
	}
	// The clients that can be given a transport are served by the
	// apiserver in the process, without TLS or a socket; each is still
	// authenticated as itself (APIServer.InProcess). The scheduler's
	// cannot: upstream's Setup builds them from its kubeconfig alone.
	api := o.apiServer()
	if !o.disableScheduler {
		cp.scheduler = components.NewScheduler()
	}
	if !o.disableKCM {
		cp.kcm = components.NewControllerManager().ConnectVia(api.InProcess)
	}
	// KEP-3920 feature discovery: publish the plan as Feature objects once
	// every other component is ready (it never fails the harness), with
	// an identity of its own (node-join binds its role; until then it
	// retries).
	pub := &featurepub.Publisher{
		Server:       o.NodeName,
		FieldManager: "k3s-like/" + o.NodeName,
		UserAgent:    "k3s-like-feature-publisher",
		Kubeconfig:   o.layout().FeaturePublisherKubeconfig(),
		Connect:      api.InProcess,
	}
	// The cluster's view of each Feature, the nodes' reports included; the
	// servers share its field manager.
	cp.summary = &featurepub.Summarizer{
		FieldManager: "k3s-like/node-summary",
		UserAgent:    "k3s-like-feature-summarizer",
		Kubeconfig:   o.layout().FeaturePublisherKubeconfig(),
		Connect:      api.InProcess,
	}
	if err := (controlplane.Components{
		Etcd:              cp.db,
		APIServer:         api,
		Scheduler:         cp.scheduler,
		ControllerManager: cp.kcm,
		Publisher:         pub,
		Summarizer:        cp.summary,
	}).Add(h, args); err != nil {
		return nil, err
	}
	if err := o.nodeJoin().Add(h); err != nil {
		return nil, err
	}
	// The agents' kubelets ask for their serving certificates; node-join
	// binds the approver's role.
	if err := h.Add(&approvers.ServingApprover{
		Kubeconfig: o.layout().KubeletServingApproverKubeconfig(),
	}, nil, cluster.NodeJoinName); err != nil {
		return nil, err
	}
	// Bootstrapping nodes' client certificates, for the node password.
	if err := (cluster.NodeClientApprover{AdminKubeconfig: o.adminKubeconfig()}).Add(h); err != nil {
		return nil, err
	}
	if err := o.clusterComponents(h, cp.db); err != nil {
		return nil, err
	}
	if err := o.manifests().Add(h); err != nil {
		return nil, err
	}
	if !o.node.DisableAgent {
		n := o.nodeConfig()
		if cp.kcm != nil {
			n.ControllersBuilt = func(fn func()) { cp.kcm.OnControllersBuilt(fn) }
		}
		if err := n.Add(h, args); err != nil {
			return nil, err
		}
	}
	return cp, nil
}
