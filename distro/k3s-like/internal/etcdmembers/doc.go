// Package etcdmembers is k3s's etcd member-removal controller for the
// servers of an embedded etcd cluster: deleting a server's Node removes
// its etcd member.
//
//	Remover.Run               // on every server, under leader election (Lease
//	                          // kube-system/k3s-like-etcd-member-removal)
//	    while leading, every few seconds and on each Node event:
//	        reconcile         // the member list (the local member) and the Nodes:
//	            a Node named as a member gets the finalizer Finalizer
//	            a deleted Node with it: its member removed (never the last
//	            voting member), then the finalizer
//
// The finalizer makes the removal happen even when no server watched at
// the moment of the deletion. A member whose server runs no node
// (--disable-agent) has no Node and is never removed this way; `k3s-like
// etcd-snapshot` and --cluster-reset are the rest of the runbook
// (docs/etcd-ha.md).
package etcdmembers
