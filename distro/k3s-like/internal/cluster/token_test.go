package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in   string
		want clusterToken
		err  string
	}{
		{"s3cret", clusterToken{secret: "s3cret"}, ""},
		{"  s3cret\n", clusterToken{secret: "s3cret"}, ""},
		{"K10" + hash + "::server:s3cret", clusterToken{secret: "s3cret", caHash: hash}, ""},
		{"K10" + hash + "::server:s3cret\n", clusterToken{secret: "s3cret", caHash: hash}, ""},
		{"K10" + hash[:10] + "::server:s3cret", clusterToken{}, "not 64 lower-case hex digits"},
		{"K10" + strings.ToUpper(hash) + "::server:s3cret", clusterToken{}, "not 64 lower-case hex digits"},
		{"K10" + strings.Repeat("zz", 32) + "::server:s3cret", clusterToken{}, "not hex"},
		{"K10" + hash + "::server:", clusterToken{}, "no secret"},
		{"", clusterToken{}, "empty"},
		{"K10notafulltoken", clusterToken{secret: "K10notafulltoken"}, ""},
	} {
		got, err := parseToken(tc.in)
		if tc.err != "" {
			require.Error(t, err, tc.in)
			assert.Contains(t, err.Error(), tc.err)
			assert.NotContains(t, err.Error(), "s3cret", "an error never shows the token")
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestFullTokenPinsTheCA(t *testing.T) {
	ca := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	full := clusterToken{secret: "s3cret"}.full(ca)
	assert.Regexp(t, `^K10[0-9a-f]{64}::server:s3cret$`, full)
	tok, err := parseToken(full)
	require.NoError(t, err)
	assert.NoError(t, tok.checkCA(ca))
	err = tok.checkCA([]byte("another CA"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing to trust it")
	assert.NotContains(t, err.Error(), "s3cret")
	assert.NoError(t, clusterToken{secret: "s3cret"}.checkCA([]byte("anything")), "a bare secret pins nothing")
}

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

	o := &serverOptions{dataDir: dataDir, token: "from-flag", tokenFile: file}
	check := func(want, wantSource string) {
		t.Helper()
		tok, source, found, err := o.resolveToken(getenv)
		require.NoError(t, err)
		require.True(t, found)
		assert.Equal(t, want, tok.secret)
		assert.Equal(t, wantSource, source)
		assert.NotContains(t, source, want)
	}
	check("from-flag", "--token")
	o.token = ""
	check("from-file", "--token-file "+file)
	o.tokenFile = ""
	check("from-env", "$K3S_LIKE_TOKEN")
	delete(env, "K3S_LIKE_TOKEN")
	check("from-env-file", "$K3S_LIKE_TOKEN_FILE "+envFile)
	delete(env, "K3S_LIKE_TOKEN_FILE")
	_, _, found, err := o.resolveToken(getenv)
	require.NoError(t, err)
	assert.False(t, found, "none")

	changed, err := writeTokenFile(dataDir, "K10"+strings.Repeat("0", 64)+"::server:generated")
	require.NoError(t, err)
	assert.True(t, changed)
	st, err := os.Stat(tokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	check("generated", "the token file "+tokenFile(dataDir))
	changed, err = writeTokenFile(dataDir, "K10"+strings.Repeat("0", 64)+"::server:generated")
	require.NoError(t, err)
	assert.False(t, changed, "the same token is not rewritten")

	o.tokenFile = filepath.Join(dir, "missing")
	_, _, _, err = o.resolveToken(getenv)
	assert.ErrorContains(t, err, "--token-file "+o.tokenFile)
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
	o := &serverOptions{tokenFile: open}
	require.NoError(t, o.checkFileModes(&stderr, nil, noEnv))
	assert.Equal(t, "Warning: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open+" (--protect-files makes this an error)\n", stderr.String())

	stderr.Reset()
	o.protectFiles = true
	err := o.checkFileModes(&stderr, nil, noEnv)
	require.Error(t, err)
	assert.Equal(t, "--protect-files: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open, err.Error())
	assert.Empty(t, stderr.String())

	o.tokenFile = closed
	require.NoError(t, o.checkFileModes(&stderr, nil, noEnv))
	assert.Empty(t, stderr.String(), "0600 is silent")

	o.tokenFile, o.token = open, "from-flag"
	require.NoError(t, o.checkFileModes(&stderr, nil, noEnv), "--token wins: the file is not read, not checked")
	o.token, o.tokenFile = "", ""

	envFile := func(k string) string {
		if k == "K3S_LIKE_TOKEN_FILE" {
			return open
		}
		return ""
	}
	err = o.checkFileModes(&stderr, nil, envFile)
	assert.ErrorContains(t, err, "the token file "+open+" ($K3S_LIKE_TOKEN_FILE) is readable by group or others")

	o.dataDir = t.TempDir()
	require.NoError(t, o.checkFileModes(&stderr, nil, noEnv), "no DATA_DIR/token yet")
	require.NoError(t, os.WriteFile(tokenFile(o.dataDir), []byte(secret), 0o640))
	require.NoError(t, os.Chmod(tokenFile(o.dataDir), 0o640))
	err = o.checkFileModes(&stderr, nil, noEnv)
	assert.EqualError(t, err, "--protect-files: the token file "+tokenFile(o.dataDir)+" is readable by group or others (mode 0640): chmod 600 "+tokenFile(o.dataDir))

	a := &agentOptions{tokenFile: open}
	require.NoError(t, a.checkFileModes(&stderr, noEnv))
	assert.Contains(t, stderr.String(), "Warning: the token file "+open+" (--token-file) is readable by group or others (mode 0644)")
	a.protectFiles = true
	assert.ErrorContains(t, a.checkFileModes(&stderr, noEnv), "--protect-files: the token file "+open+" (--token-file)")
	a.tokenFile = closed
	assert.NoError(t, a.checkFileModes(&stderr, noEnv))
	assert.NotContains(t, stderr.String(), secret)
}

// TestWriteTokenFileNoFollow: DATA_DIR/token that is a symbolic link, or
// the same token in a file group or others may read, is replaced by a
// regular 0600 file; what the link pointed to is neither written nor
// chmodded.
func TestWriteTokenFileNoFollow(t *testing.T) {
	full := "K10" + strings.Repeat("0", 64) + "::server:s3cret"
	dataDir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte(full+"\n"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	require.NoError(t, os.Symlink(victim, tokenFile(dataDir)))
	_, err := writeTokenFile(dataDir, full)
	require.NoError(t, err)
	st, err := os.Lstat(tokenFile(dataDir))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "the link is replaced")
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), vst.Mode().Perm(), "the link's target is not chmodded")

	require.NoError(t, os.Chmod(tokenFile(dataDir), 0o644))
	changed, err := writeTokenFile(dataDir, full)
	require.NoError(t, err)
	assert.False(t, changed, "the same token")
	st, err = os.Lstat(tokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "made 0600 again")
	got, err := os.ReadFile(tokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, full+"\n", string(got))
}
