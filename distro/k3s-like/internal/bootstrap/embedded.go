package bootstrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/kubeharness/kubeharness/components/pki"
)

// EmbeddedFiles are what the servers of one embedded etcd cluster share:
// Files and the etcd CA, which signs every member's peer, serving and
// client certificates.
var EmbeddedFiles = append(slices.Clone(Files), pki.Layout{}.EtcdCA().CertFile, pki.Layout{}.EtcdCA().KeyFile)

// Seal reads names from the PKI directory dir and seals them with a key
// derived from secret, as the datastore's record is sealed: argon2id,
// AES-256-GCM.
func Seal(secret, dir string, names []string) ([]byte, error) {
	files := map[string][]byte{}
	for _, name := range names {
		b, err := readRegular(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		files[name] = b
	}
	return seal(secret, files)
}

// Opens reports whether data is a record that secret opens and whose
// files are those in dir (names): a record another server need not
// replace.
func Opens(data []byte, secret, dir string, names []string) bool {
	files, _, err := open(secret, data)
	if err != nil {
		return false
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != string(files[name]) {
			return false
		}
	}
	return true
}

// Install opens a record made by Seal with secret, verifies it (every one
// of names there and consistent, and the server CA the one pinned) and
// only then writes names to dir; a file already there that differs is an
// error (the data dir belongs to another cluster), so either every file
// is written or none is. A record the secret does not open is
// ErrWrongToken; one that fails the checks a *RecordError or *PinError.
func Install(data []byte, secret, pinned, dir string, names []string) error {
	if pinned == "" {
		return fmt.Errorf("installing the cluster's PKI: a joining server needs the full token, which pins the cluster CA")
	}
	files, _, err := open(secret, data)
	if err != nil {
		return err
	}
	if err := verifyNames(files, pinned, names); err != nil {
		return err
	}
	return writeNames(dir, files, names, nil)
}
