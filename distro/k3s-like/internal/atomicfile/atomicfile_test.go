package atomicfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// TestWriteReplacesSymlink: a symbolic link at the target is
// replaced by a regular file, never followed: the file it points to keeps
// its contents and mode, and a dangling link's target is not created.
func TestWriteReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	target := filepath.Join(dir, "token")
	require.NoError(t, os.Symlink(victim, target))

	require.NoError(t, atomicfile.Write(target, []byte("new"), 0o600))
	st, err := os.Lstat(target)
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "the link is replaced by a regular file: %v", st.Mode())
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	got, err = os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(got), "what the link pointed to is not written")
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), vst.Mode().Perm(), "nor chmodded")

	nowhere := filepath.Join(dir, "nowhere")
	dangling := filepath.Join(dir, "dangling")
	require.NoError(t, os.Symlink(nowhere, dangling))
	require.NoError(t, atomicfile.Write(dangling, []byte("new"), 0o600))
	_, err = os.Lstat(nowhere)
	assert.True(t, os.IsNotExist(err), "a dangling link's target is not created")
	assertOnly(t, dir, "dangling", "token", "victim")
}

// TestWriteMode: the file has exactly the mode asked for,
// whatever the umask and whatever mode a file there had.
func TestWriteMode(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	cert := filepath.Join(dir, "sub", "ca.crt")
	require.NoError(t, atomicfile.Write(cert, []byte("cert"), 0o644))
	st, err := os.Stat(cert)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "not narrowed by the umask")
	sub, err := os.Stat(filepath.Dir(cert))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), sub.Mode().Perm()&0o700, "the directory is made")

	key := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(key, []byte("old"), 0o666))
	require.NoError(t, os.Chmod(key, 0o666))
	require.NoError(t, atomicfile.Write(key, []byte("secret"), 0o600))
	st, err = os.Stat(key)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "an existing file's mode is not kept")
	got, err := os.ReadFile(key)
	require.NoError(t, err)
	assert.Equal(t, "secret", string(got))
}

// TestWriteFailureLeavesNoTemp: when the rename fails (a
// directory at the target) or the temporary file cannot be made, the
// error is returned, the target is as it was, and no temporary file is
// left behind.
func TestWriteFailureLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "token")
	require.NoError(t, os.Mkdir(target, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(target, "inside"), []byte("x"), 0o600))
	err := atomicfile.Write(target, bytes.Repeat([]byte("s"), 1<<16), 0o600)
	require.Error(t, err)
	st, err := os.Stat(target)
	require.NoError(t, err)
	assert.True(t, st.IsDir(), "the target is as it was")
	assertOnly(t, dir, "token")

	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	assert.Error(t, atomicfile.Write(filepath.Join(file, "below"), []byte("s"), 0o600), "a parent that is a file")
	assertOnly(t, dir, "file", "token")
}

// assertOnly asserts that dir holds exactly names: no temporary file left.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	assert.ElementsMatch(t, names, got, "no temporary file is left in %s", dir)
}
