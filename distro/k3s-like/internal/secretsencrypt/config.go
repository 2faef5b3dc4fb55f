package secretsencrypt

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// The providers --secrets-encryption-provider takes, as k3s's; aescbc is
// k3s's default.
const (
	AESCBC    = "aescbc"
	Secretbox = "secretbox"
)

// Providers are the providers a config may hold, the default first.
func Providers() []string { return []string{AESCBC, Secretbox} }

// keySize is the size of every key: AES-256 for aescbc, secretbox's only size.
const keySize = 32

// Key is one encryption key. Secret is never printed (String hides it).
type Key struct {
	Name   string
	Secret []byte
}

// String is the key's name only.
func (k Key) String() string { return k.Name }

// Provider is one provider of the config and its keys, in order.
type Provider struct {
	Type string // AESCBC or Secretbox
	Keys []Key
}

// Config is the EncryptionConfiguration of Secrets: its providers in
// order, then identity (Secrets stored before encryption stay readable).
// The first key of the first provider encrypts every write; every key
// decrypts.
type Config struct {
	Providers []Provider
}

// Keys are every key, the writing one first.
func (c Config) Keys() []Key {
	var out []Key
	for _, p := range c.Providers {
		out = append(out, p.Keys...)
	}
	return out
}

// Active is the key every write is encrypted with.
func (c Config) Active() Key { return c.Providers[0].Keys[0] }

// ConfigError is a config file that cannot be used: unreadable,
// unparseable, or not a config this package wrote.
type ConfigError struct {
	Path   string
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("secrets encryption config %s: %s (restore it from a backup: without its keys the Secrets in the datastore cannot be read)", e.Path, e.Reason)
}

// NewKey is a key for provider from crypto/rand, named as k3s names its
// keys (aescbckey-…) after now, with random letters so that two keys made
// in one second differ.
func NewKey(provider string, now time.Time) (Key, error) {
	if !slices.Contains(Providers(), provider) {
		return Key{}, fmt.Errorf("--secrets-encryption-provider=%s: want one of %s", provider, strings.Join(Providers(), ", "))
	}
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, err
	}
	suffix := make([]byte, 3)
	if _, err := rand.Read(suffix); err != nil {
		return Key{}, err
	}
	return Key{Name: provider + "key-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(suffix), Secret: secret}, nil
}

// Load reads and checks the config at path; a missing file, or a path
// through a file, is an error that wraps fs.ErrNotExist, anything else
// wrong a *ConfigError.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, syscall.ENOTDIR) {
		// None there either: a data dir under a file.
		err = fmt.Errorf("%w: %w", err, fs.ErrNotExist)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, err
	}
	if err != nil {
		return Config{}, &ConfigError{Path: path, Reason: err.Error()}
	}
	c, reason := parse(b)
	if reason != "" {
		return Config{}, &ConfigError{Path: path, Reason: reason}
	}
	return c, nil
}

// parse decodes and checks a config: one resource entry for secrets, one
// or more aescbc or secretbox providers with keys of 32 bytes and unique
// names, then identity. It returns the reason it is not one.
func parse(b []byte) (Config, string) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ec apiserverv1.EncryptionConfiguration
	if err := dec.Decode(&ec); err != nil {
		return Config{}, "not a JSON EncryptionConfiguration: " + err.Error()
	}
	if ec.Kind != "EncryptionConfiguration" || ec.APIVersion != apiserverv1.SchemeGroupVersion.String() {
		return Config{}, fmt.Sprintf("kind %q, apiVersion %q: want EncryptionConfiguration, %s", ec.Kind, ec.APIVersion, apiserverv1.SchemeGroupVersion)
	}
	if len(ec.Resources) != 1 || !slices.Equal(ec.Resources[0].Resources, []string{"secrets"}) {
		return Config{}, "want one resources entry, for secrets only"
	}
	ps := ec.Resources[0].Providers
	if len(ps) < 2 || ps[len(ps)-1].Identity == nil {
		return Config{}, "want encrypting providers, then identity last (identity first would store Secrets in plain text)"
	}
	var c Config
	seen := map[string]bool{}
	for i, p := range ps[:len(ps)-1] {
		var typ string
		var keys []apiserverv1.Key
		switch {
		case p.AESCBC != nil && p.Secretbox == nil && p.AESGCM == nil && p.KMS == nil && p.Identity == nil:
			typ, keys = AESCBC, p.AESCBC.Keys
		case p.Secretbox != nil && p.AESCBC == nil && p.AESGCM == nil && p.KMS == nil && p.Identity == nil:
			typ, keys = Secretbox, p.Secretbox.Keys
		default:
			return Config{}, fmt.Sprintf("provider %d: want exactly one of aescbc or secretbox", i)
		}
		if len(keys) == 0 {
			return Config{}, fmt.Sprintf("provider %d (%s): no keys", i, typ)
		}
		out := Provider{Type: typ}
		for _, k := range keys {
			secret, err := base64.StdEncoding.DecodeString(k.Secret)
			switch {
			case k.Name == "" || strings.Contains(k.Name, ":"):
				return Config{}, fmt.Sprintf("provider %d (%s): key name %q: want a non-empty name without ':'", i, typ, k.Name)
			case seen[k.Name]:
				return Config{}, fmt.Sprintf("key name %q twice", k.Name)
			case err != nil || len(secret) != keySize:
				return Config{}, fmt.Sprintf("key %q: its secret is not %d bytes of base64", k.Name, keySize)
			}
			seen[k.Name] = true
			out.Keys = append(out.Keys, Key{Name: k.Name, Secret: secret})
		}
		c.Providers = append(c.Providers, out)
	}
	return c, ""
}

// Marshal is c as kube-apiserver reads it (JSON, as k3s writes it).
func (c Config) Marshal() ([]byte, error) {
	var ps []apiserverv1.ProviderConfiguration
	for _, p := range c.Providers {
		var keys []apiserverv1.Key
		for _, k := range p.Keys {
			keys = append(keys, apiserverv1.Key{Name: k.Name, Secret: base64.StdEncoding.EncodeToString(k.Secret)})
		}
		switch p.Type {
		case AESCBC:
			ps = append(ps, apiserverv1.ProviderConfiguration{AESCBC: &apiserverv1.AESConfiguration{Keys: keys}})
		case Secretbox:
			ps = append(ps, apiserverv1.ProviderConfiguration{Secretbox: &apiserverv1.SecretboxConfiguration{Keys: keys}})
		default:
			return nil, fmt.Errorf("secrets encryption: provider %q: want one of %s", p.Type, strings.Join(Providers(), ", "))
		}
	}
	ps = append(ps, apiserverv1.ProviderConfiguration{Identity: &apiserverv1.IdentityConfiguration{}})
	return json.Marshal(apiserverv1.EncryptionConfiguration{
		TypeMeta:  metav1.TypeMeta{Kind: "EncryptionConfiguration", APIVersion: apiserverv1.SchemeGroupVersion.String()},
		Resources: []apiserverv1.ResourceConfiguration{{Resources: []string{"secrets"}, Providers: ps}},
	})
}

// Write writes c to path atomically, 0600, its directory 0700: a crash
// leaves the old file or the new one, never a mix.
func Write(path string, c Config) error {
	b, err := c.Marshal()
	if err != nil {
		return err
	}
	if _, reason := parse(b); reason != "" {
		return fmt.Errorf("secrets encryption: refusing to write %s: %s", path, reason)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// Ensure makes the config at path for --secrets-encryption: a new one
// with one key of provider if there is none; an existing one is loaded and
// checked, and kept as it is (a provider changed since is taken up by the
// next rotation, as k3s's). It reports whether it wrote one.
func Ensure(path, provider string, now time.Time) (created bool, err error) {
	if _, err := Load(path); !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	k, err := NewKey(provider, now)
	if err != nil {
		return false, err
	}
	return true, Write(path, Config{Providers: []Provider{{Type: provider, Keys: []Key{k}}}})
}

// FileHash is the hash kube-apiserver reports for the config it loaded
// (apiserver_encryption_config_controller_last_config_info's hash label):
// "sha256:" and the hex SHA-256 of the file's bytes.
func FileHash(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b)), nil
}

// withNewKey is c with k first: in c's first provider if it is k's
// provider, else in a new provider before the others (a migration).
func (c Config) withNewKey(provider string, k Key) Config {
	out := Config{}
	if c.Providers[0].Type == provider {
		out.Providers = append(out.Providers, Provider{Type: provider, Keys: append([]Key{k}, c.Providers[0].Keys...)})
		out.Providers = append(out.Providers, c.Providers[1:]...)
		return out
	}
	out.Providers = append([]Provider{{Type: provider, Keys: []Key{k}}}, c.Providers...)
	return out
}

// onlyActive is c with the active key alone.
func (c Config) onlyActive() Config {
	return Config{Providers: []Provider{{Type: c.Providers[0].Type, Keys: []Key{c.Active()}}}}
}
