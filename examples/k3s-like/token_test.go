package main

import (
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
