// Package server is `k3s-like server`: the control plane (embedded etcd or
// an external datastore, kube-apiserver, kube-scheduler,
// kube-controller-manager) and, unless --disable-agent, a node, as
// goroutines of one process.
//
//	NewCommand: the shared flags (package cli), the server's, the node's
//	run:
//	    check           // every flag; each error one line naming it
//	    componentArgs   // components/controlplane's defaults, the shorthands, --kube-*-arg
//	    newControlPlane // the harness: etcd, the three components, the feature
//	                    // publisher and summarizer, node-join, the serving
//	                    // approver, the manifests, the node
//	    --dry-run: printPlan, and nothing runs
//	    daemon.Run, with the server's barrier hooks:
//	        log how each component runs
//	        keepDatastoreFor   // the embedded etcd's storage version, for a rollback
//	        ensurePKI          // local, or the cluster's from the datastore (package bootstrap)
//	        the status endpoint (package status)
//	        prepareNode        // the node's PKI and containerd's files
//
// Certificates, keys, kubeconfigs and the token are written, and the
// status listener opened, only once the barrier passed: a conflict leaves
// the data dir as it was and opens no port.
package server
