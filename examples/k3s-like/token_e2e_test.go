package main_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokenHandling: the cluster token on an external datastore.
//   - --help never shows it, even from $K3S_LIKE_TOKEN.
//   - The first server without one generates it: DATA_DIR/token, 0600, the
//     full K10<CA sha256>::server:<secret> form; the log names the file,
//     never the value; a restart reuses it.
//   - A server joining with --token-file and the full token: the secret is
//     in no process argument, log line or /components; no warning.
//   - A full token whose CA hash is not the cluster's: exit 1 naming the
//     mismatch, before anything is written.
//   - A bare secret joins, with a warning that the CA is not pinned.
//   - A server without a token on a datastore that holds a cluster: exit 1.
func TestTokenHandling(t *testing.T) {
	cmd := exec.Command(binary, "server", "--help")
	cmd.Env = append(os.Environ(), "K3S_LIKE_TOKEN=env-secret-in-help")
	help, err := cmd.CombinedOutput()
	require.NoError(t, err)
	assert.NotContains(t, string(help), "env-secret-in-help")
	assert.Contains(t, string(help), "--token-file")

	ds := externalEtcd(t)
	a := newServer(t, t.TempDir())
	a.start(append(slices.Clip(ds), "--node-name=server-a")...)
	a.waitReady(90 * time.Second)
	tokPath := filepath.Join(a.dataDir, "token")
	st, err := os.Stat(tokPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	full, err := os.ReadFile(tokPath)
	require.NoError(t, err)
	m := regexp.MustCompile(`^K10[0-9a-f]{64}::server:([0-9a-f]{64})\n$`).FindStringSubmatch(string(full))
	require.NotNil(t, m, "a full token with a 256-bit secret")
	secret := m[1]
	assert.Contains(t, a.stderr.String(), "is in "+tokPath+" (0600)")
	assert.NotContains(t, a.stderr.String(), secret)
	assert.NotContains(t, statusBody(t, a, "/components"), secret)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := a.wait(30 * time.Second)
	require.Equal(t, 0, code)
	a.start(append(slices.Clip(ds), "--node-name=server-a")...)
	a.waitReady(90 * time.Second)
	again, err := os.ReadFile(tokPath)
	require.NoError(t, err)
	assert.Equal(t, string(full), string(again), "a restart reuses the token")

	// Joining with the full token from a file.
	tf := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tf, full, 0o600))
	b := newServer(t, t.TempDir())
	b.start(append(slices.Clip(ds), "--node-name=server-b", "--token-file="+tf)...)
	b.waitReady(90 * time.Second)
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(b.cmd.Process.Pid) + "/cmdline")
	require.NoError(t, err)
	assert.NotContains(t, string(cmdline), secret)
	assert.NotContains(t, b.stderr.String(), secret)
	assert.NotContains(t, b.stderr.String(), "not pinned")
	assert.NotContains(t, statusBody(t, b, "/components"), secret)
	bTok, err := os.ReadFile(filepath.Join(b.dataDir, "token"))
	require.NoError(t, err)
	assert.Equal(t, string(full), string(bTok))

	// A full token that pins another CA.
	bad := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(bad, []byte("K10"+strings.Repeat("0", 64)+"::server:"+secret), 0o600))
	c := newServer(t, t.TempDir())
	c.start(append(slices.Clip(ds), "--node-name=server-c", "--token-file="+bad)...)
	code, _ = c.wait(60 * time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(c.stderr.String()), "not the "+strings.Repeat("0", 64)+" the token pins: refusing to trust it")
	assert.NotContains(t, c.stderr.String(), secret)
	entries, _ := os.ReadDir(filepath.Join(c.dataDir, "tls"))
	assert.Empty(t, entries, "nothing written")
	_, err = os.Stat(filepath.Join(c.dataDir, "token"))
	assert.True(t, os.IsNotExist(err))

	// A bare secret, through the environment.
	d := newServer(t, t.TempDir())
	d.env = []string{"K3S_LIKE_TOKEN=" + secret}
	d.start(append(slices.Clip(ds), "--node-name=server-d", "--disable-scheduler", "--disable-controller-manager")...)
	d.waitReady(90 * time.Second)
	assert.Contains(t, d.stderr.String(), "($K3S_LIKE_TOKEN) is a bare secret: the cluster CA fetched from the datastore is not pinned")
	assert.NotContains(t, d.stderr.String(), secret)

	// No token on a datastore that holds a cluster.
	e := newServer(t, t.TempDir())
	e.start(append(slices.Clip(ds), "--node-name=server-e")...)
	code, _ = e.wait(60 * time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(e.stderr.String()), "holds a cluster: give this server its token")
	_, err = os.Stat(filepath.Join(e.dataDir, "token"))
	assert.True(t, os.IsNotExist(err), "no token is made for an existing cluster")
}

// statusBody is the body of the server's status handler at path.
func statusBody(t *testing.T, s *server, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.statusAddress() + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
