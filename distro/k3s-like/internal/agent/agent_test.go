package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
		{"bare secret", []string{"--server=https://192.0.2.10:6443", "--token-file=" + bareFile}, nil, "is a bare secret: an agent needs a full token (K10…::…)"},
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

// TestAgentConfigFile: the agent reads the config file as the server does
// (-c, k3s's rules: long flag names, lists, drop-ins, the command line
// wins), keys of its own flags only, each error naming the key, the file
// and the command; a config file that sets the token is checked as private.
func TestAgentConfigFile(t *testing.T) {
	dir := t.TempDir()
	full := "K10" + strings.Repeat("a", 64) + "::server:s3cret"
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte(full+"\n"), 0o600))
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte("server: https://192.0.2.10:6443\ntoken-file: "+token+"\nnode-name: from-file\nkubelet-arg: [v=2]\nstop-timeout: 3s\n"), 0o600))
	require.NoError(t, os.MkdirAll(config+".d", 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(config+".d", "10-more.yaml"), []byte("kubelet-arg+: [max-pods=50]\n"), 0o600))
	noEnv := func(string) string { return "" }

	cmd, a := newCommandWithOptions()
	require.NoError(t, cmd.Flags().Parse([]string{"-c", config, "--node-name=from-flag"}))
	var stderr bytes.Buffer
	require.NoError(t, a.Load(cmd.Flags(), &stderr, noEnv))
	assert.Empty(t, stderr.String())
	u, _, err := a.check(noEnv)
	require.NoError(t, err)
	assert.Equal(t, "https://192.0.2.10:6443", u.String())
	assert.Equal(t, "from-flag", a.NodeName, "the command line wins")
	assert.Equal(t, 3*time.Second, a.StopTimeout)
	args, err := cmd.Flags().GetStringArray("kubelet-arg")
	require.NoError(t, err)
	assert.Equal(t, []string{"v=2", "max-pods=50"}, args, "key+: appends")

	serverOnly := filepath.Join(dir, "server.yaml")
	require.NoError(t, os.WriteFile(serverOnly, []byte("https-listen-port: 7443\n"), 0o600))
	cmd, a = newCommandWithOptions()
	require.NoError(t, cmd.Flags().Parse([]string{"--config=" + serverOnly}))
	err = a.Load(cmd.Flags(), &stderr, noEnv)
	assert.EqualError(t, err, "config file "+serverOnly+`: unknown key "https-listen-port" (keys are the long flag names of k3s-like agent)`)

	withToken := filepath.Join(dir, "token.yaml")
	require.NoError(t, os.WriteFile(withToken, []byte("token: "+full+"\nprotect-files: true\n"), 0o644))
	require.NoError(t, os.Chmod(withToken, 0o644))
	cmd, a = newCommandWithOptions()
	require.NoError(t, cmd.Flags().Parse([]string{"--config=" + withToken}))
	err = a.Load(cmd.Flags(), &stderr, noEnv)
	assert.EqualError(t, err, "--protect-files: the config file "+withToken+" (it sets token) is readable by group or others (mode 0644): chmod 600 "+withToken)
}
