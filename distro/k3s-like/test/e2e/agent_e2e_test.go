package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentConfigFileAndSystemd: the agent takes its flags from a config
// file (-c: server, token-file, data-dir, node-name), as the server does,
// and speaks to systemd as the server does. Run with $NOTIFY_SOCKET
// against a server that does not answer, it retries the join of the
// config file's server until SIGTERM, then tells systemd STOPPING=1 (and
// no READY=1: it never was ready) and exits 1, naming the join; it
// unmounts nothing (no "Unmounted" line: its barrier never ran).
func TestAgentConfigFileAndSystemd(t *testing.T) {
	dir := t.TempDir()
	states := make(chan string, 8)
	sock, stopNotify := listenNotify(t, dir, func(state string) { states <- state })

	server := "https://127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0]) // nothing listens there
	token := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(token, []byte("K10"+strings.Repeat("0", 64)+"::server:s3cret\n"), 0o600))
	dataDir := filepath.Join(dir, "data")
	config := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf("server: %s\ntoken-file: %s\ndata-dir: %s\nnode-name: agent-from-config\n", server, token, dataDir)), 0o600))

	cmd := exec.Command(binary, "agent", "-c", config)
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit status is cmd.ProcessState's
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("k3s-like agent output:\n%s", stderr.String())
		}
	})

	require.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "Joining the server; retrying") && strings.Contains(stderr.String(), server)
	}, 30*time.Second, 100*time.Millisecond, "the agent joins the config file's server")
	assert.DirExists(t, dataDir, "the config file's data dir")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not exit within 20 s of SIGTERM")
	}
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
	assert.Contains(t, stderr.String(), "stopped before the server answered")
	assert.NotContains(t, stderr.String(), "Unmounted", "nothing to undo: the barrier never ran")

	select {
	case s := <-states:
		assert.Equal(t, "STOPPING=1", s)
	case <-time.After(5 * time.Second):
		t.Fatal("systemd heard no STOPPING=1")
	}
	stopNotify()
	close(states)
	for s := range states {
		t.Errorf("systemd heard %s after STOPPING=1", s)
	}
}
