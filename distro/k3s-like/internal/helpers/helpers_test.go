package helpers_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/helpers"
)

const shim = "containerd-shim-runc-v2"

// programs writes into a new directory a shim and a cni program of size
// bytes each (random, from seed) and the links bridge and loopback to cni,
// as hack/helpers.sh lays them out.
func programs(t *testing.T, seed uint64, size int) string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewChaCha8([32]byte{byte(seed)}))
	for _, name := range []string{shim, "cni"} {
		b := make([]byte, size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o755))
	}
	for _, name := range []string{"bridge", "loopback"} {
		require.NoError(t, os.Symlink("cni", filepath.Join(dir, name)))
	}
	return dir
}

// pack is the archive of the programs in dir.
func pack(t *testing.T, dir string) *helpers.Archive {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, helpers.Pack(&buf, dir))
	a, err := helpers.Open(buf.String())
	require.NoError(t, err)
	return a
}

// assertUnpacked: bin holds the programs of src, each file 0755 with its
// content, each link to its target, nothing else.
func assertUnpacked(t *testing.T, src, bin string) {
	t.Helper()
	want, err := os.ReadDir(src)
	require.NoError(t, err)
	got, err := os.ReadDir(bin)
	require.NoError(t, err)
	names := func(es []os.DirEntry) (n []string) {
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	assert.Equal(t, names(want), names(got), "the programs in %s", bin)
	for _, e := range want {
		p := filepath.Join(bin, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			wt, _ := os.Readlink(filepath.Join(src, e.Name()))
			gt, err := os.Readlink(p)
			assert.NoError(t, err, p)
			assert.Equal(t, wt, gt, p)
			continue
		}
		wb, _ := os.ReadFile(filepath.Join(src, e.Name()))
		gb, err := os.ReadFile(p)
		assert.NoError(t, err, p)
		assert.True(t, bytes.Equal(wb, gb), "%s has the archive's content", p)
		fi, err := os.Lstat(p)
		if assert.NoError(t, err) {
			assert.Equal(t, os.FileMode(0o755), fi.Mode(), p)
		}
	}
}

func TestUnpackWritesOnceAndLinks(t *testing.T) {
	src := programs(t, 1, 64<<10)
	a := pack(t, src)
	assert.Len(t, a.Hash(), 64)
	data := t.TempDir()
	link := filepath.Join(data, "agent", "bin")

	res, err := a.Unpack(data, link)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(data, "data", a.Hash(), "bin"), res.Bin)
	assert.Equal(t, a.Bin(data), res.Bin)
	assert.ElementsMatch(t, []string{shim, "cni", "bridge", "loopback"}, res.Written)
	assertUnpacked(t, src, res.Bin)
	target, err := os.Readlink(link)
	require.NoError(t, err)
	assert.Equal(t, res.Bin, target)
	b, err := os.ReadFile(filepath.Join(link, "bridge"))
	require.NoError(t, err)
	cni, _ := os.ReadFile(filepath.Join(src, "cni"))
	assert.True(t, bytes.Equal(cni, b), "agent/bin/bridge is the cni program")

	res, err = a.Unpack(data, link)
	require.NoError(t, err)
	assert.Empty(t, res.Written, "a second start writes nothing")
	assert.Empty(t, res.Pruned)
}

// TestUnpackRepairs: a changed, truncated, missing or wrong-mode file, a
// link turned into a file or to another target, and a stranger are found by the
// manifest's hashes and put right; a replaced file is a new inode (a
// program running from the old one keeps it).
func TestUnpackRepairs(t *testing.T) {
	src := programs(t, 2, 64<<10)
	a := pack(t, src)
	data := t.TempDir()
	res, err := a.Unpack(data, "")
	require.NoError(t, err)
	bin := res.Bin
	shimPath := filepath.Join(bin, shim)
	var before syscall.Stat_t
	require.NoError(t, syscall.Stat(shimPath, &before))

	// Same size, one byte changed: only the hash tells.
	b, err := os.ReadFile(shimPath)
	require.NoError(t, err)
	b[len(b)/2] ^= 0xff
	require.NoError(t, os.WriteFile(shimPath, b, 0o755))
	require.NoError(t, os.Remove(filepath.Join(bin, "cni")))
	require.NoError(t, os.Remove(filepath.Join(bin, "bridge")))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "bridge"), []byte("not a link"), 0o755))
	require.NoError(t, os.Remove(filepath.Join(bin, "loopback")))
	require.NoError(t, os.Symlink(shim, filepath.Join(bin, "loopback")))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "stranger"), []byte("x"), 0o755))

	res, err = a.Unpack(data, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{shim, "cni", "bridge", "loopback"}, res.Written)
	assertUnpacked(t, src, bin)
	var after syscall.Stat_t
	require.NoError(t, syscall.Stat(shimPath, &after))
	assert.NotEqual(t, before.Ino, after.Ino, "the changed shim is replaced, not written in place")

	// A file made not executable, and one truncated.
	require.NoError(t, os.Chmod(shimPath, 0o644))
	require.NoError(t, os.Truncate(filepath.Join(bin, "cni"), 10))
	res, err = a.Unpack(data, "")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{shim, "cni"}, res.Written)
	assertUnpacked(t, src, bin)
}

// TestUnpackPrunesOldHashes: unpacking another archive (an upgrade)
// removes the previous one's directory, no process running from it, and
// moves the link; what is not a hash directory under data/ stays.
func TestUnpackPrunesOldHashes(t *testing.T) {
	data := t.TempDir()
	link := filepath.Join(data, "agent", "bin")
	oldA, newA := pack(t, programs(t, 3, 4<<10)), pack(t, programs(t, 4, 4<<10))
	require.NotEqual(t, oldA.Hash(), newA.Hash())
	_, err := oldA.Unpack(data, link)
	require.NoError(t, err)
	mine := filepath.Join(data, "data", "mine")
	require.NoError(t, os.MkdirAll(mine, 0o700))

	res, err := newA.Unpack(data, link)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(data, "data", oldA.Hash())}, res.Pruned)
	assert.NoDirExists(t, filepath.Join(data, "data", oldA.Hash()))
	assert.DirExists(t, mine)
	target, _ := os.Readlink(link)
	assert.Equal(t, newA.Bin(data), target)
}

// TestUnpackKeepsHashDirInUse: a directory a process runs from (a shim of
// the helpers before an upgrade) is kept, and removed at the first
// unpack after the process exited.
func TestUnpackKeepsHashDirInUse(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("needs sleep(1)")
	}
	data := t.TempDir()
	oldA, newA := pack(t, programs(t, 5, 4<<10)), pack(t, programs(t, 6, 4<<10))
	res, err := oldA.Unpack(data, "")
	require.NoError(t, err)
	// A program of the old helpers, running: a copy of sleep, by another
	// name (the next unpack of oldA would remove it, not this one's).
	prog := filepath.Join(res.Bin, "running")
	copyFile(t, sleep, prog)
	cmd := exec.Command(prog, "60")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitExe(t, cmd.Process.Pid, prog)

	res, err = newA.Unpack(data, "")
	require.NoError(t, err)
	old := filepath.Join(data, "data", oldA.Hash())
	assert.Equal(t, []string{old}, res.InUse)
	assert.Empty(t, res.Pruned)
	assert.FileExists(t, prog)

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	res, err = newA.Unpack(data, "")
	require.NoError(t, err)
	assert.Equal(t, []string{old}, res.Pruned)
	assert.Empty(t, res.InUse)
	assert.NoDirExists(t, old)
}

// TestUnpackReplacesOldLayout: an upgrade from a binary that ran the node's
// shim and plugins as itself (DATA_DIR/agent/bin a directory of links to
// the binary): agent/bin becomes the link to the helpers, so the shim path
// containerd recorded in the bundles of running Pods
// (agent/bin/containerd-shim-runc-v2) still resolves, to the new shim.
func TestUnpackReplacesOldLayout(t *testing.T) {
	data := t.TempDir()
	link := filepath.Join(data, "agent", "bin")
	require.NoError(t, os.MkdirAll(link, 0o700))
	for _, name := range []string{shim, "bridge", "host-local", "loopback", "portmap"} {
		require.NoError(t, os.Symlink("/usr/local/bin/k3s-like", filepath.Join(link, name)))
	}
	src := programs(t, 7, 4<<10)
	a := pack(t, src)
	_, err := a.Unpack(data, link)
	require.NoError(t, err)
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink, "agent/bin is a link now")
	got, err := os.ReadFile(filepath.Join(link, shim))
	require.NoError(t, err)
	want, _ := os.ReadFile(filepath.Join(src, shim))
	assert.True(t, bytes.Equal(want, got), "agent/bin/%s is the new shim", shim)
}

// TestUnpackConcurrent: starts on one data dir at once take turns: each
// succeeds, and every program is written once.
func TestUnpackConcurrent(t *testing.T) {
	src := programs(t, 8, 256<<10)
	a := pack(t, src)
	data := t.TempDir()
	link := filepath.Join(data, "agent", "bin")
	const n = 8
	results := make([]helpers.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { results[i], errs[i] = a.Unpack(data, link) })
	}
	wg.Wait()
	var written []string
	for i := range n {
		require.NoError(t, errs[i])
		written = append(written, results[i].Written...)
	}
	slices.Sort(written)
	assert.Equal(t, []string{"bridge", "cni", shim, "loopback"}, written)
	assertUnpacked(t, src, a.Bin(data))
}

// TestUnpackReadOnlyDataDir: the error names the directory and the cause.
func TestUnpackReadOnlyDataDir(t *testing.T) {
	data := mountTmpfs(t, "size=1m")
	require.NoError(t, syscall.Mount("", data, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""))
	a := pack(t, programs(t, 9, 4<<10))
	_, err := a.Unpack(data, filepath.Join(data, "agent", "bin"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), a.Bin(data))
	assert.ErrorIs(t, err, syscall.EROFS)
}

// TestUnpackFullDataDir: a data dir with no room left: the error names the
// file and the cause, and no partial file is left.
func TestUnpackFullDataDir(t *testing.T) {
	data := mountTmpfs(t, "size=256k")
	a := pack(t, programs(t, 10, 1<<20))
	_, err := a.Unpack(data, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), a.Bin(data))
	assert.ErrorIs(t, err, syscall.ENOSPC)
	entries, _ := os.ReadDir(a.Bin(data))
	for _, e := range entries {
		assert.NotEqual(t, '.', e.Name()[0], "temporary file %s left", e.Name())
	}
}

func TestOpenRefusesBadArchives(t *testing.T) {
	_, err := helpers.Open("not zstd")
	assert.Error(t, err)
	_, err = helpers.Open("")
	assert.Error(t, err)

	dir := t.TempDir()
	require.NoError(t, os.Symlink("/bin/sh", filepath.Join(dir, "sh")))
	assert.ErrorContains(t, helpers.Pack(io.Discard, dir), "not to a file beside it")
	dir = t.TempDir()
	require.NoError(t, os.Symlink("missing", filepath.Join(dir, "bridge")))
	assert.ErrorContains(t, helpers.Pack(io.Discard, dir), "not a file of")
}

// mountTmpfs mounts a tmpfs with opts on a new temp dir; it skips the test
// where mounting is not permitted (it needs CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs is not permitted here (%v): it needs root", err)
		}
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o755))
}

// waitExe waits until process pid runs path (after its exec).
func waitExe(t *testing.T, pid int, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == path {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d does not run %s", pid, path)
}
