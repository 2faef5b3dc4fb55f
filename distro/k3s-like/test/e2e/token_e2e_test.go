package e2e

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

// TestTokenFileModeE2E: a token file group or others may read is a
// warning naming it, its mode and the fix (chmod 600); with
// --protect-files the server and the agent exit 1 naming it, before
// anything else; a 0600 one is silent; the token is in no output. Also a
// config file that sets token.
func TestTokenFileModeE2E(t *testing.T) {
	const secret = "e2e-s3cret-never-printed"
	dir := t.TempDir()
	write := func(name, body string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	full := "K10" + strings.Repeat("0", 64) + "::server:" + secret + "\n"
	open, closed := write("open", full, 0o644), write("closed", full, 0o600)
	empty := write("empty.yaml", "", 0o600) // not the host's /etc/k3s-like/config.yaml
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "K3S_LIKE_CONFIG_FILE="+empty)
		out, _ := cmd.CombinedOutput()
		assert.NotContains(t, string(out), strings.TrimSpace(secret), "the token is never printed: %v", args)
		return string(out), cmd.ProcessState.ExitCode()
	}
	server := func(args ...string) (string, int) {
		return run(append([]string{"server", "--disable-agent", "--dry-run", "--data-dir=" + filepath.Join(t.TempDir(), "d")}, args...)...)
	}
	warning := "Warning: the token file " + open + " (--token-file) is readable by group or others (mode 0644): chmod 600 " + open

	out, code := server("--token-file=" + open)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, warning)
	out, code = server("--token-file="+open, "--protect-files")
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "k3s-like: --protect-files: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open, lastLine(out))
	out, code = server("--token-file="+closed, "--protect-files")
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "Warning: the token file")

	config := write("config.yaml", "token: "+secret+"\n", 0o644)
	out, code = server("--config="+config, "--protect-files")
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "k3s-like: --protect-files: the config file "+config+" (it sets token) is readable by group or others (mode 0644): chmod 600 "+config, lastLine(out))

	// The agent: the check comes first; without --protect-files the
	// warning, then the agent's own refusal of a bare secret.
	bare := write("bare", secret+"\n", 0o640)
	out, code = run("agent", "--server=https://127.0.0.1:1", "--token-file="+bare, "--data-dir="+t.TempDir())
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "Warning: the token file "+bare+" (--token-file) is readable by group or others (mode 0640): chmod 600 "+bare)
	assert.Contains(t, lastLine(out), "is a bare secret")
	out, code = run("agent", "--server=https://127.0.0.1:1", "--token-file="+open, "--protect-files", "--data-dir="+t.TempDir())
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "k3s-like: --protect-files: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open, lastLine(out))
}

// TestDryRunRedactsAndWarns: `server --dry-run` prints each component's
// arguments through the same redaction as the log (a secret-looking
// value is <redacted>), and a passthrough flag that removes a hardening
// default prints one warning naming it and what was lost.
func TestDryRunRedactsAndWarns(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.yaml") // not the host's /etc/k3s-like/config.yaml
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	cmd := exec.Command(binary, "server", "--disable-agent", "--dry-run", "--data-dir="+filepath.Join(t.TempDir(), "d"),
		"--kube-apiserver-arg=service-account-max-token-expiration=48h", "--kube-apiserver-arg=anonymous-auth=true")
	cmd.Env = append(os.Environ(), "K3S_LIKE_CONFIG_FILE="+empty)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "--service-account-max-token-expiration=<redacted>")
	assert.NotContains(t, string(out), "=48h")
	assert.Equal(t, 1, strings.Count(string(out), "Warning: a passthrough flag removes a hardening default: "), "%s", out)
	assert.Contains(t, string(out), "Warning: a passthrough flag removes a hardening default: kube-apiserver --anonymous-auth=true: requests without credentials are served as system:anonymous")
}
