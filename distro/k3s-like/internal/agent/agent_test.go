package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentCheck: the agent's flags, each error one line naming what to
// fix and never the token.
func TestAgentCheck(t *testing.T) {
	dir := t.TempDir()
	full := "K10" + strings.Repeat("a", 64) + "::server:s3cret"
	fullFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(fullFile, []byte(full+"\n"), 0o600))
	bareFile := filepath.Join(dir, "bare")
	require.NoError(t, os.WriteFile(bareFile, []byte("s3cret\n"), 0o600))
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // "" for no error
	}{
		{"ok", []string{"--server=https://192.0.2.10:6443", "--token-file=" + fullFile}, nil, ""},
		{"from the environment", nil, map[string]string{"K3S_LIKE_URL": "https://192.0.2.10:6443", "K3S_LIKE_TOKEN": full}, ""},
		{"no server", []string{"--token-file=" + fullFile}, nil, "--server is required"},
		{"http", []string{"--server=http://192.0.2.10:6443", "--token-file=" + fullFile}, nil, "--server=http://192.0.2.10:6443: want https://HOST:PORT"},
		{"path", []string{"--server=https://192.0.2.10:6443/api", "--token-file=" + fullFile}, nil, "want https://HOST:PORT"},
		{"no token", []string{"--server=https://192.0.2.10:6443"}, nil, "--token-file is required"},
		{"bare secret", []string{"--server=https://192.0.2.10:6443", "--token-file=" + bareFile}, nil, "is a bare secret: an agent needs the full token"},
		{"missing file", []string{"--server=https://192.0.2.10:6443", "--token-file=" + filepath.Join(dir, "none")}, nil, "--token-file " + filepath.Join(dir, "none")},
		{"bad kubelet-arg", []string{"--server=https://192.0.2.10:6443", "--token-file=" + fullFile, "--kubelet-arg=="}, nil, "--kubelet-arg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, a := newCommandWithOptions()
			require.NoError(t, cmd.Flags().Parse(tc.args))
			_, _, err := a.check(env(tc.env))
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
