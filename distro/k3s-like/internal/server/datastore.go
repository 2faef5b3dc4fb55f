package server

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/util/version"
	basever "k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/scoping"
)

// etcdMinorOf is the etcd minor the k3s-like of each Kubernetes minor
// embeds: the one its k8s.io/kubernetes requires (v1.36.3: etcd v3.6.8,
// components/go.k8s-1.36.mod; v1.37.2: v3.7.0, components/go.mod). ok is
// false for a minor this binary was not built or rehearsed against.
func etcdMinorOf(k8sMinor string) (etcdMinor string, ok bool) {
	switch k8sMinor {
	case "1.36":
		return "3.6", true
	case "1.37":
		return "3.7", true
	}
	return "", false
}

// keepDatastoreFor is the barrier hook that makes a rollback possible
// (KEP-4330: run the new binary emulating the previous minor, roll back if
// needed): when the control plane emulates an older Kubernetes minor whose
// k3s-like embeds an older etcd, the embedded etcd keeps its storage at
// that etcd (etcd's downgrade, see components/etcd), so the older binary
// opens the data dir after this one stops. At its own minor, etcd's own
// storage version (a downgrade an earlier run left is cancelled).
func keepDatastoreFor(db *etcd.Etcd, log logr.Logger) func(*scoping.Plan) error {
	return func(p *scoping.Plan) error {
		emu, err := version.Parse(p.EmulationVersion)
		if err != nil {
			return fmt.Errorf("emulation version %q: %w", p.EmulationVersion, err)
		}
		minor := fmt.Sprintf("%d.%d", emu.Major(), emu.Minor())
		if minor == basever.DefaultKubeBinaryVersion {
			return db.SetStorageVersion("")
		}
		want, ok := etcdMinorOf(minor)
		switch {
		case !ok:
			log.Info(fmt.Sprintf("Warning: emulating %s: which etcd the k3s-like of %s embeds is not known here; the datastore stays at etcd %s, and an older etcd may not open it",
				minor, minor, etcd.BinaryVersion()))
			return db.SetStorageVersion("")
		case want == etcd.BinaryVersion():
			return db.SetStorageVersion("")
		}
		log.Info(fmt.Sprintf("Emulating %s: keeping the datastore at etcd %s (the etcd of k3s-like %s) for a rollback", minor, want, minor))
		return db.SetStorageVersion(want)
	}
}

// explainDatastore turns the embedded etcd's refusal of a newer data dir
// into what to do about it.
func explainDatastore(err error, dataDir string) error {
	var sv *etcd.StorageVersionError
	if !errors.As(err, &sv) {
		return err
	}
	return fmt.Errorf("the datastore in %s was written by etcd %s, newer than this binary's etcd %s (k3s-like %s): "+
		"to roll back, start the newer k3s-like on it once with --emulated-version=%s (it returns the datastore to etcd %s), stop it, then start this binary",
		dataDir, sv.Storage, sv.Binary, basever.DefaultKubeBinaryVersion, basever.DefaultKubeBinaryVersion, sv.Binary)
}
