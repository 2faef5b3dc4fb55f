// Package cluster is what ties servers and agents into one cluster: the
// token, what a server publishes for agents, and an agent's join.
//
// The token is k3s's: a bare secret, or K10<sha256 of the server CA>::server:<secret>.
// The secret seals the cluster PKI in an external datastore (package
// bootstrap); the hash pins the CA a joining server or agent accepts; an
// agent reads the agent settings and the server's random, expiring
// bootstrap token with the join credential (Token.JoinCredential), which
// the server's apiserver authenticates from JoinAuthFile.
//
//	server: NodeJoin.Add      // the node-join component, once the apiserver is ready
//	                          // and every 10 minutes: a random bootstrap token Secret
//	                          // (renewed before it expires), the agent settings ConfigMap
//	                          // (client CA, cluster DNS, domain, Pods' CIDR, flannel's
//	                          // backend), RBAC for bootstrapping kubelets, kube-proxy,
//	                          // flannel and the feature reporters
//	agent:  Join              // dial the server, take the CA whose hash the token pins,
//	                          // read the settings and the bootstrap token with the join
//	                          // credential, write the CA files and the bootstrap kubeconfig
//	server: ServerJoin.Add    // a member of an embedded etcd cluster: the cluster's PKI
//	                          // sealed with the secret, and each member's etcd URL
//	joining server: FetchServerPKI // read them with the server join credential
//	                          // (Token.ServerJoinCredential), verify, write the PKI
//
// ResolveToken and TokenSource find the token among the flags, the
// environment and DATA_DIR/token; WriteTokenFile writes the full token
// there (0600, never through a link). No error carries the token.
package cluster
