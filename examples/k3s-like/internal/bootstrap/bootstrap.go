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
	"golang.org/x/crypto/argon2"

	"github.com/kubeharness/kubeharness/components/pki"
)

// Key is where the encrypted PKI lives in etcd.
const Key = "/kubeharness/bootstrap/pki"

// Files are the cluster-wide secrets, relative to the PKI directory: the CAs
// (certificate and key) and the service-account key pair, as package pki
// lays them out (pki.Layout.ClusterFiles). Leaf certificates are not
// shared: each server issues its own from these CAs.
var Files = pki.Layout{}.ClusterFiles()

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

// The record in the datastore (JSON): the key derivation and its
// parameters, so they can be raised later without breaking the records
// already written, a fresh salt and nonce, and the AES-256-GCM ciphertext
// of the files, with Key as additional data.
type sealed struct {
	// KDF is "argon2id"; a record without it was written before the KDF
	// was recorded, with PBKDF2-SHA256 at 100,000 iterations, and is still
	// read.
	KDF     string `json:"kdf,omitempty"`
	Time    uint32 `json:"time,omitempty"`    // argon2id passes
	Memory  uint32 `json:"memory,omitempty"`  // argon2id memory, KiB
	Threads uint8  `json:"threads,omitempty"` // argon2id lanes
	Salt    []byte `json:"salt"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

// The parameters seal writes: RFC 9106's second recommended option for
// argon2id (t=3, 64 MiB, p=4), the one for machines that cannot give 2 GiB
// to a key derivation. open accepts any within the bounds below.
const (
	kdfArgon2id    = "argon2id"
	argonTime      = 3
	argonMemoryKiB = 64 * 1024
	argonThreads   = 4
	keyLen         = 32
	saltLen        = 16
)

// Bounds open checks before it derives anything: a record that asks for
// more (a corrupted one, or one written to make every server exhaust its
// memory) is refused, and so is one weaker than OWASP's floor for argon2id.
const (
	minTime, maxTime           = 1, 16
	minMemoryKiB, maxMemoryKiB = 19 * 1024, 1024 * 1024
	minThreads, maxThreads     = 1, 64
	minSalt, maxSalt           = 16, 64
	legacyIterations           = 100_000
)

// RecordError says which field of the datastore's PKI record is malformed.
//
//	the cluster's PKI record in the datastore is malformed: nonce: 5 bytes, want 12
type RecordError struct {
	Field, Problem string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("the cluster's PKI record in the datastore is malformed: %s: %s", e.Field, e.Problem)
}

// check validates every field of s that a derivation or decryption would
// trust, for an AEAD whose nonce is nonceSize bytes and whose tag is
// overhead bytes.
func (s *sealed) check(nonceSize, overhead int) error {
	bad := func(field, format string, a ...any) error {
		return &RecordError{Field: field, Problem: fmt.Sprintf(format, a...)}
	}
	switch s.KDF {
	case kdfArgon2id:
		if s.Time < minTime || s.Time > maxTime {
			return bad("time", "%d, want %d to %d", s.Time, minTime, maxTime)
		}
		if s.Memory < minMemoryKiB || s.Memory > maxMemoryKiB {
			return bad("memory", "%d KiB, want %d to %d", s.Memory, minMemoryKiB, maxMemoryKiB)
		}
		if s.Threads < minThreads || s.Threads > maxThreads {
			return bad("threads", "%d, want %d to %d", s.Threads, minThreads, maxThreads)
		}
	case "":
		if s.Time != 0 || s.Memory != 0 || s.Threads != 0 {
			return bad("kdf", "missing, but argon2id parameters are set")
		}
	default:
		return bad("kdf", "%q, want %q", s.KDF, kdfArgon2id)
	}
	if len(s.Salt) < minSalt || len(s.Salt) > maxSalt {
		return bad("salt", "%d bytes, want %d to %d", len(s.Salt), minSalt, maxSalt)
	}
	if len(s.Nonce) != nonceSize {
		return bad("nonce", "%d bytes, want %d", len(s.Nonce), nonceSize)
	}
	if len(s.Data) < overhead {
		return bad("data", "%d bytes, shorter than the %d-byte tag", len(s.Data), overhead)
	}
	return nil
}

// key derives the AES-256 key from the token with s's KDF.
func (s *sealed) key(token string) ([]byte, error) {
	if s.KDF == kdfArgon2id {
		return argon2.IDKey([]byte(token), s.Salt, s.Time, s.Memory, s.Threads, keyLen), nil
	}
	return pbkdf2.Key(sha256.New, token, s.Salt, legacyIterations, keyLen)
}

func newGCM(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// gcmSizes are AES-GCM's nonce and tag sizes, for check before a key exists.
const gcmNonceSize, gcmTagSize = 12, 16

// seal encrypts files (name → content) with a key derived from the token
// by argon2id, with a fresh salt and nonce.
func seal(token string, files map[string][]byte) ([]byte, error) {
	plain, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	s := sealed{KDF: kdfArgon2id, Time: argonTime, Memory: argonMemoryKiB, Threads: argonThreads,
		Salt: make([]byte, saltLen), Nonce: make([]byte, gcmNonceSize)}
	if _, err := rand.Read(s.Salt); err != nil {
		return nil, err
	}
	if _, err := rand.Read(s.Nonce); err != nil {
		return nil, err
	}
	key, err := s.key(token)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	s.Data = gcm.Seal(nil, s.Nonce, plain, []byte(Key))
	return json.Marshal(s)
}

// open decrypts what seal made (or a record from before the KDF was
// recorded). A malformed record is a *RecordError, before any derivation;
// a record the token does not open is ErrWrongToken.
func open(token string, data []byte) (map[string][]byte, error) {
	var s sealed
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, &RecordError{Field: "record", Problem: err.Error()}
	}
	if err := s.check(gcmNonceSize, gcmTagSize); err != nil {
		return nil, err
	}
	key, err := s.key(token)
	if err != nil {
		return nil, err
	}
	gcm, err := newGCM(key)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, s.Nonce, s.Data, []byte(Key))
	if err != nil {
		return nil, ErrWrongToken
	}
	var files map[string][]byte
	if err := json.Unmarshal(plain, &files); err != nil {
		return nil, &RecordError{Field: "data", Problem: "decrypted, but not the PKI files: " + err.Error()}
	}
	return files, nil
}

// Sync makes dir hold the cluster's shared PKI files. If the datastore has
// them, they are decrypted with token, passed to check (nil: no check) —
// which can refuse them before anything is written, as a pinned CA does —
// and written to dir (a different CA already in dir is an error: that data
// dir belongs to another cluster).
// If it has none, generate is called to make this server's PKI in dir, and
// its shared files are stored — unless another server stored its own
// meanwhile, in which case those are taken instead and generate is called
// again to reissue the leaves from them.
func Sync(ctx context.Context, kv clientv3.KV, token, dir string, generate func() error, check func(files map[string][]byte) error) error {
	if token == "" {
		return errors.New("a server on an external datastore needs --token: every server of the cluster must share one PKI")
	}
	resp, err := kv.Get(ctx, Key)
	if err != nil {
		return fmt.Errorf("reading the cluster's PKI from the datastore: %w", err)
	}
	if len(resp.Kvs) == 1 {
		return fetch(token, dir, resp.Kvs[0].Value, generate, check)
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
	return fetch(token, dir, other, generate, check, Files...)
}

// fetch writes the cluster's files to dir, then calls generate to issue
// this server's leaves from them. replace lists files that may be
// overwritten even if they differ (the ones this server just made).
func fetch(token, dir string, data []byte, generate func() error, check func(map[string][]byte) error, replace ...string) error {
	files, err := open(token, data)
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(files); err != nil {
			return err
		}
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
