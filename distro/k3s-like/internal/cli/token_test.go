package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// TestResolveToken: --token, --token-file, $K3S_LIKE_TOKEN,
// $K3S_LIKE_TOKEN_FILE, DATA_DIR/token, in that order; the source is named,
// never the value.
func TestResolveToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file-token")
	require.NoError(t, os.WriteFile(file, []byte("from-file\n"), 0o600))
	envFile := filepath.Join(dir, "env-file-token")
	require.NoError(t, os.WriteFile(envFile, []byte("from-env-file"), 0o600))
	env := map[string]string{"K3S_LIKE_TOKEN": "from-env", "K3S_LIKE_TOKEN_FILE": envFile}
	getenv := func(k string) string { return env[k] }
	dataDir := t.TempDir()

	o := &Options{Command: Server, DataDir: dataDir, Token: "from-flag", TokenFile: file}
	check := func(want, wantSource string) {
		t.Helper()
		tok, source, found, err := o.ResolveToken(getenv)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, want, tok.Secret)
		assert.Equal(t, wantSource, source)
		assert.NotContains(t, source, want)
	}
	check("from-flag", "--token")
	o.Token = ""
	check("from-file", "--token-file "+file)
	o.TokenFile = ""
	check("from-env", "$K3S_LIKE_TOKEN")
	delete(env, "K3S_LIKE_TOKEN")
	check("from-env-file", "$K3S_LIKE_TOKEN_FILE "+envFile)
	delete(env, "K3S_LIKE_TOKEN_FILE")
	_, _, found, err := o.ResolveToken(getenv)
	require.NoError(t, err)
	assert.False(t, found, "none")

	changed, err := cluster.WriteTokenFile(dataDir, "K10"+strings.Repeat("0", 64)+"::server:generated")
	require.NoError(t, err)
	assert.True(t, changed)
	st, err := os.Stat(cluster.TokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	check("generated", "the token file "+cluster.TokenFile(dataDir))
	changed, err = cluster.WriteTokenFile(dataDir, "K10"+strings.Repeat("0", 64)+"::server:generated")
	require.NoError(t, err)
	assert.False(t, changed, "the same token is not rewritten")

	o.TokenFile = filepath.Join(dir, "missing")
	_, _, _, err = o.ResolveToken(getenv)
	assert.ErrorContains(t, err, "--token-file "+o.TokenFile)
}

// TestTokenFileMode: the token file the server or the agent would read
// (--token-file, $K3S_LIKE_TOKEN_FILE, DATA_DIR/token; none when the token
// comes from --token or $K3S_LIKE_TOKEN) open to group or others is a
// warning naming it, its mode and the fix; with --protect-files an error
// naming it. A 0600 one is silent. The token never appears.
func TestTokenFileMode(t *testing.T) {
	const secret = "s3cret-token-value"
	dir := t.TempDir()
	write := func(name string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("K10"+strings.Repeat("0", 64)+"::server:"+secret+"\n"), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	open, closed := write("open", 0o644), write("closed", 0o600)
	noEnv := func(string) string { return "" }

	var stderr bytes.Buffer
	o := &Options{Command: Server, TokenFile: open}
	require.NoError(t, o.CheckFileModes(&stderr, nil, noEnv))
	assert.Equal(t, "Warning: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open+" (--protect-files makes this an error)\n", stderr.String())

	stderr.Reset()
	o.ProtectFiles = true
	err := o.CheckFileModes(&stderr, nil, noEnv)
	require.Error(t, err)
	assert.Equal(t, "--protect-files: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open, err.Error())
	assert.Empty(t, stderr.String())

	o.TokenFile = closed
	require.NoError(t, o.CheckFileModes(&stderr, nil, noEnv))
	assert.Empty(t, stderr.String(), "0600 is silent")

	o.TokenFile, o.Token = open, "from-flag"
	require.NoError(t, o.CheckFileModes(&stderr, nil, noEnv), "--token wins: the file is not read, not checked")
	o.Token, o.TokenFile = "", ""

	envFile := func(k string) string {
		if k == "K3S_LIKE_TOKEN_FILE" {
			return open
		}
		return ""
	}
	err = o.CheckFileModes(&stderr, nil, envFile)
	assert.ErrorContains(t, err, "the token file "+open+" ($K3S_LIKE_TOKEN_FILE) is readable by group or others")

	o.DataDir = t.TempDir()
	require.NoError(t, o.CheckFileModes(&stderr, nil, noEnv), "no DATA_DIR/token yet")
	require.NoError(t, os.WriteFile(cluster.TokenFile(o.DataDir), []byte(secret), 0o640))
	require.NoError(t, os.Chmod(cluster.TokenFile(o.DataDir), 0o640))
	err = o.CheckFileModes(&stderr, nil, noEnv)
	assert.EqualError(t, err, "--protect-files: the token file "+cluster.TokenFile(o.DataDir)+" is readable by group or others (mode 0640): chmod 600 "+cluster.TokenFile(o.DataDir))

	a := &Options{Command: Agent, TokenFile: open}
	require.NoError(t, a.CheckFileModes(&stderr, nil, noEnv))
	assert.Contains(t, stderr.String(), "Warning: the token file "+open+" (--token-file) is readable by group or others (mode 0644)")
	a.ProtectFiles = true
	assert.ErrorContains(t, a.CheckFileModes(&stderr, nil, noEnv), "--protect-files: the token file "+open+" (--token-file)")
	a.TokenFile = closed
	assert.NoError(t, a.CheckFileModes(&stderr, nil, noEnv))
	assert.NotContains(t, stderr.String(), secret)
}
