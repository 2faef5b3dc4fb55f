// Package cluster is what ties servers and agents into one cluster: the
// token, what a server publishes for agents, and an agent's join.
//
// The tokens are k3s's: a bare secret, or K10<sha256 of the server
// CA>::server:<secret> (the server token), ::node:<secret> (the agent
// token: agents only) or ::ID.SECRET (a bootstrap token of
// CreateBootstrapToken, `k3s-like token create`: agents only, until it
// expires). The server token's secret seals the cluster PKI (package
// bootstrap; ResealServerRecord re-seals it for `token rotate`); the hash
// pins the CA a joining server or agent accepts; an agent reads the agent
// settings and the server's random, expiring bootstrap token with the join
// credential (Token.JoinCredential), which the server's apiserver
// authenticates from JoinAuthFile. With a bootstrap token the agent asks
// for its kubelet's client certificate (NodeClient.Ensure), proving its
// node password (nodepassword.go); NodeClientApprover approves it only for
// a node name free or claimed with that password.
//
//	server: NodeJoin.Add      // the node-join component, once the apiserver is ready
//	                          // and every 10 minutes: a random bootstrap token Secret
//	                          // (renewed before it expires), the agent settings ConfigMap
//	                          // (client CA, cluster DNS, domain, Pods' CIDR, flannel's
//	                          // backend), RBAC for bootstrapping kubelets, kube-proxy,
//	                          // flannel and the feature reporters
//	server: NodeClientApprover.Add // approve bootstrap tokens' node client CSRs
//	                          // that prove the name's node password
//	agent:  Join              // dial the server, take the CA whose hash the token pins,
//	                          // read the settings and the bootstrap token with the join
//	                          // credential, write the CA files
//	agent:  NodeClient.Ensure // the kubelet's client certificate, with the node password
//	server: ServerJoin.Add    // a member of an embedded etcd cluster: the cluster's PKI
//	                          // sealed with the secret, and each member's etcd URL
//	joining server: FetchServerPKI // read them with the server join credential
//	                          // (Token.ServerJoinCredential), verify, write the PKI
//
// ResolveToken and TokenSource find the token among the flags, the
// environment and DATA_DIR/token; WriteTokenFile writes the full token
// there (0600, never through a link). No error carries the token.
package cluster
