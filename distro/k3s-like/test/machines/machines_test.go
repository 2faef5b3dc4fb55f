package machines_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/test/machines"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	for _, tool := range []string{"ip", "nsenter", "busybox"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
}

// TestLAN: three machines reach each other over the LAN and nothing
// else (their routing tables are their own); Close kills what runs in
// them and leaves no namespace behind.
func TestLAN(t *testing.T) {
	requireRoot(t)
	start := time.Now()
	lan, err := machines.New(machines.DefaultPrefix(), 3)
	require.NoError(t, err)
	t.Logf("3 machines made in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _ = lan.Close() })
	require.Len(t, lan.Machines, 3)
	assert.Equal(t, "192.0.2.12", lan.Machines[2].IP.String())

	for _, from := range lan.Machines {
		for _, to := range lan.Machines {
			out, err := from.Command("busybox", "ping", "-c", "1", "-W", "2", to.IP.String()).CombinedOutput()
			assert.NoError(t, err, "%s → %s: %s", from.Name, to.Name, out)
		}
		routes, err := from.Command("ip", "route").CombinedOutput()
		require.NoError(t, err)
		assert.Equal(t, "default via 192.0.2.1 dev eth0 \n192.0.2.0/24 dev eth0 proto kernel scope link src "+from.IP.String()+" \n", string(routes))
	}
	out, err := lan.Machines[0].Command("busybox", "ping", "-c", "1", "-W", "1", "198.51.100.1").CombinedOutput()
	assert.Error(t, err, "nothing off the LAN answers: %s", out)

	sleeper := lan.Machines[1].Command("sleep", "600")
	require.NoError(t, sleeper.Start())
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	// nsenter enters the namespace after its exec: a teardown that ran
	// before would not see it there, and it would enter a namespace being
	// deleted and live on.
	require.Eventually(t, func() bool {
		return slices.Contains(machines.ProcessesIn(lan.Machines[1].NetnsPath()), sleeper.Process.Pid)
	}, 10*time.Second, 10*time.Millisecond, "the sleeper entered its machine's namespace")

	closed := time.Now()
	require.NoError(t, lan.Close())
	t.Logf("torn down in %s", time.Since(closed).Round(time.Millisecond))
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("a process left in a machine was not killed")
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), lan.Prefix+"-"), "namespace %s left", e.Name())
	}
	require.NoError(t, lan.Close(), "a second teardown finds nothing")
}

// TestTeardownOnFailedNew: a LAN that cannot be made (a machine's
// namespace already exists) leaves nothing of its own behind.
func TestTeardownOnFailedNew(t *testing.T) {
	requireRoot(t)
	prefix := machines.DefaultPrefix() + "x"
	require.NoError(t, exec.Command("ip", "netns", "add", prefix+"-1").Run())
	t.Cleanup(func() { _ = machines.Teardown(prefix) })
	_, err := machines.New(prefix, 2)
	require.ErrorContains(t, err, "ip netns add "+prefix+"-1")
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), prefix+"-"), "namespace %s left", e.Name())
	}
}
