package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/secretsencrypt"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cisfiles"
)

func apiserverArgs(t *testing.T, args ...string) ([]string, error) {
	t.Helper()
	o, err := parseServer(t, args)
	require.NoError(t, err)
	o.net, err = o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	all, err := o.componentArgs()
	return all[names.APIServer], err
}

// TestCISAPIServerArgs: by default kube-apiserver gets the audit policy
// and log under DATA_DIR, rotated as the CIS Benchmark asks, the Pod
// Security configuration and strong cipher suites, no encryption config;
// --secrets-encryption adds the config, reloaded; each default is
// replaced by --kube-apiserver-arg; --pod-security-admission-config-file
// names another file.
func TestCISAPIServerArgs(t *testing.T) {
	dir := t.TempDir()
	args, err := apiserverArgs(t, "--data-dir="+dir)
	require.NoError(t, err)
	for key, want := range map[string]string{
		"audit-policy-file": filepath.Join(dir, "audit.yaml"), "audit-log-path": filepath.Join(dir, "logs", "audit.log"),
		"audit-log-maxage": "30", "audit-log-maxbackup": "10", "audit-log-maxsize": "100",
		"admission-control-config-file":           filepath.Join(dir, "psa.yaml"),
		"service-account-extend-token-expiration": "false",
		"tls-cipher-suites":                       "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
	} {
		got, ok := kubeargs.Value(args, key)
		assert.True(t, ok, "--%s", key)
		assert.Equal(t, want, got, "--%s", key)
	}
	_, ok := kubeargs.Value(args, "encryption-provider-config")
	assert.False(t, ok, "no encryption without --secrets-encryption")

	args, err = apiserverArgs(t, "--data-dir="+dir, "--secrets-encryption", "--kube-apiserver-arg=audit-log-maxage=90", "--kube-apiserver-arg=audit-policy-file=/etc/mine.yaml")
	require.NoError(t, err)
	for key, want := range map[string]string{
		"encryption-provider-config": filepath.Join(dir, "cred", "encryption-config.json"), "encryption-provider-config-automatic-reload": "true",
		"audit-log-maxage": "90", "audit-policy-file": "/etc/mine.yaml",
	} {
		got, _ := kubeargs.Value(args, key)
		assert.Equal(t, want, got, "--%s", key)
	}

	psa := filepath.Join(t.TempDir(), "psa.yaml")
	require.NoError(t, os.WriteFile(psa, []byte("x"), 0o600))
	args, err = apiserverArgs(t, "--data-dir="+dir, "--pod-security-admission-config-file="+psa)
	require.NoError(t, err)
	got, _ := kubeargs.Value(args, "admission-control-config-file")
	assert.Equal(t, psa, got)
}

// TestCISChecks: each refusal is one line naming the flag or the file: a
// provider k3s does not offer; a Pod Security file given twice or
// missing; an encryption config on disk without --secrets-encryption (its
// Secrets would be unreadable); a server joining with --server and no
// config (it would make a key the others lack); a tampered config.
func TestCISChecks(t *testing.T) {
	dir := t.TempDir()
	_, err := apiserverArgs(t, "--data-dir="+dir, "--secrets-encryption", "--secrets-encryption-provider=aesgcm")
	assert.ErrorContains(t, err, "--secrets-encryption-provider=aesgcm: want one of aescbc, secretbox")
	psa := filepath.Join(t.TempDir(), "psa.yaml")
	_, err = apiserverArgs(t, "--data-dir="+dir, "--pod-security-admission-config-file="+psa)
	assert.ErrorContains(t, err, "--pod-security-admission-config-file="+psa)
	require.NoError(t, os.WriteFile(psa, []byte("x"), 0o600))
	_, err = apiserverArgs(t, "--data-dir="+dir, "--pod-security-admission-config-file="+psa, "--kube-apiserver-arg=admission-control-config-file=/x")
	assert.ErrorContains(t, err, "give one of them")

	path := datadir.EncryptionConfig(dir)
	_, err = secretsencrypt.Ensure(path, secretsencrypt.AESCBC, time.Now())
	require.NoError(t, err)
	_, err = apiserverArgs(t, "--data-dir="+dir)
	assert.ErrorContains(t, err, path+" exists")
	assert.ErrorContains(t, err, "--secrets-encryption")
	_, err = apiserverArgs(t, "--data-dir="+dir, "--secrets-encryption")
	assert.NoError(t, err)

	join, err := parseServer(t, []string{"--data-dir=" + t.TempDir(), "--secrets-encryption", "--server=https://192.0.2.1:6443"})
	require.NoError(t, err)
	err = join.checkCIS(nil)
	assert.ErrorContains(t, err, "--secrets-encryption with --server=https://192.0.2.1:6443")
	assert.ErrorContains(t, err, "copy "+datadir.EncryptionConfig(join.DataDir))

	// A data dir under a file: no config there, the data dir's own check
	// (cli.CheckWritable, later in check) names the problem.
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = apiserverArgs(t, "--data-dir="+filepath.Join(file, "data"), "--secrets-encryption")
	assert.NoError(t, err)

	require.NoError(t, os.WriteFile(path, []byte(`{"kind":`), 0o600))
	_, err = apiserverArgs(t, "--data-dir="+dir, "--secrets-encryption")
	assert.ErrorContains(t, err, "secrets encryption config "+path)
	assert.NotContains(t, err.Error(), "\n")
}

// TestWriteCISFiles: the audit policy (Metadata) and the Pod Security
// configuration (baseline, kube-system exempt) are written 0600 when
// absent and kept when edited; the audit log's directory is 0700; with
// --secrets-encryption the config is made once, with the provider asked.
func TestWriteCISFiles(t *testing.T) {
	dir := t.TempDir()
	o, err := parseServer(t, []string{"--data-dir=" + dir, "--secrets-encryption", "--secrets-encryption-provider=secretbox"})
	require.NoError(t, err)
	require.NoError(t, o.writeCISFiles(time.Now()))
	for path, want := range map[string]string{
		datadir.AuditPolicy(dir):       "- level: Metadata",
		datadir.PodSecurityConfig(dir): "enforce: baseline",
	} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Contains(t, string(b), want)
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), path)
	}
	psa, _ := os.ReadFile(datadir.PodSecurityConfig(dir))
	assert.Contains(t, string(psa), "namespaces: [kube-system]")
	st, err := os.Stat(filepath.Dir(datadir.AuditLog(dir)))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	c, err := secretsencrypt.Load(datadir.EncryptionConfig(dir))
	require.NoError(t, err)
	assert.Equal(t, secretsencrypt.Secretbox, c.Providers[0].Type)

	require.NoError(t, os.WriteFile(datadir.AuditPolicy(dir), []byte("edited"), 0o600))
	before, _ := os.ReadFile(datadir.EncryptionConfig(dir))
	require.NoError(t, o.writeCISFiles(time.Now()))
	b, _ := os.ReadFile(datadir.AuditPolicy(dir))
	assert.Equal(t, "edited", string(b))
	after, _ := os.ReadFile(datadir.EncryptionConfig(dir))
	assert.Equal(t, before, after, "the key is kept across restarts")

	o, err = parseServer(t, []string{"--data-dir=" + t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, o.writeCISFiles(time.Now()))
	_, err = os.Stat(datadir.EncryptionConfig(o.DataDir))
	assert.True(t, os.IsNotExist(err), "no config without --secrets-encryption")
	assert.False(t, strings.Contains(cisfiles.AuditPolicy, "RequestResponse"), "no bodies in the log")
}
