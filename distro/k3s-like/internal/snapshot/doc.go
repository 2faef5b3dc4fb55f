// Package snapshot is k3s's etcd snapshots for the embedded etcd: `k3s-like
// etcd-snapshot save|ls|delete|prune` against a running server's member,
// and a server's scheduled snapshots (--etcd-snapshot-schedule-cron,
// --etcd-snapshot-retention).
//
//	Save      // components/etcd.SaveSnapshot of the local member (loopback,
//	          // the server's etcd client certificate) into
//	          // --etcd-snapshot-dir/NAME-NODE-UNIXTIME, verified; its size and revision
//	List      // every file there, verified (etcd.VerifySnapshot): size, revision, or why not
//	Delete    // by name, only files in the directory
//	Prune     // keep the newest --etcd-snapshot-retention of a prefix (this node's)
//	Scheduled // the harness component: Save on the cron schedule, then Prune
//
// A snapshot holds the datastore only: the server's PKI (DATA_DIR/tls) and
// token are not in it; a restore (--cluster-reset-restore-path) needs them
// on the server that restores.
package snapshot
