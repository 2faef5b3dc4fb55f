package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"
	mountutils "k8s.io/mount-utils"
)

// mountsAt are the entries of /proc/self/mountinfo whose mount point is
// dir, with whether each is shared.
func mountsAt(t *testing.T, dir string) []bool {
	t.Helper()
	infos, err := mountutils.ParseMountInfo("/proc/self/mountinfo")
	require.NoError(t, err)
	var shared []bool
	for _, m := range infos {
		if m.MountPoint == dir {
			shared = append(shared, strings.Contains(strings.Join(m.OptionalFields, " "), "shared:"))
		}
	}
	return shared
}

// TestShareRootDir: the root dir is made, and made a shared mount once;
// the kubelet's own call afterwards (upstream's MakeRShared, as its
// setupDataDirs makes it) stacks no second mount; a root dir that cannot
// be made is an error naming the flag.
func TestShareRootDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts need root")
	}
	dir := filepath.Join(t.TempDir(), "kubelet")
	t.Cleanup(func() {
		for range mountsAt(t, dir) {
			_ = unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	require.NoError(t, shareRootDir(dir))
	assert.Equal(t, []bool{true}, mountsAt(t, dir), "one shared mount at the root dir")
	require.NoError(t, shareRootDir(dir))
	require.NoError(t, hostutil.NewHostUtil().MakeRShared(dir))
	assert.Equal(t, []bool{true}, mountsAt(t, dir), "nothing stacked by a second call or the kubelet's")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	err := shareRootDir(filepath.Join(file, "kubelet"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubelet: --root-dir="+filepath.Join(file, "kubelet"))
}
