package secretsencrypt

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var now = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// TestEnsureWritesAKeyOnce: the first Ensure writes a config of one
// 32-byte key of the provider (0600, in a 0700 directory), named after
// the provider as k3s names its keys, then identity; a second Ensure
// keeps the file byte for byte. Two keys never share a secret or a name.
func TestEnsureWritesAKeyOnce(t *testing.T) {
	for _, provider := range Providers() {
		t.Run(provider, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cred", "encryption-config.json")
			created, err := Ensure(path, provider, now)
			require.NoError(t, err)
			assert.True(t, created)
			st, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
			dir, err := os.Stat(filepath.Dir(path))
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), dir.Mode().Perm())
			first, err := os.ReadFile(path)
			require.NoError(t, err)

			c, err := Load(path)
			require.NoError(t, err)
			require.Len(t, c.Providers, 1)
			assert.Equal(t, provider, c.Providers[0].Type)
			require.Len(t, c.Keys(), 1)
			assert.Len(t, c.Active().Secret, 32)
			assert.True(t, strings.HasPrefix(c.Active().Name, provider+"key-20261205T100000Z-"), c.Active().Name)

			// As kube-apiserver reads it: the provider, then identity.
			var raw struct {
				Kind, APIVersion string
				Resources        []struct {
					Resources []string
					Providers []map[string]json.RawMessage
				}
			}
			require.NoError(t, json.Unmarshal(first, &raw))
			assert.Equal(t, "EncryptionConfiguration", raw.Kind)
			assert.Equal(t, "apiserver.config.k8s.io/v1", raw.APIVersion)
			require.Len(t, raw.Resources, 1)
			assert.Equal(t, []string{"secrets"}, raw.Resources[0].Resources)
			require.Len(t, raw.Resources[0].Providers, 2)
			assert.Contains(t, raw.Resources[0].Providers[0], provider)
			assert.Contains(t, raw.Resources[0].Providers[1], "identity")

			created, err = Ensure(path, provider, now.Add(time.Hour))
			require.NoError(t, err)
			assert.False(t, created)
			again, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, first, again, "an existing config is kept")
		})
	}
	a, err := NewKey(AESCBC, now)
	require.NoError(t, err)
	b, err := NewKey(AESCBC, now)
	require.NoError(t, err)
	assert.NotEqual(t, a.Name, b.Name, "two keys of one second")
	assert.NotEqual(t, a.Secret, b.Secret)
	assert.Equal(t, a.Name, a.String(), "a key prints as its name only")
	_, err = NewKey("aesgcm", now)
	assert.ErrorContains(t, err, "--secrets-encryption-provider=aesgcm")
}

// TestLoadRefusesABadConfig: a config that is not one this package
// writes is a *ConfigError naming the file and what is wrong, never a
// config with fewer keys; a missing file wraps fs.ErrNotExist.
func TestLoadRefusesABadConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	_, err := Ensure(good, AESCBC, now)
	require.NoError(t, err)
	goodBytes, err := os.ReadFile(good)
	require.NoError(t, err)
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	wrap := func(providers string) string {
		return `{"kind":"EncryptionConfiguration","apiVersion":"apiserver.config.k8s.io/v1","resources":[{"resources":["secrets"],"providers":[` + providers + `]}]}`
	}
	for _, tc := range []struct{ name, body, want string }{
		{"truncated", string(goodBytes[:len(goodBytes)/2]), "not a JSON EncryptionConfiguration"},
		{"empty", "", "not a JSON EncryptionConfiguration"},
		{"unknown field", strings.Replace(string(goodBytes), `"kind"`, `"kindx":1,"kind"`, 1), "unknown field"},
		{"wrong kind", strings.Replace(string(goodBytes), "EncryptionConfiguration", "Policy", 1), `kind "Policy"`},
		{"identity first", wrap(`{"identity":{}},{"aescbc":{"keys":[{"name":"a","secret":"` + key + `"}]}}`), "identity last"},
		{"no identity", wrap(`{"aescbc":{"keys":[{"name":"a","secret":"` + key + `"}]}}`), "identity last"},
		{"no keys", wrap(`{"aescbc":{"keys":[]}},{"identity":{}}`), "no keys"},
		{"short key", wrap(`{"aescbc":{"keys":[{"name":"a","secret":"` + short + `"}]}},{"identity":{}}`), `key "a": its secret is not 32 bytes`},
		{"not base64", wrap(`{"aescbc":{"keys":[{"name":"a","secret":"!!"}]}},{"identity":{}}`), `key "a": its secret is not 32 bytes`},
		{"same name twice", wrap(`{"aescbc":{"keys":[{"name":"a","secret":"` + key + `"},{"name":"a","secret":"` + key + `"}]}},{"identity":{}}`), `key name "a" twice`},
		{"colon in a name", wrap(`{"aescbc":{"keys":[{"name":"a:b","secret":"` + key + `"}]}},{"identity":{}}`), `key name "a:b"`},
		{"kms", wrap(`{"kms":{"name":"k","endpoint":"unix:///x"}},{"identity":{}}`), "want exactly one of aescbc or secretbox"},
		{"other resources", strings.Replace(string(goodBytes), `["secrets"]`, `["secrets","configmaps"]`, 1), "for secrets only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
			require.NoError(t, os.WriteFile(path, []byte(tc.body), 0o600))
			_, err := Load(path)
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, path, ce.Path)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), path, "the error names the file")
			assert.NotContains(t, err.Error(), key, "no key material in the error")
			assert.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line")
			_, err = Ensure(path, AESCBC, now)
			assert.True(t, errors.As(err, &ce), "Ensure refuses it too, and keeps it: %v", err)
			kept, _ := os.ReadFile(path)
			assert.Equal(t, tc.body, string(kept))
		})
	}
	_, err = Load(filepath.Join(dir, "none.json"))
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// TestWriteIsAtomic: a Write of a config this package could not read back
// is refused and leaves the old file; a directory in the way leaves no
// temporary file.
func TestWriteIsAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	_, err := Ensure(path, AESCBC, now)
	require.NoError(t, err)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	err = Write(path, Config{Providers: []Provider{{Type: AESCBC, Keys: []Key{{Name: "short", Secret: []byte("x")}}}}})
	assert.ErrorContains(t, err, "refusing to write")
	err = Write(path, Config{Providers: []Provider{{Type: "aesgcm", Keys: []Key{{Name: "k", Secret: make([]byte, 32)}}}}})
	assert.ErrorContains(t, err, `provider "aesgcm"`)
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left")
}

// TestFileHashIsTheApiserversHash: "sha256:" and the hex digest of the
// bytes, as kube-apiserver's last_config_info metric labels the file.
func TestFileHashIsTheApiserversHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(path, []byte("abc"), 0o600))
	h, err := FileHash(path)
	require.NoError(t, err)
	assert.Equal(t, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", h)
}
