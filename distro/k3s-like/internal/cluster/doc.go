// Package cluster is what ties servers and agents into one cluster: the
// token, what a server publishes for agents, and an agent's join.
//
// The token is k3s's: a bare secret, or K10<sha256 of the server CA>::server:<secret>.
// The secret seals the cluster PKI in an external datastore (package
// bootstrap); the hash pins the CA a joining server or agent accepts; a
// kubelet bootstrap token is derived from the secret (BootstrapToken).
//
//	server: NodeJoin.Add      // the node-join component, once the apiserver is ready:
//	                          // the bootstrap token Secret, the agent settings ConfigMap
//	                          // (client CA, cluster DNS, domain, Pods' CIDR, flannel's
//	                          // backend), RBAC for bootstrapping kubelets, kube-proxy,
//	                          // flannel and the feature reporters
//	agent:  Join              // dial the server, take the CA whose hash the token pins,
//	                          // read the settings with the bootstrap token, write the CA
//	                          // files and the bootstrap kubeconfig
//
// ResolveToken and TokenSource find the token among the flags, the
// environment and DATA_DIR/token; WriteTokenFile writes the full token
// there (0600, never through a link). No error carries the token.
package cluster
