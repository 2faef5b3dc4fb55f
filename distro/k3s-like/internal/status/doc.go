// Package status is a server's status endpoint (--status-address) and the
// client the commands that read it use.
//
//	Endpoint.Serve   // after the barrier: listen, then serve Handler until the stop
//	    Handler      // the harness's /components, /features, /livez, /readyz, /healthz,
//	                 // /metrics; /leader-election, /features/nodes, /flagz, /statusz;
//	                 // /debug/pprof with --enable-pprof
//	    statusGuard  // plain HTTP on loopback (only a loopback Host, no cross-site
//	                 // request); elsewhere HTTPS with a client certificate of the
//	                 // client CA: the health paths for all, the rest for
//	                 // system:masters or whom the apiserver allows (SubjectAccessReview)
//	Client.Get       // `k3s-like features`, `top`, `upgrade-plan`: --status-address,
//	                 // --status-tls, --status-kubeconfig
package status
