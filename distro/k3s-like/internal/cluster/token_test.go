package cluster

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
		want Token
		err  string
	}{
		{"s3cret", Token{Secret: "s3cret"}, ""},
		{"  s3cret\n", Token{Secret: "s3cret"}, ""},
		{"K10" + hash + "::server:s3cret", Token{Secret: "s3cret", CAHash: hash}, ""},
		{"K10" + hash + "::server:s3cret\n", Token{Secret: "s3cret", CAHash: hash}, ""},
		{"K10" + hash[:10] + "::server:s3cret", Token{}, "not 64 lower-case hex digits"},
		{"K10" + strings.ToUpper(hash) + "::server:s3cret", Token{}, "not 64 lower-case hex digits"},
		{"K10" + strings.Repeat("zz", 32) + "::server:s3cret", Token{}, "not hex"},
		{"K10" + hash + "::server:", Token{}, "no secret"},
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
