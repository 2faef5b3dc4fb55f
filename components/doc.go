// Package components adapts the real kube-apiserver, kube-scheduler and
// kube-controller-manager of k8s.io/kubernetes (v1.37.2) to harness
// components. With the kubelet and kube-proxy (node/kubelet, node/proxy)
// and the embedded etcd (package etcd), one process runs all five upstream
// components and their datastore:
//
//	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
//	h.Add(etcd.New(etcdConfig), nil)
//	h.Add(components.NewAPIServer(), apiserverArgs, etcd.Name)
//	h.Add(components.NewScheduler(), schedulerArgs, components.APIServerName)
//	h.Add(components.NewControllerManager(), kcmArgs, components.APIServerName)
//	h.Add(kubelet.New(), kubeletArgs, components.APIServerName)
//	h.Add(proxy.New(), proxyArgs, kubelet.Name)
//	err := h.Run(ctx) // parse, barrier, start in order with readiness, stop in reverse
//
// Each adapter takes exactly its upstream binary's flags, parsed into its
// own scope (package scoping). AddFlags only adds flags: nothing runs,
// listens or touches process-wide state before the barrier, so a bad flag
// or a conflicting feature gate fails the parse or barrier phase, naming
// the component, before any port is opened. AfterBarrier then sets, once,
// the process-wide state the upstream commands would each set. Run builds
// the component as upstream's test servers do, never through NewXCommand
// (which installs signal handlers, applies logging and exits the process).
//
// APIServer, Scheduler and ControllerManager share one lifecycle
// (lifecycle.go): a value runs once, takes its informer name, fences its
// clients, reports readiness once (a standby counts as ready), and the
// scheduler and controller-manager run upstream's Run only while they hold
// their lease. Renew makes the next instance for harness.Restart.
// Internal packages: fence and guard bound requests at the stop, election
// runs work while elected, probe is every component's readiness (marked
// once, polled checks, /healthz and /readyz probes), flags the flag
// handling the adapters share, logtest the log capture of their tests.
//
// Every component of this module logs through the logger in the context
// its Run, Ready and Stop get (klog.FromContext), to which the harness
// adds the component's name as its "component" value; none takes a logging
// function. What upstream shares in one process, what each start leaves
// and what the adapters undo is in docs/components.md at the repository
// root: https://github.com/kubeharness/kubeharness/blob/main/docs/components.md
//
// What a distro reuses:
//   - etcd, controlplane (default flags and wiring of the three with
//     etcd), pki (certificates, kubeconfigs), kubeargs (k3s-style
//     argument merging), names (the component names);
//   - node (the node's default flags, the wait for its Node, host rule
//     cleanup), node/kubelet, node/proxy, node/runtime (containerd as a
//     child), node/sandboxes and node/proctree (what the runtime leaves);
//   - approvers (the servers' approver of kubelet serving certificates),
//     featurepub (feature discovery, KEP-3920), zpages (/flagz, /statusz);
//   - testenv (test helpers).
package components
