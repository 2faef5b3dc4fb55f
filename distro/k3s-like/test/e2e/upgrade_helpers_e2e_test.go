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

	"github.com/kubeharness/kubeharness/components/node/proctree"
)

// TestNodeUpgradeKeepsShims: a node of the previous layout
// ($K3S_LIKE_PREVIOUS: a binary that runs itself as its shim and CNI
// plugins, such as a go build without -tags embedhelpers or an earlier
// release) runs a Pod and is killed (SIGKILL: containerd goes with it, the
// shim and its container stay, as after a crash or an in-place upgrade);
// the binary under test, started on the same data dir in the same network
// namespace, takes the running shim back: the Pod keeps its container,
// never restarted, and its shim (the old binary) keeps running, because
// the shim path containerd recorded in its bundle, DATA_DIR/agent/bin/
// containerd-shim-runc-v2, still resolves (now to the embedded shim). A new
// Pod runs from the embedded helpers.
func TestNodeUpgradeKeepsShims(t *testing.T) {
	requireNodeHost(t)
	prev := os.Getenv("K3S_LIKE_PREVIOUS")
	if prev == "" {
		t.Skip("$K3S_LIKE_PREVIOUS: a k3s-like binary of the previous layout (its shim and CNI plugins itself)")
	}
	dataDir := t.TempDir()
	args := []string{"server", "--data-dir=" + dataDir, "--node-name=node-a", "--disable=coredns", "--vmodule=node=1"} // node=1: containerd's log
	s := startBinaryInNetns(t, prev, dataDir, netnsScript, args)
	s.waitNodeReady(90 * time.Second)
	busybox := busyboxImage(t)
	pod := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3599"]
`, name, busybox)
	}
	s.apply(pod("kept"))
	s.waitFor("true", 60*time.Second, "get", "pod", "kept", "-o", "jsonpath={.status.containerStatuses[0].ready}")
	containerID := s.kubectl("get", "pod", "kept", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
	configPath := filepath.Join(dataDir, "agent", "etc", "containerd", "config.toml")
	config, err := os.ReadFile(configPath)
	require.NoError(t, err)
	socket := tomlString(t, config, "address")
	tab, err := proctree.Read()
	require.NoError(t, err)
	oldShims := tab.Shims(socket)
	require.NotEmpty(t, oldShims, "the shims of %s", socket)
	for _, pid := range oldShims {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		t.Logf("before the upgrade: shim %d runs %s", pid, exe)
	}
	sleeps := func(tab proctree.Table) (pids []int) {
		for pid, p := range tab {
			if p.Cmdline == "sleep 3599 " {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	container := sleeps(tab)
	require.Len(t, container, 1, "the kept Pod's process")

	// containerd: the previous binary itself before, the embedded helper
	// program after.
	containerdExe := func() string {
		tab, err := proctree.Read()
		require.NoError(t, err)
		for pid, p := range tab {
			if strings.Contains(p.Cmdline, "--config "+configPath+" ") {
				exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
				return exe
			}
		}
		return ""
	}
	prevExe, err := filepath.EvalSymlinks(prev)
	require.NoError(t, err)
	assert.Equal(t, prevExe, containerdExe(), "containerd before the upgrade")

	require.NoError(t, syscall.Kill(s.pid, syscall.SIGKILL))
	<-s.exited

	// The binary under test, in the namespace the shims keep.
	cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(oldShims[0]), "-n", binary}, args...)...)
	s2 := startNode(t, dataDir, cmd, "server")
	s2.pid = cmd.Process.Pid
	s2.waitNodeReady(90 * time.Second)
	s2.apply(pod("new"))
	s2.waitFor("true", 90*time.Second, "get", "pod", "new", "-o", "jsonpath={.status.containerStatuses[0].ready}")
	// The kubelet of the new binary has synced: the kept Pod is the same
	// container, ready, never restarted.
	assert.Equal(t, containerID+" true 0", s2.kubectl("get", "pod", "kept", "-o",
		"jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].ready} {.status.containerStatuses[0].restartCount}"))
	for _, pid := range oldShims {
		assert.True(t, proctree.Alive(pid), "the old shim %d still runs", pid)
	}
	assert.True(t, proctree.Alive(container[0]), "the kept Pod's process %d still runs", container[0])
	fi, err := os.Lstat(filepath.Join(dataDir, "agent", "bin"))
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&os.ModeSymlink, "agent/bin is the link to the embedded helpers")
	tab, err = proctree.Read()
	require.NoError(t, err)
	var fromHelpers int
	for _, pid := range tab.Shims(socket) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		t.Logf("after the upgrade: shim %d runs %s", pid, exe)
		if strings.HasPrefix(exe, filepath.Join(dataDir, "data")+"/") {
			fromHelpers++
		}
	}
	assert.Positive(t, fromHelpers, "the new Pod's shim runs from the embedded helpers")
	assert.Regexp(t, "^"+filepath.Join(dataDir, "data")+"/[0-9a-f]{64}/bin/containerd$", containerdExe(), "containerd after the upgrade")
	require.NoError(t, s2.stop())
}
