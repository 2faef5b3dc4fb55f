// Package flannel runs flannel (github.com/flannel-io/flannel v0.28.4, as
// k3s embeds it) as a harness component: the pod network between nodes.
// Each node's lease is its Node's spec.podCIDR (flannel's Kubernetes
// subnet manager), its public IP its node IP; the vxlan backend
// encapsulates Pod traffic between the nodes' IPs, host-gw routes each
// node's pod CIDR through its node IP.
//
//	h.AfterBarrier = append(h.AfterBarrier, func(*scoping.Plan) error {
//		_, err := flannel.SetNodeNameEnv("node-a") // NODE_NAME: process-wide
//		return err
//	})
//	f := flannel.New()
//	h.Add(f, []string{"--node-name=node-a", "--kubeconfig-file=…", "--network=10.42.0.0/16", …}, "kubelet")
//	n, err := f.Network(ctx) // the lease and MTU, for the node's CNI configuration
//
// # The flow
//
// AddFlags adds the adapter's flags (flanneld's names where it has them);
// Complete checks them before the barrier. Run waits until its Node has a
// pod CIDR, writes net-conf.json, then does what flanneld's main does with
// --kube-subnet-mgr --ip-masq: the subnet manager (a Node informer), the
// external interface, the backend's RegisterNetwork (the vxlan device, the
// lease: the Node's annotations), the masquerade and forward rules
// (iptables, resynced every 5 s), the subnet file, the backend's Run (the
// routes to the other nodes, from their Nodes' annotations) and
// CompleteLease (NetworkUnavailable=False). It is ready then; Network
// returns the lease and the Pods' MTU (vxlan: the interface's less 50).
// When its context ends, upstream's goroutines end; Run waits for those
// upstream tracks. Cleanup removes what it left on the host.
//
// # Process-wide state
//
// NODE_NAME (SetNodeNameEnv, at the barrier); the host's network: the
// flannel.1 device, routes, neighbour and FDB entries, the FLANNEL-POSTRTG
// and FLANNEL-FWD iptables chains; flannel's backend registry (filled at
// init). No metrics, flags or signal handlers. Upstream exits the process
// when it cannot open a netlink socket to watch its vxlan device
// (klog.Fatalf) and, in v0.28.4, panics when that device is deleted while
// it runs (its re-creation indexes IPv6 addresses with IPv6 off).
// docs/components.md has the catalogue.
package flannel
