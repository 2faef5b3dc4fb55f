package runtime

import (
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

	"github.com/kubeharness/kubeharness/components/node/proctree"
)

// TestKillShims: a process whose command line has "-address SOCKET" (a
// shim, re-executed under the binary's own name) is killed with its
// descendants (its containers), and one run from the plugins' directory
// too; another is not.
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
	bin := t.TempDir()
	plugin := exec.Command("bash", "-c", `exec -a "`+bin+`/bridge" sleep 303`)
	require.NoError(t, plugin.Start())
	pluginDone := make(chan struct{})
	go func() { _ = plugin.Wait(); close(pluginDone) }()

	var container int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || len(strings.TrimSpace(string(b))) == 0 {
			return false
		}
		container, err = strconv.Atoi(strings.TrimSpace(string(b)))
		// Once bash has exec'd (its own command line names the socket
		// too, and a process's command line reads empty during its exec).
		cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(shim.Process.Pid) + "/cmdline")
		pcmd, _ := os.ReadFile("/proc/" + strconv.Itoa(plugin.Process.Pid) + "/cmdline")
		return err == nil && strings.HasPrefix(string(cmd), "/usr/local/bin/k3s-like -namespace") && strings.HasPrefix(string(pcmd), bin+"/bridge")
	}, 10*time.Second, 10*time.Millisecond)

	assert.Equal(t, Leftovers{Shims: 2, Plugins: 1}, KillLeftovers(0, sock, bin, 5*time.Second), "the shim and its container, the plugin")
	// Dead when KillLeftovers returns: no waiting here.
	assert.False(t, proctree.Alive(container), "the container process was killed before KillLeftovers returned")
	assert.False(t, proctree.Alive(shim.Process.Pid), "the shim was killed before KillLeftovers returned")
	assert.False(t, proctree.Alive(plugin.Process.Pid), "the plugin was killed before KillLeftovers returned")
	<-pluginDone
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the shim was not reaped")
	}
	_, err := os.Stat("/proc/" + strconv.Itoa(other.Process.Pid))
	assert.NoError(t, err, "a process not naming the socket is left alone")
	assert.Equal(t, Leftovers{}, KillLeftovers(0, sock, bin, 5*time.Second), "nothing left")
}

// TestKillGroup: every process of the group is dead when KillLeftovers
// returns (a CNI plugin containerd left running); another is not touched.
func TestKillGroup(t *testing.T) {
	leader := exec.Command("sh", "-c", "sleep 310 & sleep 311 & wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, leader.Start())
	done := make(chan struct{})
	go func() { _ = leader.Wait(); close(done) }()
	other := exec.Command("sleep", "312")
	require.NoError(t, other.Start())
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	var members []int
	require.Eventually(t, func() bool {
		procs, err := proctree.Read()
		require.NoError(t, err)
		members = procs.Group(leader.Process.Pid)
		return len(members) == 3
	}, 10*time.Second, 10*time.Millisecond, "sh and its two sleeps")
	assert.Equal(t, Leftovers{Group: 3}, KillLeftovers(leader.Process.Pid, "", "", 5*time.Second))
	for _, pid := range members {
		assert.False(t, proctree.Alive(pid), "process %d of the group", pid)
	}
	assert.True(t, proctree.Alive(other.Process.Pid), "a process of another group is left alone")
	<-done
	assert.Equal(t, Leftovers{}, KillLeftovers(leader.Process.Pid, "", "", 5*time.Second), "nothing left")
}
