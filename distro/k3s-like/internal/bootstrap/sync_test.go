package bootstrap

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/crypto/argon2"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// startEtcd starts an etcd for the test (package testenv: loopback, TLS)
// and returns a client of it.
func startEtcd(t *testing.T) *clientv3.Client {
	t.Helper()
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	e, err := testenv.StartEtcd(filepath.Join(dir, "etcd"), files)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	c, err := e.Client()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// generateIn makes (or reuses) a cluster's shared files in dir, as a
// server's PKI generation does: a CA for each .crt and .key of Files, a key
// pair for each .key and .pub.
func generateIn(dir string) error {
	for _, name := range Files {
		base, ok := strings.CutSuffix(name, ".key")
		if !ok {
			continue
		}
		var err error
		switch {
		case slices.Contains(Files, base+".crt"):
			_, err = pki.LoadOrCreateCA(filepath.Join(dir, base+".crt"), filepath.Join(dir, name), "test-"+base)
		case slices.Contains(Files, base+".pub"):
			err = pki.EnsureKeyPair(filepath.Join(dir, name), filepath.Join(dir, base+".pub"))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// cas are the CAs among Files, by base name ("client-ca").
func cas() []string {
	var out []string
	for _, name := range Files {
		if base, ok := strings.CutSuffix(name, ".key"); ok && slices.Contains(Files, base+".crt") {
			out = append(out, base)
		}
	}
	return out
}

// newCluster returns a new cluster's shared files.
func newCluster(t *testing.T) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, generateIn(dir))
	return readFiles(t, dir)
}

// readFiles returns Files as they are in dir.
func readFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range Files {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		out[name] = b
	}
	return out
}

func pinOf(files map[string][]byte) string {
	sum := sha256.Sum256(files["server-ca.crt"])
	return hex.EncodeToString(sum[:])
}

// server is one server's Sync: a fresh PKI dir, a count of its
// generations, its log lines.
type server struct {
	cfg       Config
	generated int
	log       []string
}

func newTestServer(t *testing.T, kv clientv3.KV, secret, pinned string) *server {
	s := &server{}
	dir := filepath.Join(t.TempDir(), "tls")
	s.cfg = Config{KV: kv, Secret: secret, Pinned: pinned, Dir: dir,
		Generate: func() error { s.generated++; return generateIn(dir) },
		Log:      funcr.New(func(prefix, args string) { s.log = append(s.log, args) }, funcr.Options{})}
	return s
}

func (s *server) sync(ctx context.Context) error { return Sync(ctx, s.cfg) }

func (s *server) logged(substr string) bool {
	return strings.Contains(strings.Join(s.log, "\n"), substr)
}

// record returns the record in the datastore and its mod revision.
func record(t *testing.T, kv clientv3.KV) ([]byte, int64) {
	t.Helper()
	resp, err := kv.Get(t.Context(), Key)
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1, "a record in the datastore")
	return resp.Kvs[0].Value, resp.Kvs[0].ModRevision
}

// kdfOf is the kdf field of a record ("" for PBKDF2).
func kdfOf(t *testing.T, data []byte) sealed {
	t.Helper()
	var s sealed
	require.NoError(t, json.Unmarshal(data, &s))
	s.Data = nil
	return s
}

// TestPinnedTokenOnEmptyDatastore (issue 30): a token that pins a CA, on a
// datastore without a cluster, is a *NoClusterError before anything is
// generated or written: no PKI dir, no key and no new revision in etcd.
// The same datastore with a bare secret starts a cluster, so the refusal is
// the pin's.
func TestPinnedTokenOnEmptyDatastore(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	before, err := c.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	require.Zero(t, before.Count)

	pinned := newTestServer(t, c, "s3cret", strings.Repeat("ab", 32))
	err = pinned.sync(ctx)
	var nc *NoClusterError
	require.ErrorAs(t, err, &nc)
	assert.Equal(t, strings.Repeat("ab", 32), nc.Pinned)
	assert.Contains(t, err.Error(), "the datastore holds no cluster")
	assert.Contains(t, err.Error(), "nothing was generated or written")
	assert.Zero(t, pinned.generated, "nothing generated")
	_, err = os.Stat(pinned.cfg.Dir)
	assert.True(t, os.IsNotExist(err), "no PKI dir: %v", err)
	after, err := c.Get(ctx, "", clientv3.WithPrefix(), clientv3.WithCountOnly())
	require.NoError(t, err)
	assert.Zero(t, after.Count, "no key in the datastore")
	assert.Equal(t, before.Header.Revision, after.Header.Revision, "no write to the datastore at all")

	bare := newTestServer(t, c, "s3cret", "")
	require.NoError(t, bare.sync(ctx))
	assert.Equal(t, 1, bare.generated)
	_, rev := record(t, c)
	assert.Greater(t, rev, after.Header.Revision)
}

// TestPinCoversEveryFile: a server with a pinned token accepts a record
// only if its server-ca.crt has the pinned hash and its server-ca.key is
// that certificate's key; every CA's key must be its certificate's and the
// service-account public key the private key's. Each record here is sealed
// with the right secret (what an attacker who knows the secret and can
// write the datastore, but does not hold the cluster CA's key, can make);
// each refused one leaves the PKI dir absent, generates nothing and is not
// re-sealed (they are PBKDF2 records). The last case is accepted, by
// design: a writer who holds the server CA's key is the cluster's CA.
func TestPinCoversEveryFile(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	genuine, other := newCluster(t), newCluster(t)
	pin := pinOf(genuine)
	with := func(base map[string][]byte, kv ...string) map[string][]byte {
		out := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = []byte(kv[i+1])
		}
		return out
	}
	leafCert, leafKey := leaf(t)
	type testCase struct {
		name   string
		files  map[string][]byte
		pinned string
		field  string // the *RecordError's field; "" for a *PinError
	}
	var swaps []testCase // every CA but the server's, one of its files swapped
	for _, ca := range cas() {
		if ca == "server-ca" {
			continue
		}
		swaps = append(swaps,
			testCase{ca + ".crt swapped, its key kept", with(genuine, ca+".crt", string(other[ca+".crt"])), pin, ca + ".key"},
			testCase{ca + ".key swapped, its certificate kept", with(genuine, ca+".key", string(other[ca+".key"])), pin, ca + ".key"})
	}
	require.GreaterOrEqual(t, len(swaps), 4, "the client and request-header CAs at least: %v", cas())
	for _, tc := range append(swaps, []testCase{
		{"another cluster's PKI", other, pin, ""},
		{"the pinned certificate with another CA's key and client CA (no holder of the CA key)",
			with(other, "server-ca.crt", string(genuine["server-ca.crt"])), pin, "server-ca.key"},
		{"the pinned certificate with no key", func() map[string][]byte {
			f := maps.Clone(genuine)
			delete(f, "server-ca.key")
			return f
		}(), pin, "server-ca.key"},
		{"service-account.pub swapped", with(genuine, "service-account.pub", string(other["service-account.pub"])), pin, "service-account.pub"},
		{"service-account.key swapped", with(genuine, "service-account.key", string(other["service-account.key"])), pin, "service-account.pub"},
		{"client-ca.crt not a CA certificate", with(genuine, "client-ca.crt", leafCert, "client-ca.key", leafKey), pin, "client-ca.crt"},
		{"client-ca.crt not PEM", with(genuine, "client-ca.crt", "garbage"), pin, "client-ca.crt"},
		{"service-account.key not a key", with(genuine, "service-account.key", "garbage"), pin, "service-account.key"},
		{"a file missing", func() map[string][]byte {
			f := maps.Clone(genuine)
			delete(f, "request-header-ca.key")
			return f
		}(), pin, "request-header-ca.key"},
		// Without a pin the same consistency checks hold.
		{"no pin: client-ca.key swapped", with(genuine, "client-ca.key", string(other["client-ca.key"])), "", "client-ca.key"},
		{"no pin: server-ca.crt not PEM", with(genuine, "server-ca.crt", "garbage"), "", "server-ca.crt"},
	}...) {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", tc.files)))
			require.NoError(t, err)
			_, rev := record(t, c)
			s := newTestServer(t, c, "s3cret", tc.pinned)
			err = s.sync(ctx)
			if tc.field == "" {
				var pe *PinError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, PinError{Pinned: pin, Got: pinOf(tc.files)}, *pe)
				assert.Contains(t, err.Error(), "not the "+pin+" the token pins: refusing to trust it")
			} else {
				var re *RecordError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, tc.field, re.Field, err.Error())
			}
			_, statErr := os.Stat(s.cfg.Dir)
			assert.True(t, os.IsNotExist(statErr), "nothing written: %v", statErr)
			assert.Zero(t, s.generated)
			_, after := record(t, c)
			assert.Equal(t, rev, after, "a refused record is not re-sealed")
		})
	}
	t.Run("the pinned CA and its key, the other files replaced by a holder of that key: accepted", func(t *testing.T) {
		files := with(other, "server-ca.crt", string(genuine["server-ca.crt"]), "server-ca.key", string(genuine["server-ca.key"]))
		_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", files)))
		require.NoError(t, err)
		s := newTestServer(t, c, "s3cret", pin)
		require.NoError(t, s.sync(ctx))
		assert.Equal(t, files, readFiles(t, s.cfg.Dir))
	})
	t.Run("the genuine record: accepted", func(t *testing.T) {
		_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", genuine)))
		require.NoError(t, err)
		s := newTestServer(t, c, "s3cret", pin)
		require.NoError(t, s.sync(ctx))
		assert.Equal(t, genuine, readFiles(t, s.cfg.Dir))
		assert.Equal(t, 1, s.generated)
	})
}

// leaf is a self-signed certificate that is not a CA's, and its key (PEM).
func leaf(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-a-ca"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, k.Public(), k)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	certPEM, err := certutil.EncodeCertificates(c)
	require.NoError(t, err)
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(k)
	require.NoError(t, err)
	return string(certPEM), string(keyPEM)
}

// TestLegacyRecordResealed (issue 30): a PBKDF2 record is re-sealed with
// argon2id (t=3, 64 MiB, p=4) by the first server that opens and verifies
// it, which logs it; the re-sealed record holds the same files, opens for
// a second server (which re-seals nothing) and for the first one's
// restart. An argon2id record weaker than seal's is re-sealed too.
func TestLegacyRecordResealed(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	files := newCluster(t)
	_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", files)))
	require.NoError(t, err)
	old, oldRev := record(t, c)
	require.Equal(t, "", kdfOf(t, old).KDF)

	a := newTestServer(t, c, "s3cret", pinOf(files))
	require.NoError(t, a.sync(ctx))
	data, rev := record(t, c)
	assert.Greater(t, rev, oldRev)
	s := kdfOf(t, data)
	assert.Equal(t, []any{"argon2id", uint32(3), uint32(64 * 1024), uint8(4)}, []any{s.KDF, s.Time, s.Memory, s.Threads})
	got, _, err := open("s3cret", data)
	require.NoError(t, err)
	assert.Equal(t, files, got, "the same files, re-sealed")
	assert.True(t, a.logged(`"from"="PBKDF2-SHA256 100000 iterations" "to"="argon2id t=3 m=65536KiB p=4"`), "%v", a.log)
	assert.Equal(t, files, readFiles(t, a.cfg.Dir))

	b := newTestServer(t, c, "s3cret", pinOf(files))
	require.NoError(t, b.sync(ctx))
	assert.Equal(t, files, readFiles(t, b.cfg.Dir))
	assert.Empty(t, b.log, "an argon2id record at seal's parameters is not re-sealed")
	_, again := record(t, c)
	assert.Equal(t, rev, again)

	a.log = nil
	require.NoError(t, a.sync(ctx), "a restart of the first server opens the re-sealed record")
	assert.Empty(t, a.log)

	// argon2id at OWASP's floor (t=2, 19 MiB), below seal's: re-sealed.
	weak := sealWith(t, "s3cret", files, sealed{KDF: "argon2id", Time: 2, Memory: 19 * 1024, Threads: 1})
	_, err = c.Put(ctx, Key, string(weak))
	require.NoError(t, err)
	w := newTestServer(t, c, "s3cret", pinOf(files))
	require.NoError(t, w.sync(ctx))
	data, _ = record(t, c)
	assert.Equal(t, uint32(64*1024), kdfOf(t, data).Memory)
	assert.True(t, w.logged(`"from"="argon2id t=2 m=19456KiB p=1"`), "%v", w.log)
}

// sealWith seals files with argon2id at the parameters of p.
func sealWith(t *testing.T, token string, files map[string][]byte, p sealed) []byte {
	t.Helper()
	plain, err := json.Marshal(files)
	require.NoError(t, err)
	p.Salt, p.Nonce = make([]byte, 16), make([]byte, 12)
	_, _ = rand.Read(p.Salt)
	_, _ = rand.Read(p.Nonce)
	gcm, err := newGCM(argon2.IDKey([]byte(token), p.Salt, p.Time, p.Memory, p.Threads, 32))
	require.NoError(t, err)
	p.Data = gcm.Seal(nil, p.Nonce, plain, []byte(Key))
	out, err := json.Marshal(p)
	require.NoError(t, err)
	return out
}

// racingKV is a datastore where another server writes the record just
// before this one's transaction.
type racingKV struct {
	clientv3.KV
	race func()
}

func (k racingKV) Txn(ctx context.Context) clientv3.Txn {
	k.race()
	return k.KV.Txn(ctx)
}

// failingKV is a datastore whose transactions fail.
type failingKV struct{ clientv3.KV }

func (failingKV) Txn(context.Context) clientv3.Txn { return failingTxn{} }

type failingTxn struct{}

func (f failingTxn) If(...clientv3.Cmp) clientv3.Txn  { return f }
func (f failingTxn) Then(...clientv3.Op) clientv3.Txn { return f }
func (f failingTxn) Else(...clientv3.Op) clientv3.Txn { return f }
func (failingTxn) Commit() (*clientv3.TxnResponse, error) {
	return nil, errors.New("etcdserver: request timed out")
}

// TestResealRace: a record another server writes between this server's
// read and its re-seal (its own re-seal) is not overwritten; this server
// still starts, and says why it left the record. A re-seal that fails
// (the datastore times out) does not stop the server either: the record
// stays as it was, for the next start.
func TestResealRace(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	files := newCluster(t)
	_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", files)))
	require.NoError(t, err)
	theirs, err := seal("s3cret", files)
	require.NoError(t, err)
	raced := 0
	kv := racingKV{KV: c, race: func() {
		raced++
		_, err := c.Put(ctx, Key, string(theirs))
		require.NoError(t, err)
	}}
	s := newTestServer(t, kv, "s3cret", pinOf(files))
	require.NoError(t, s.sync(ctx))
	assert.Equal(t, 1, raced, "the re-seal's transaction ran")
	data, _ := record(t, c)
	assert.Equal(t, string(theirs), string(data), "the other server's record is left as it is")
	assert.True(t, s.logged("changed since this server read it"), "%v", s.log)
	assert.Equal(t, files, readFiles(t, s.cfg.Dir))

	legacy := legacyRecord(t, "s3cret", files)
	_, err = c.Put(ctx, Key, string(legacy))
	require.NoError(t, err)
	f := newTestServer(t, failingKV{c}, "s3cret", pinOf(files))
	require.NoError(t, f.sync(ctx))
	data, _ = record(t, c)
	assert.Equal(t, string(legacy), string(data))
	assert.True(t, f.logged("request timed out"), "%v", f.log)
}

// TestWrongTokenLeavesRecord: a record this server's token does not open
// is ErrWrongToken, with nothing written and the record not re-sealed.
func TestWrongTokenLeavesRecord(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	_, err := c.Put(ctx, Key, string(legacyRecord(t, "right", newCluster(t))))
	require.NoError(t, err)
	_, rev := record(t, c)
	s := newTestServer(t, c, "wrong", "")
	require.ErrorIs(t, s.sync(ctx), ErrWrongToken)
	_, after := record(t, c)
	assert.Equal(t, rev, after)
	_, err = os.Stat(s.cfg.Dir)
	assert.True(t, os.IsNotExist(err))
}

// TestOlderRecordCompleted: a record of a release before the kubelet
// serving CA was shared lacks it. The first server to open it makes that
// CA and stores it in the record (at seal's parameters) before it writes
// anything, and every later server gets the same CA; a server that loses
// the race to another's completed record takes that one. A record with
// only half of the CA is malformed.
func TestOlderRecordCompleted(t *testing.T) {
	ctx := t.Context()
	c := startEtcd(t)
	files := newCluster(t)
	ca := pki.Layout{}.KubeletServingCA()
	older := maps.Clone(files)
	delete(older, ca.CertFile)
	delete(older, ca.KeyFile)
	_, err := c.Put(ctx, Key, string(legacyRecord(t, "s3cret", older)))
	require.NoError(t, err)

	a := newTestServer(t, c, "s3cret", pinOf(files))
	require.NoError(t, a.sync(ctx))
	data, _ := record(t, c)
	assert.Equal(t, "argon2id", kdfOf(t, data).KDF, "stored at seal's parameters")
	stored, _, err := open("s3cret", data)
	require.NoError(t, err)
	require.Contains(t, stored, ca.CertFile)
	require.NoError(t, verify(stored, pinOf(files)), "a CA with its key")
	for name, content := range older {
		assert.Equal(t, content, stored[name], "%s kept", name)
	}
	assert.Equal(t, stored, readFiles(t, a.cfg.Dir))
	assert.True(t, a.logged("Added to the cluster's PKI record"), "%v", a.log)

	b := newTestServer(t, c, "s3cret", pinOf(files))
	require.NoError(t, b.sync(ctx))
	assert.Equal(t, stored[ca.CertFile], readFiles(t, b.cfg.Dir)[ca.CertFile], "one kubelet serving CA for the cluster")

	// Another server completes the record between this one's read and
	// its write: this one takes the other's CA.
	_, err = c.Put(ctx, Key, string(legacyRecord(t, "s3cret", older)))
	require.NoError(t, err)
	theirs := maps.Clone(files)
	theirsData, err := seal("s3cret", theirs)
	require.NoError(t, err)
	raced := false
	kv := racingKV{KV: c, race: func() {
		if !raced {
			raced = true
			_, err := c.Put(ctx, Key, string(theirsData))
			require.NoError(t, err)
		}
	}}
	r := newTestServer(t, kv, "s3cret", pinOf(files))
	require.NoError(t, r.sync(ctx))
	assert.True(t, raced)
	assert.Equal(t, theirs[ca.CertFile], readFiles(t, r.cfg.Dir)[ca.CertFile], "the other server's CA")
	data, _ = record(t, c)
	assert.Equal(t, string(theirsData), string(data), "the other server's record left as it is")

	half := maps.Clone(older)
	half[ca.CertFile] = files[ca.CertFile]
	_, err = c.Put(ctx, Key, string(legacyRecord(t, "s3cret", half)))
	require.NoError(t, err)
	h := newTestServer(t, c, "s3cret", pinOf(files))
	var re *RecordError
	require.ErrorAs(t, h.sync(ctx), &re)
	assert.Contains(t, re.Error(), "only one of")
}
