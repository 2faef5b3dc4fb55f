// Package rbacapply applies the server's own ClusterRoles and their
// bindings by server-side apply: what the server's own clients may do.
// The server's node-join applies them (package cluster), and the bench
// applies FeaturePublisherAccess to B's apiserver, so that B's feature
// discovery runs as A's does.
package rbacapply
