package secretsencrypt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeAPIServer is a kube-apiserver as a rotation sees it: it serves with
// the config it loaded last (WaitLoaded loads the file, as the reload
// does); each Secret is stored under the name of the key that encrypted
// it, and reading one needs that key in the loaded config. fail makes the
// step of that name fail once (a crash there).
type fakeAPIServer struct {
	t          *testing.T
	path       string
	apiservers int
	loaded     Config
	secrets    map[string]string // Secret name → key name
	fail       string
	waits      []string // the hashes WaitLoaded was asked for
}

func (f *fakeAPIServer) failing(step string) error {
	if f.fail == step {
		f.fail = ""
		return fmt.Errorf("crash in %s", step)
	}
	return nil
}

func (f *fakeAPIServer) APIServers(context.Context) (int, error) {
	return f.apiservers, f.failing("APIServers")
}

func (f *fakeAPIServer) WaitLoaded(_ context.Context, hash string) error {
	f.waits = append(f.waits, hash)
	if err := f.failing("WaitLoaded"); err != nil {
		return err
	}
	got, err := FileHash(f.path)
	require.NoError(f.t, err)
	require.Equal(f.t, got, hash, "WaitLoaded is asked for the file as it is")
	f.loaded, err = Load(f.path)
	require.NoError(f.t, err)
	return nil
}

func (f *fakeAPIServer) RewriteSecrets(context.Context) (int, error) {
	names := map[string]bool{}
	for _, k := range f.loaded.Keys() {
		names[k.Name] = true
	}
	n := 0
	for name, key := range f.secrets {
		if !names[key] {
			return n, fmt.Errorf("Secret %s: no key %s to decrypt it", name, key)
		}
		if n == 1 {
			if err := f.failing("RewriteSecrets"); err != nil {
				return n, err
			}
		}
		f.secrets[name] = f.loaded.Active().Name
		n++
	}
	return n, nil
}

// readable: every Secret decrypts with the loaded config and the file.
func (f *fakeAPIServer) readable(t *testing.T) {
	t.Helper()
	onDisk, err := Load(f.path)
	require.NoError(t, err)
	for name, key := range f.secrets {
		assert.True(t, slices.ContainsFunc(f.loaded.Keys(), func(k Key) bool { return k.Name == key }), "Secret %s (key %s) readable by the apiserver", name, key)
		assert.True(t, slices.ContainsFunc(onDisk.Keys(), func(k Key) bool { return k.Name == key }), "Secret %s (key %s) readable after a restart", name, key)
	}
}

func newFake(t *testing.T) (*fakeAPIServer, Rotation) {
	path := filepath.Join(t.TempDir(), "encryption-config.json")
	_, err := Ensure(path, AESCBC, now)
	require.NoError(t, err)
	c, err := Load(path)
	require.NoError(t, err)
	f := &fakeAPIServer{t: t, path: path, apiservers: 1, loaded: c, secrets: map[string]string{}}
	for i := range 5 {
		f.secrets[fmt.Sprintf("s%d", i)] = c.Active().Name
	}
	clock := now
	return f, Rotation{Path: path, Cluster: f, Log: logr.Discard(), Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
}

// TestRotateKeys: a new key first, every Secret rewritten with it, the old
// key dropped; the apiserver waited for twice (the config with both keys,
// then the one with the new key only); every Secret readable throughout.
func TestRotateKeys(t *testing.T) {
	f, r := newFake(t)
	old := f.loaded.Active().Name
	res, err := r.Run(t.Context())
	require.NoError(t, err)
	assert.False(t, res.Finished)
	assert.Equal(t, 5, res.Secrets)
	assert.Equal(t, []string{old}, res.Dropped)
	assert.NotEqual(t, old, res.Active)
	c, err := Load(f.path)
	require.NoError(t, err)
	assert.Equal(t, []string{res.Active}, keyNames(c), "the new key alone")
	assert.Len(t, f.waits, 2)
	for name, key := range f.secrets {
		assert.Equal(t, res.Active, key, "Secret %s", name)
	}
	f.readable(t)

	// A migration: the next key is secretbox, in a provider of its own
	// until the aescbc key is dropped.
	r.Provider = Secretbox
	res, err = r.Run(t.Context())
	require.NoError(t, err)
	c, err = Load(f.path)
	require.NoError(t, err)
	require.Len(t, c.Providers, 1)
	assert.Equal(t, Secretbox, c.Providers[0].Type)
	assert.Equal(t, res.Active, c.Active().Name)
	f.readable(t)
}

// TestRotateKeysCrashBetweenSteps: a rotation that fails at each step
// leaves a config on disk with which every Secret is readable (the old key
// is there until every Secret was rewritten), and the next run finishes
// that rotation without adding a key: one key in the end, the one the
// first run added, every Secret encrypted with it.
func TestRotateKeysCrashBetweenSteps(t *testing.T) {
	for _, step := range []string{"WaitLoaded", "RewriteSecrets"} {
		t.Run(step, func(t *testing.T) {
			f, r := newFake(t)
			old := f.loaded.Active().Name
			f.fail = step
			_, err := r.Run(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "crash in "+step)
			c, err := Load(f.path)
			require.NoError(t, err)
			added := c.Active().Name
			assert.Equal(t, []string{added, old}, keyNames(c), "on disk: the new key first, the old one still there")
			f.readable(t)

			res, err := r.Run(t.Context())
			require.NoError(t, err)
			assert.True(t, res.Finished, "the next run finishes the rotation")
			assert.Equal(t, added, res.Active, "and adds no key")
			assert.Equal(t, []string{old}, res.Dropped)
			c, err = Load(f.path)
			require.NoError(t, err)
			assert.Equal(t, []string{added}, keyNames(c))
			for name, key := range f.secrets {
				assert.Equal(t, added, key, "Secret %s", name)
			}
			f.readable(t)
		})
	}
}

// TestRotateKeysRefuses: more than one kube-apiserver, or a count that
// fails, writes nothing; a Secret no key decrypts stops the rotation
// before the old key is dropped.
func TestRotateKeysRefuses(t *testing.T) {
	f, r := newFake(t)
	before, err := FileHash(f.path)
	require.NoError(t, err)
	f.apiservers = 3
	_, err = r.Run(t.Context())
	var tm *TooManyServersError
	require.True(t, errors.As(err, &tm), "%v", err)
	assert.Equal(t, 3, tm.APIServers)
	assert.Contains(t, err.Error(), f.path)
	f.apiservers = 1
	f.fail = "APIServers"
	_, err = r.Run(t.Context())
	assert.ErrorContains(t, err, "counting the kube-apiservers")
	after, err := FileHash(f.path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing written")
	assert.Empty(t, f.waits)

	f.secrets["lost"] = "a-key-nobody-has"
	_, err = r.Run(t.Context())
	assert.ErrorContains(t, err, "no key a-key-nobody-has")
	assert.ErrorContains(t, err, "the old keys stay")
	c, err := Load(f.path)
	require.NoError(t, err)
	assert.Len(t, c.Keys(), 2, "the old key is kept")

	_, err = Rotation{Path: filepath.Join(t.TempDir(), "none"), Cluster: f}.Run(t.Context())
	assert.Error(t, err)
}

func keyNames(c Config) []string {
	var out []string
	for _, k := range c.Keys() {
		out = append(out, k.Name)
	}
	return out
}
