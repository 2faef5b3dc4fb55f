// Package etcd runs an embedded single-member etcd (go.etcd.io/etcd/server/v3/embed)
// as a harness component, the datastore of a single-binary control plane:
//
//	db := etcd.New(etcd.Config{
//		DataDir:       filepath.Join(dataDir, "etcd"),
//		CertFile:      files.EtcdServer.CertFile, // components/pki
//		KeyFile:       files.EtcdServer.KeyFile,
//		TrustedCAFile: files.EtcdCA.CertFile,
//	})
//	h.Add(db, nil)
//	h.Add(components.NewAPIServer(), append(args, "--etcd-servers="+db.ClientURL()), db.Name())
//
// It listens on loopback only: clients on https with client-certificate
// authentication (every client needs a certificate signed by TrustedCAFile),
// the peer port too (a single member has no peers, but etcd listens on it;
// plain http would let any local user read /members, /raft and /leases). It is
// configured by Config, not by arguments: AddFlags adds no flags.
//
// Run starts etcd, reports ready once etcd serves clients (Ready), and
// serves until its context ends; then it closes etcd and returns nil. If
// etcd stops or fails on its own, Run returns the error, and the harness
// stops the rest of the control plane. Where etcd gives up itself (a zap
// Panic or Fatal entry of its logger, e.g. "failed to create WAL" or
// "failed to commit tx" on a full disk), the error names the data dir: a
// Panic during the start is Run's error ("embedded etcd: data dir DIR:
// failed to create WAL: no space left on device"), not a stack trace; a
// Fatal still exits the process with status 1, as etcd means it to, after a
// line that names the data dir. Nothing is listened on or written
// before Run: as a harness component, etcd starts only after the barrier
// passed.
//
// Rolling back to an older etcd: each Kubernetes minor embeds its own etcd
// minor (1.36: 3.6, 1.37: 3.7), and an etcd refuses a data dir whose
// storage version is newer than itself (Run checks before starting and
// returns a *StorageVersionError). Config.StorageVersion one minor back
// (or SetStorageVersion, before Run) runs etcd's own downgrade procedure on
// this single member: once it serves, the downgrade to that minor is
// enabled, the member migrates its storage schema, and Ready waits for it;
// the member serves on, and after it stops the older etcd opens the data
// dir. A later run without it cancels the downgrade and the storage returns
// to the embedded minor.
//
// etcd logs through the logr.Logger of Run's context (klog.FromContext,
// named "etcd"), not as JSON lines of its own on stderr: the harness's
// components all log through klog. Config.LogLevel filters what etcd logs
// (default warn); see NewZapLogger.
package etcd
