// Package bootstrap shares the cluster PKI between the servers of one
// cluster through their datastore, as k3s does with its join token: the
// first server stores its CAs and service-account key pair in etcd,
// encrypted with a key derived from --token; a later server with the same
// token fetches them before it makes anything, so every server's
// certificates, kubeconfigs and tokens are accepted by every other. A server
// that cannot get the cluster's PKI (wrong token, unreadable data) fails; it
// never makes a CA of its own once the cluster has one, nor at all when its
// token pins a CA (a token of a cluster that exists).
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeharness/kubeharness/components/pki"
)

// Key is where the encrypted PKI lives in etcd.
const Key = "/kubeharness/bootstrap/pki"

// Files are the cluster-wide secrets, relative to the PKI directory: the CAs
// (certificate and key) and the service-account key pair, as package pki
// lays them out (pki.Layout.ClusterFiles). Leaf certificates are not
// shared: each server issues its own from these CAs.
var Files = pki.Layout{}.ClusterFiles()

// added are the CAs of Files that records of older releases lack, with
// their common names: a server that opens such a record makes them and
// adds them to it (complete).
var added = map[pki.CertKey]string{pki.Layout{}.KubeletServingCA(): pki.KubeletServingCAName}

// errRecordChanged: the record changed between this server's read and its
// write of the completed record; Sync reads it again.
var errRecordChanged = errors.New("the cluster's PKI record changed while this server completed it")

// Exists reports whether the datastore holds a cluster's PKI record.
func Exists(ctx context.Context, kv clientv3.KV) (bool, error) {
	resp, err := kv.Get(ctx, Key, clientv3.WithCountOnly())
	if err != nil {
		return false, fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
	}
	return resp.Count > 0, nil
}

// ErrWrongToken is returned when the cluster's PKI is in the datastore but
// cannot be decrypted with this server's token.
var ErrWrongToken = errors.New("the cluster's PKI in the datastore cannot be decrypted with this --token: use the token of the first server")

// NoClusterError is Sync's refusal, before it generates or writes anything,
// of a token that pins a CA on a datastore that holds no cluster: such a
// token belongs to a cluster that exists, whose datastore is another one or
// was wiped. Starting one here would publish a PKI the token does not pin,
// which every server of that cluster would then refuse.
type NoClusterError struct {
	// Pinned is the sha256 of the server CA the token pins.
	Pinned string
}

func (e *NoClusterError) Error() string {
	return fmt.Sprintf("the token pins the cluster CA sha256 %s, but the datastore holds no cluster (no %s): the token belongs to a cluster whose datastore is another one or was wiped; nothing was generated or written. "+
		"To start a cluster on this datastore, give its first server only the token's secret (the part after ::server:), or no token and a data dir without one", e.Pinned, Key)
}

// Config is what Sync needs.
type Config struct {
	// KV is the datastore.
	KV clientv3.KV
	// Secret is the token's secret: the record's key derives from it.
	Secret string
	// Pinned is the sha256 (lower-case hex) of server-ca.crt that the full
	// token pins, "" for a bare secret. With a pin, Sync never starts a
	// cluster, and accepts a record only if its server-ca.crt has that
	// hash and its server-ca.key is that certificate's key (verify).
	Pinned string
	// Dir is the PKI directory.
	Dir string
	// Generate makes this server's PKI in Dir: all of it on the first
	// server, only its leaves (from the cluster's files already in Dir)
	// on the others.
	Generate func() error
	// Log says when a record is re-sealed; the zero Logger discards.
	Log logr.Logger
}

// Sync makes c.Dir hold the cluster's shared PKI files.
//
// If the datastore has them, they are decrypted with c.Secret, verified
// (verify: every file there and consistent, the pin when there is one) and
// written to c.Dir — a different file already there is an error: that data
// dir belongs to another cluster — and then c.Generate issues this
// server's leaves. A record sealed with weaker parameters than seal's (the
// PBKDF2 of older releases) is re-sealed once it passed those checks.
//
// If it has none: with a pin, *NoClusterError, before anything is
// generated or written. Without, c.Generate makes this server's PKI in
// c.Dir and its shared files are stored — unless another server stored its
// own meanwhile, in which case those are taken instead and c.Generate is
// called again to reissue the leaves from them.
func Sync(ctx context.Context, c Config) error {
	if c.Secret == "" {
		return errors.New("a server on an external datastore needs --token: every server of the cluster must share one PKI")
	}
	resp, err := c.KV.Get(ctx, Key)
	if err != nil {
		return fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
	}
	for attempt := 0; len(resp.Kvs) == 1; attempt++ {
		err := c.fetch(ctx, resp.Kvs[0].Value, resp.Kvs[0].ModRevision)
		if !errors.Is(err, errRecordChanged) || attempt == 2 {
			return err
		}
		if resp, err = c.KV.Get(ctx, Key); err != nil {
			return fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
		}
	}
	if c.Pinned != "" {
		return &NoClusterError{Pinned: c.Pinned}
	}
	if err := c.Generate(); err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, name := range Files {
		b, err := os.ReadFile(filepath.Join(c.Dir, name))
		if err != nil {
			return err
		}
		files[name] = b
	}
	data, err := seal(c.Secret, files)
	if err != nil {
		return err
	}
	txn, err := c.KV.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(Key), "=", 0)).
		Then(clientv3.OpPut(Key, string(data))).
		Else(clientv3.OpGet(Key)).
		Commit()
	if err != nil {
		return fmt.Errorf("storing the cluster's PKI in the datastore: %w", err)
	}
	if txn.Succeeded {
		return nil
	}
	// Another server was first: take its PKI, replacing the one just made.
	other := txn.Responses[0].GetResponseRange().Kvs[0]
	return c.fetch(ctx, other.Value, other.ModRevision, Files...)
}

// fetch opens the record data (at modRevision), verifies its files, writes
// them to c.Dir, re-seals the record if it is stale, then calls c.Generate
// to issue this server's leaves. replace lists files that may be
// overwritten even if they differ (the ones this server just made).
func (c Config) fetch(ctx context.Context, data []byte, modRevision int64, replace ...string) error {
	files, s, err := open(c.Secret, data)
	if err != nil {
		return err
	}
	completed, err := complete(files)
	if err != nil {
		return err
	}
	if err := verify(files, c.Pinned); err != nil {
		return err
	}
	if completed != nil {
		// Stored before anything is written here, so that every server
		// of the cluster gets the same CA, or read again if another
		// server stored its own first.
		if _, err := c.store(ctx, files, modRevision); err != nil {
			return err
		}
		c.Log.Info("Added to the cluster's PKI record what this release shares and the record lacked", "files", completed)
		s = sealed{KDF: kdfArgon2id, Time: argonTime, Memory: argonMemoryKiB, Threads: argonThreads}
	}
	if err := writeFiles(c.Dir, files, replace); err != nil {
		return err
	}
	if s.stale() {
		c.reseal(ctx, files, s, modRevision)
	}
	return c.Generate()
}

// complete adds to files, made here, each CA of added that a record of an
// older release lacks (both of its files), and returns their names; a CA
// with only one of its two files is a malformed record.
func complete(files map[string][]byte) ([]string, error) {
	var names []string
	for ca, cn := range added {
		_, crt := files[ca.CertFile]
		_, key := files[ca.KeyFile]
		switch {
		case crt && key:
			continue
		case crt || key:
			return nil, &RecordError{Field: ca.CertFile, Problem: "only one of " + ca.CertFile + " and " + ca.KeyFile + " in the decrypted record"}
		}
		dir, err := os.MkdirTemp("", "kubeharness-ca-")
		if err != nil {
			return nil, err
		}
		made, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), cn)
		var crtPEM, keyPEM []byte
		if err == nil {
			crtPEM = made.CertPEM()
			keyPEM, err = os.ReadFile(made.KeyFile)
		}
		_ = os.RemoveAll(dir)
		if err != nil {
			return nil, fmt.Errorf("making %s, which the cluster's PKI record lacks: %w", ca.CertFile, err)
		}
		files[ca.CertFile], files[ca.KeyFile] = crtPEM, keyPEM
		names = append(names, ca.CertFile, ca.KeyFile)
	}
	return names, nil
}

// store writes files, sealed by seal, in place of the record that was at
// modRevision, and returns the revision it wrote; errRecordChanged if
// another server wrote the record meanwhile.
func (c Config) store(ctx context.Context, files map[string][]byte, modRevision int64) (int64, error) {
	data, err := seal(c.Secret, files)
	if err != nil {
		return 0, err
	}
	txn, err := c.KV.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(Key), "=", modRevision)).
		Then(clientv3.OpPut(Key, string(data))).
		Commit()
	switch {
	case err != nil:
		return 0, fmt.Errorf("storing the cluster's PKI record: %w", err)
	case !txn.Succeeded:
		return 0, errRecordChanged
	}
	return txn.Header.Revision, nil
}

// reseal stores files sealed by seal in place of the record that was at
// modRevision, sealed as from says — only if it is still there: a record
// another server wrote meanwhile (its own re-seal, most likely) is left as
// it is. A failure is logged, not returned: the server has its PKI, the
// record still opens, and the next start tries again.
func (c Config) reseal(ctx context.Context, files map[string][]byte, from sealed, modRevision int64) {
	rev, err := c.store(ctx, files, modRevision)
	switch {
	case errors.Is(err, errRecordChanged):
		c.Log.Info("The cluster's PKI record changed since this server read it (another server re-sealed or rewrote it): left as it is", "readRevision", modRevision)
	case err != nil:
		c.Log.Error(err, "Re-sealing the cluster's PKI record failed: it stays as it was, and the next start tries again", "kdf", from.String())
	default:
		c.Log.Info("Re-sealed the cluster's PKI record in the datastore", "from", from.String(),
			"to", (&sealed{KDF: kdfArgon2id, Time: argonTime, Memory: argonMemoryKiB, Threads: argonThreads}).String(), "revision", rev)
	}
}
