// Package loadbalancer is a client-side load balancer for the apiservers of
// a cluster, as k3s's agent runs one (pkg/agent/loadbalancer): a TCP proxy
// on the agent's loopback that the kubelet's, kube-proxy's and the node's
// other clients' kubeconfigs point at, so that losing the server an agent
// joined through does not take its node down.
//
//	lb := &loadbalancer.LoadBalancer{
//		Address: "127.0.0.1:6444",
//		Servers: []string{"192.0.2.10:6443"},     // the server joined through, first
//		Kubeconfig: kubeletKubeconfig,            // once it exists: refresh from the endpoints
//	}
//	h.Add(lb, nil)                               // a harness component, ready once it listens
//	h.Add(kubelet, args, loadbalancer.Name)
//
// Run listens on Address and proxies each connection to the current
// server, TLS and all (the proxy sees bytes only: the client verifies the
// apiserver's certificate, which covers 127.0.0.1). A connection that
// cannot be dialled marks that server failed and goes to the next one.
// Every HealthInterval each server is dialled; when the current one fails,
// the next healthy one becomes current and the connections to the failed
// one are closed, so that the clients' watches reconnect at once (a killed
// process's peer resets them anyway; a host that vanished would leave
// them hanging until TCP gave up). Every RefreshInterval the server list
// becomes Servers plus the addresses of the `kubernetes` Service's
// EndpointSlices (every apiserver that advertises itself), read through
// the load balancer itself with the credential of Kubeconfig.
//
// Process-wide state: none; one listener, goroutines joined by Run.
package loadbalancer
