// Package bootstrap shares the cluster PKI between the servers of one
// cluster through their datastore, as k3s does with its join token: the
// first server stores its CAs and service-account key pair in etcd,
// encrypted with a key derived from --token; a later server with the same
// token fetches them before it makes anything, so every server's
// certificates, kubeconfigs and tokens are accepted by every other. A server
// that cannot get the cluster's PKI (wrong token, unreadable data) fails; it
// never makes a CA of its own once the cluster has one.
package bootstrap

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// ErrWrongToken is returned when the cluster's PKI is in the datastore but
// cannot be decrypted with this server's token.
var ErrWrongToken = errors.New("the cluster's PKI in the datastore cannot be decrypted with this --token: use the token of the first server")

type sealed struct {
	Salt  []byte `json:"salt"`
	Nonce []byte `json:"nonce"`
	Data  []byte `json:"data"`
}

func aead(token string, salt []byte) (cipher.AEAD, error) {
	key, err := pbkdf2.Key(sha256.New, token, salt, 100_000, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts files (name → content) with the token.
func seal(token string, files map[string][]byte) ([]byte, error) {
	plain, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	s := sealed{Salt: make([]byte, 16)}
	if _, err := rand.Read(s.Salt); err != nil {
		return nil, err
	}
	gcm, err := aead(token, s.Salt)
	if err != nil {
		return nil, err
	}
	s.Nonce = make([]byte, gcm.NonceSize())
	if _, err := rand.Read(s.Nonce); err != nil {
		return nil, err
	}
	s.Data = gcm.Seal(nil, s.Nonce, plain, []byte(Key))
	return json.Marshal(s)
}

// open decrypts what seal made.
func open(token string, data []byte) (map[string][]byte, error) {
	var s sealed
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the cluster's PKI in the datastore is not readable: %w", err)
	}
	gcm, err := aead(token, s.Salt)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, s.Nonce, s.Data, []byte(Key))
	if err != nil {
		return nil, ErrWrongToken
	}
	var files map[string][]byte
	if err := json.Unmarshal(plain, &files); err != nil {
		return nil, fmt.Errorf("the cluster's PKI in the datastore is not readable: %w", err)
	}
	return files, nil
}

// Sync makes dir hold the cluster's shared PKI files. If the datastore has
// them, they are decrypted with token and written to dir (a different CA
// already in dir is an error: that data dir belongs to another cluster).
// If it has none, generate is called to make this server's PKI in dir, and
// its shared files are stored — unless another server stored its own
// meanwhile, in which case those are taken instead and generate is called
// again to reissue the leaves from them.
func Sync(ctx context.Context, kv clientv3.KV, token, dir string, generate func() error) error {
	if token == "" {
		return errors.New("a server on an external datastore needs --token: every server of the cluster must share one PKI")
	}
	resp, err := kv.Get(ctx, Key)
	if err != nil {
		return fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
	}
	if len(resp.Kvs) == 1 {
		return fetch(token, dir, resp.Kvs[0].Value, generate)
	}
	if err := generate(); err != nil {
		return err
	}
	files := map[string][]byte{}
	for _, name := range Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		files[name] = b
	}
	data, err := seal(token, files)
	if err != nil {
		return err
	}
	txn, err := kv.Txn(ctx).
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
	other := txn.Responses[0].GetResponseRange().Kvs[0].Value
	return fetch(token, dir, other, generate, Files...)
}

// fetch writes the cluster's files to dir, then calls generate to issue
// this server's leaves from them. replace lists files that may be
// overwritten even if they differ (the ones this server just made).
func fetch(token, dir string, data []byte, generate func() error, replace ...string) error {
	files, err := open(token, data)
	if err != nil {
		return err
	}
	mayReplace := map[string]bool{}
	for _, r := range replace {
		mayReplace[r] = true
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range Files {
		content, ok := files[name]
		if !ok {
			return fmt.Errorf("the cluster's PKI in the datastore lacks %s", name)
		}
		path := filepath.Join(dir, name)
		if have, err := os.ReadFile(path); err == nil && string(have) != string(content) && !mayReplace[name] {
			return fmt.Errorf("%s differs from the cluster's: this data dir belongs to another cluster; use a fresh --data-dir", path)
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(path, content, mode); err != nil {
			return err
		}
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
	}
	return generate()
}
