package e2e

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/crypto/argon2"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
)

// bootstrapEtcd is externalEtcd with a client of that etcd, to look at
// what the servers wrote.
func bootstrapEtcd(t *testing.T) ([]string, *clientv3.Client) {
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	e, err := testenv.StartEtcd(filepath.Join(dir, "etcd"), files)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	c, err := e.Client()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return []string{
		"--datastore-endpoint=" + e.ClientURL,
		"--datastore-cafile=" + files.EtcdCA.CertFile,
		"--datastore-certfile=" + files.APIServerEtcdClient.CertFile,
		"--datastore-keyfile=" + files.APIServerEtcdClient.KeyFile,
	}, c
}

// writeToken writes token to a 0600 file and returns its path.
func writeToken(t *testing.T, token string) string {
	path := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(path, []byte(token+"\n"), 0o600))
	return path
}

// TestBootstrapPinnedTokenOnEmptyDatastore (issue 30): a server given a
// full token (K10<CA sha256>::server:<secret>) on a datastore that holds no
// cluster exits 1 naming why, with nothing written: no key and no new
// revision in etcd (read with an etcd client), no DATA_DIR/tls, no
// DATA_DIR/token. Before, it generated and published a PKI of its own and
// refused it only after, so the cluster's real servers then failed.
func TestBootstrapPinnedTokenOnEmptyDatastore(t *testing.T) {
	ds, c := bootstrapEtcd(t)
	ctx := t.Context()
	before, err := c.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	require.Zero(t, before.Count, "a fresh datastore")

	pin := strings.Repeat("ab", 32)
	s := newServer(t, t.TempDir())
	s.start(append(slices.Clip(ds), "--token-file="+writeToken(t, "K10"+pin+"::server:pinned-secret"))...)
	code, _ := s.wait(60 * time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(s.stderr.String()), "the token pins the cluster CA sha256 "+pin+", but the datastore holds no cluster")
	assert.Contains(t, lastLine(s.stderr.String()), "nothing was generated or written")
	assert.False(t, strings.Contains(s.stderr.String(), "pinned-secret"), "the secret is in no log line")

	after, err := c.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, after.Count, "no key in the datastore")
	assert.Equal(t, before.Header.Revision, after.Header.Revision, "no write to the datastore at all")
	entries, _ := os.ReadDir(filepath.Join(s.dataDir, "tls"))
	assert.Empty(t, entries, "no PKI generated")
	_, err = os.Stat(filepath.Join(s.dataDir, "token"))
	assert.True(t, os.IsNotExist(err), "no token file")
}

// legacyRecord is the cluster's PKI record as releases before argon2id
// wrote it: no kdf field, AES-256-GCM under PBKDF2-SHA256 (100,000
// iterations) of the secret, the record's key as additional data.
func legacyRecord(t *testing.T, secret string, files map[string][]byte) []byte {
	plain, err := json.Marshal(files)
	require.NoError(t, err)
	salt, nonce := make([]byte, 16), make([]byte, 12)
	_, _ = rand.Read(salt)
	_, _ = rand.Read(nonce)
	key, err := pbkdf2.Key(sha256.New, secret, salt, 100_000, 32)
	require.NoError(t, err)
	data := newTestGCM(t, key).Seal(nil, nonce, plain, []byte(bootstrap.Key))
	out, err := json.Marshal(map[string][]byte{"salt": salt, "nonce": nonce, "data": data})
	require.NoError(t, err)
	return out
}

func newTestGCM(t *testing.T, key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	return gcm
}

// argon2Record is an argon2id record's header and what it decrypts to with
// secret, read here without package bootstrap's code.
type argon2Record struct {
	KDF     string `json:"kdf"`
	Time    uint32 `json:"time"`
	Memory  uint32 `json:"memory"`
	Threads uint8  `json:"threads"`
	Salt    []byte `json:"salt"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

func (r argon2Record) open(t *testing.T, secret string) map[string][]byte {
	require.Equal(t, "argon2id", r.KDF)
	gcm := newTestGCM(t, argon2.IDKey([]byte(secret), r.Salt, r.Time, r.Memory, r.Threads, 32))
	plain, err := gcm.Open(nil, r.Nonce, r.Data, []byte(bootstrap.Key))
	require.NoError(t, err, "the re-sealed record opens with the secret")
	var files map[string][]byte
	require.NoError(t, json.Unmarshal(plain, &files))
	return files
}

// TestBootstrapLegacyRecordResealed (issue 30): a PBKDF2 record, written
// to the datastore directly as older releases wrote it, is re-sealed with
// argon2id (t=3, 64 MiB, p=4) by the first server that opens it — with the
// full token, which it verifies first — as an etcd client then reads: its
// kdf field changed, and it decrypts to the same files. The server logs the
// re-seal and serves; a second server with the same token opens the
// re-sealed record, gets the same CAs, serves, and re-seals nothing.
func TestBootstrapLegacyRecordResealed(t *testing.T) {
	ds, c := bootstrapEtcd(t)
	ctx := t.Context()
	pkiDir := t.TempDir()
	_, err := pki.Ensure(pki.Config{Dir: pkiDir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	files := map[string][]byte{}
	for _, name := range bootstrap.Files {
		files[name], err = os.ReadFile(filepath.Join(pkiDir, name))
		require.NoError(t, err)
	}
	const secret = "legacy-e2e-secret"
	_, err = c.Put(ctx, bootstrap.Key, string(legacyRecord(t, secret, files)))
	require.NoError(t, err)
	resp, err := c.Get(ctx, bootstrap.Key)
	require.NoError(t, err)
	legacyRev := resp.Kvs[0].ModRevision
	require.NotContains(t, string(resp.Kvs[0].Value), `"kdf"`)

	sum := sha256.Sum256(files["server-ca.crt"])
	token := writeToken(t, "K10"+hex.EncodeToString(sum[:])+"::server:"+secret)
	a := newServer(t, t.TempDir())
	a.start(append(slices.Clip(ds), "--token-file="+token, "--node-name=server-a")...)
	a.waitReady(90 * time.Second)
	assert.True(t, strings.Contains(a.stderr.String(), `"Re-sealed the cluster's PKI record in the datastore" logger="k3s-like" from="PBKDF2-SHA256 100000 iterations"`),
		"server A logs the re-seal")
	assert.False(t, strings.Contains(a.stderr.String(), secret), "the secret is in no log line")

	resp, err = c.Get(ctx, bootstrap.Key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	resealedRev := resp.Kvs[0].ModRevision
	assert.Greater(t, resealedRev, legacyRev)
	var rec argon2Record
	require.NoError(t, json.Unmarshal(resp.Kvs[0].Value, &rec))
	assert.Equal(t, []any{"argon2id", uint32(3), uint32(64 * 1024), uint8(4)}, []any{rec.KDF, rec.Time, rec.Memory, rec.Threads}, "the kdf field changed")
	assert.Equal(t, files, rec.open(t, secret), "the same files, re-sealed")
	for _, name := range bootstrap.Files {
		got, err := os.ReadFile(filepath.Join(a.dataDir, "tls", name))
		require.NoError(t, err)
		assert.Equal(t, string(files[name]), string(got), "server A has the cluster's %s", name)
	}
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := a.wait(30 * time.Second)
	assert.Equal(t, 0, code)

	b := newServer(t, t.TempDir())
	b.start(append(slices.Clip(ds), "--token-file="+token, "--node-name=server-b")...)
	b.waitReady(90 * time.Second)
	assert.False(t, strings.Contains(b.stderr.String(), "Re-sealed"), "server B re-seals nothing")
	got, err := os.ReadFile(filepath.Join(b.dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, string(files["server-ca.crt"]), string(got), "server B opened the re-sealed record")
	resp, err = c.Get(ctx, bootstrap.Key)
	require.NoError(t, err)
	assert.Equal(t, resealedRev, resp.Kvs[0].ModRevision, "re-sealed once")
	require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = b.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}
