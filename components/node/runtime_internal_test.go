package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKillShims: a process whose command line has "-address SOCKET" (a
// shim, re-executed under the binary's own name) is killed with its
// descendants (its containers); another is not.
func TestKillShims(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	pidFile := filepath.Join(t.TempDir(), "container.pid")
	// The "shim": bash starts a "container" (sleep), records its pid, then
	// becomes a process whose command line names the socket.
	shim := exec.Command("bash", "-c", `sleep 300 & echo $! > `+pidFile+`; exec -a "/usr/local/bin/k3s-like -namespace k8s.io -id abc -address `+sock+` -publish-binary x" sleep 301`)
	require.NoError(t, shim.Start())
	done := make(chan struct{})
	go func() { _ = shim.Wait(); close(done) }()
	other := exec.Command("sleep", "302")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()

	var container int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return false
		}
		container, err = strconv.Atoi(strings.TrimSpace(string(b)))
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(shim.Process.Pid) + "/cmdline")
		return err == nil && strings.Contains(string(cmd), sock)
	}, 10*time.Second, 10*time.Millisecond)

	assert.Equal(t, 2, killShims(sock), "the shim and its container")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the shim was not killed")
	}
	assert.Eventually(t, func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(container))
		if err != nil {
			return true
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(container) + "/stat")
		return strings.Contains(string(stat), ") Z ")
	}, 5*time.Second, 10*time.Millisecond, "the container process was killed")
	_, err := os.Stat("/proc/" + strconv.Itoa(other.Process.Pid))
	assert.NoError(t, err, "a process not naming the socket is left alone")
	assert.Equal(t, 0, killShims(sock), "nothing left")
}
