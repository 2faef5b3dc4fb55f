package cluster

import (
	"cmp"
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
		want Token
		err  string
	}{
		{"s3cret", Token{Secret: "s3cret"}, ""},
		{"  s3cret\n", Token{Secret: "s3cret"}, ""},
		{"K10" + hash + "::server:s3cret", Token{Secret: "s3cret", CAHash: hash, Kind: ServerToken}, ""},
		{"K10" + hash + "::server:s3cret\n", Token{Secret: "s3cret", CAHash: hash, Kind: ServerToken}, ""},
		{"K10" + hash + "::node:s3cret", Token{Secret: "s3cret", CAHash: hash, Kind: AgentToken}, ""},
		{"K10" + hash + "::abcdef.0123456789abcdef", Token{Secret: "abcdef.0123456789abcdef", CAHash: hash, Kind: BootstrapToken}, ""},
		{"abcdef.0123456789abcdef", Token{Secret: "abcdef.0123456789abcdef", Kind: BootstrapToken}, ""},
		{"K10" + hash + "::node:", Token{}, "no secret after ::node:"},
		{"K10" + hash + "::", Token{}, "no credentials"},
		{"K10" + hash + "::admin:s3cret", Token{}, "neither server:SECRET, node:SECRET nor a bootstrap token"},
		{"K10" + hash + "::ABCDEF.0123456789abcdef-s3cret", Token{}, "neither server:SECRET"},
		{"K10" + hash + "::abcde.0123456789abcdefs3cret", Token{}, "neither server:SECRET"},
		{"K10" + hash[:10] + "::server:s3cret", Token{}, "not 64 lower-case hex digits"},
		{"K10" + strings.ToUpper(hash) + "::server:s3cret", Token{}, "not 64 lower-case hex digits"},
		{"K10" + strings.Repeat("zz", 32) + "::server:s3cret", Token{}, "not hex"},
		{"K10" + hash + "::server:", Token{}, "no secret after ::server:"},
		{"", Token{}, "empty"},
		{"K10notafulltoken", Token{Secret: "K10notafulltoken"}, ""},
	} {
		got, err := ParseToken(tc.in)
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
	full := Token{Secret: "s3cret"}.Full(ca)
	assert.Regexp(t, `^K10[0-9a-f]{64}::server:s3cret$`, full)
	assert.Regexp(t, `^K10[0-9a-f]{64}::node:s3cret$`, Token{Secret: "s3cret", Kind: AgentToken}.Full(ca))
	assert.Regexp(t, `^K10[0-9a-f]{64}::abcdef.0123456789abcdef$`, Token{Secret: "abcdef.0123456789abcdef", Kind: BootstrapToken}.Full(ca))
	for _, k := range []TokenKind{"", ServerToken, AgentToken} {
		back, err := ParseToken(Token{Secret: "s3cret", Kind: k}.Full(ca))
		require.NoError(t, err)
		assert.Equal(t, cmp.Or(k, ServerToken), back.Kind, "a bare secret's full form is a server token's")
	}
	tok, err := ParseToken(full)
	require.NoError(t, err)
	assert.NoError(t, tok.CheckCA(ca))
	err = tok.CheckCA([]byte("another CA"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refusing to trust it")
	assert.NotContains(t, err.Error(), "s3cret")
	assert.NoError(t, Token{Secret: "s3cret"}.CheckCA([]byte("anything")), "a bare secret pins nothing")
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
	require.NoError(t, os.Symlink(victim, TokenFile(dataDir)))
	_, err := WriteTokenFile(dataDir, full)
	require.NoError(t, err)
	st, err := os.Lstat(TokenFile(dataDir))
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "the link is replaced")
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), vst.Mode().Perm(), "the link's target is not chmodded")

	require.NoError(t, os.Chmod(TokenFile(dataDir), 0o644))
	changed, err := WriteTokenFile(dataDir, full)
	require.NoError(t, err)
	assert.False(t, changed, "the same token")
	st, err = os.Lstat(TokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "made 0600 again")
	got, err := os.ReadFile(TokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, full+"\n", string(got))
}

// TestResolveAgentToken: --agent-token, --agent-token-file and the
// environment, in that order, never DATA_DIR; a server token or a
// bootstrap token there is an error that does not show it; none found is
// no error (the server token joins agents).
func TestResolveAgentToken(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	none := func(string) string { return "" }
	_, _, found, err := ResolveAgentToken("", "", none)
	require.NoError(t, err)
	assert.False(t, found)

	tok, source, found, err := ResolveAgentToken("a1", "ignored", none)
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, "--agent-token", source)
	assert.Equal(t, Token{Secret: "a1", Kind: AgentToken}, tok)

	f := filepath.Join(t.TempDir(), "agent-token")
	require.NoError(t, os.WriteFile(f, []byte("K10"+hash+"::node:a2\n"), 0o600))
	tok, source, _, err = ResolveAgentToken("", f, none)
	require.NoError(t, err)
	assert.Equal(t, "--agent-token-file "+f, source)
	assert.Equal(t, Token{Secret: "a2", CAHash: hash, Kind: AgentToken}, tok)

	env := map[string]string{"K3S_LIKE_AGENT_TOKEN_FILE": f}
	_, source, _, err = ResolveAgentToken("", "", func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, "$K3S_LIKE_AGENT_TOKEN_FILE "+f, source)
	env["K3S_LIKE_AGENT_TOKEN"] = "a3"
	tok, source, _, err = ResolveAgentToken("", "", func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, "$K3S_LIKE_AGENT_TOKEN", source)
	assert.Equal(t, "a3", tok.Secret)

	for _, bad := range []string{"K10" + hash + "::server:s3cret", "abcdef.0123456789abcdef", "K10" + hash + "::bogus"} {
		_, _, found, err = ResolveAgentToken(bad, "", none)
		require.Error(t, err, bad)
		assert.False(t, found)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.NotContains(t, err.Error(), "0123456789abcdef")
	}
	_, _, _, err = ResolveAgentToken("", filepath.Join(t.TempDir(), "missing"), none)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--agent-token-file")
}

// TestWriteAgentTokenFile: written 0600, unchanged the second time,
// removed for none, and removing none is no error.
func TestWriteAgentTokenFile(t *testing.T) {
	dir := t.TempDir()
	full := "K10" + strings.Repeat("0", 64) + "::node:s3cret"
	changed, err := WriteAgentTokenFile(dir, full)
	require.NoError(t, err)
	assert.True(t, changed)
	st, err := os.Stat(AgentTokenFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	changed, err = WriteAgentTokenFile(dir, full)
	require.NoError(t, err)
	assert.False(t, changed)
	changed, err = WriteAgentTokenFile(dir, "")
	require.NoError(t, err)
	assert.True(t, changed)
	_, err = os.Stat(AgentTokenFile(dir))
	assert.True(t, os.IsNotExist(err))
	changed, err = WriteAgentTokenFile(dir, "")
	require.NoError(t, err)
	assert.False(t, changed)
}
