package tokencmd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// serverDir is a data dir with a server CA and an admin kubeconfig (of a
// server that is not running).
func serverDir(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	l := datadir.PKI(dir)
	require.NoError(t, os.MkdirAll(l.Dir, 0o700))
	_, err := pki.LoadOrCreateCA(l.ServerCA().CertFile, l.ServerCA().KeyFile, "")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(datadir.AdminKubeconfig(dir), []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1'}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {}\n"), 0o600))
	ca, err := os.ReadFile(l.ServerCA().CertFile)
	require.NoError(t, err)
	return dir, ca
}

// TestNewServerToken: random by default; from --new-token-file a bare
// secret or this cluster's full server token; an agent or bootstrap
// token, another CA's, garbage or a missing file is an error naming the
// flag, never the token.
func TestNewServerToken(t *testing.T) {
	dir, ca := serverDir(t)
	o := &options{dataDir: dir}
	a, err := o.newServerToken(ca)
	require.NoError(t, err)
	b, err := o.newServerToken(ca)
	require.NoError(t, err)
	assert.NotEqual(t, a.Secret, b.Secret)
	assert.Regexp(t, `^[0-9a-f]{64}$`, a.Secret)
	assert.Equal(t, cluster.ServerToken, a.Kind)

	file := func(content string) string {
		f := filepath.Join(t.TempDir(), "new")
		require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
		return f
	}
	o.newTokenFile = file("chosen-s3cret\n")
	tok, err := o.newServerToken(ca)
	require.NoError(t, err)
	assert.Equal(t, cluster.Token{Secret: "chosen-s3cret", Kind: cluster.ServerToken}, tok)
	o.newTokenFile = file(cluster.Token{Secret: "chosen-s3cret"}.Full(ca))
	_, err = o.newServerToken(ca)
	require.NoError(t, err)

	hash := strings.Repeat("0", 64)
	for content, want := range map[string]string{
		cluster.Token{Secret: "s3cret", Kind: cluster.AgentToken}.Full(ca): "a node token, not a server token",
		"K10" + cluster.CAHashOf(ca) + "::abcdef.0123456789abcdef":         "a bootstrap token, not a server token",
		"K10" + hash + "::server:s3cret":                                   "refusing to trust it",
		"K10" + hash + "::junk:s3cret":                                     "neither server:SECRET",
		"   \n":                                                            "empty",
	} {
		o.newTokenFile = file(content)
		_, err := o.newServerToken(ca)
		require.Error(t, err, content)
		assert.Contains(t, err.Error(), want, content)
		assert.Contains(t, err.Error(), "--new-token-file", content)
		assert.NotContains(t, err.Error(), "s3cret", content)
	}
	o.newTokenFile = filepath.Join(t.TempDir(), "missing")
	_, err = o.newServerToken(ca)
	assert.ErrorContains(t, err, "--new-token-file")
}

// TestRotateAgentToken: a new full agent token for this cluster's CA,
// 0600, replacing the file's; with --new-token-file too, refused.
func TestRotateAgentToken(t *testing.T) {
	dir, ca := serverDir(t)
	f := filepath.Join(t.TempDir(), "agent-token")
	require.NoError(t, os.WriteFile(f, []byte("old\n"), 0o644))
	o := &options{dataDir: dir, agentTokenFile: f}
	var out bytes.Buffer
	require.NoError(t, o.rotate(t.Context(), &out))
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^K10`+cluster.CAHashOf(ca)+`::node:[0-9a-f]{64}\n$`), string(b))
	st, err := os.Stat(f)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.Contains(t, out.String(), "restart each")
	assert.NotContains(t, out.String(), strings.TrimSpace(string(b)), "the token is not printed")

	o.newTokenFile = f
	assert.ErrorContains(t, o.rotate(t.Context(), &out), "one token at a time")
}

// TestRotateServerTokenChecks: without DATA_DIR/token, or without an
// embedded etcd (an external datastore's record is not re-sealed), rotate
// refuses before anything is written.
func TestRotateServerTokenChecks(t *testing.T) {
	dir, ca := serverDir(t)
	o := &options{dataDir: dir}
	var out bytes.Buffer
	assert.ErrorContains(t, o.rotate(t.Context(), &out), "no server token")
	full := cluster.Token{Secret: "s3cret"}.Full(ca)
	_, err := cluster.WriteTokenFile(dir, full)
	require.NoError(t, err)
	err = o.rotate(t.Context(), &out)
	assert.ErrorContains(t, err, "has no embedded etcd")
	b, err := os.ReadFile(cluster.TokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, full+"\n", string(b), "unchanged")

	o.dataDir = t.TempDir()
	assert.ErrorContains(t, o.rotate(t.Context(), &out), "is --data-dir="+o.dataDir+" a server's?")
	o.ttl = 0
	assert.ErrorContains(t, o.create(t.Context(), &out), "is --data-dir="+o.dataDir+" a server's?")
}
