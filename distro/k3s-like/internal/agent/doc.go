// Package agent is `k3s-like agent`: a node (containerd, the kubelet,
// kube-proxy) that joins a k3s-like server.
//
//	NewCommand: --server, the shared flags (package cli), the node's
//	run:
//	    check                 // --server, the full token (it pins the cluster CA)
//	    daemon.Run:
//	        cluster.Join       // pins the server's CA, reads the agent settings
//	                           // and the bootstrap token with the join credential,
//	                           // writes the bootstrap kubeconfig
//	        node.Config.Add    // the kubelet bootstraps its client certificate
//	        barrier -> PrepareRuntime
//	        stop -> the node's AfterStop
package agent
