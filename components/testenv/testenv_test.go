package testenv_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// TestArgs: each component's flags are controlplane's defaults for the PKI
// and the ports (leader election on, as upstream's default; the
// apiserver's --allow-privileged=true among them), then the test's extra
// flags.
func TestArgs(t *testing.T) {
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:16443"})
	require.NoError(t, err)
	cp := &testenv.ControlPlane{Dir: dir, PKI: files, Etcd: &testenv.Etcd{ClientURL: "https://127.0.0.1:12379"},
		APIServerPort: 16443, SchedulerPort: 16444, ControllerManagerPort: 16445}
	want := controlplane.DefaultArgs(pki.Layout{Dir: filepath.Join(dir, "pki")}, controlplane.Settings{
		APIServerPort: 16443, SchedulerPort: 16444, ControllerManagerPort: 16445,
		EtcdServers: "https://127.0.0.1:12379", LeaderElect: true,
	})
	assert.Contains(t, want[names.APIServer], "--allow-privileged=true")
	assert.Equal(t, append(want[names.APIServer], "--v=2"), cp.APIServerArgs("--v=2"))
	assert.Equal(t, append(want[names.Scheduler], "--v=3"), cp.SchedulerArgs("--v=3"))
	assert.Equal(t, want[names.ControllerManager], cp.ControllerManagerArgs())
	assert.Equal(t, "https://127.0.0.1:16443", cp.APIServerURL())
}
