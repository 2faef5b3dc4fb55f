package bootstrap

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFiles are Files with made-up contents (writeFiles does not parse them).
func fakeFiles() map[string][]byte {
	out := map[string][]byte{}
	for _, name := range Files {
		out[name] = []byte("content of " + name)
	}
	return out
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestWriteFilesDoesNotFollowLinks: a symbolic link where a shared file
// goes — to a file, or dangling, where os.WriteFile would have created the
// target — is refused, even for a file the server may replace; its target
// is neither written nor created, and no other file is written. A FIFO is
// refused without blocking.
func TestWriteFilesDoesNotFollowLinks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace []string
		target  func(outside string) string // what the link points at
	}{
		{"a link to a file", nil, func(o string) string {
			require.NoError(t, os.WriteFile(filepath.Join(o, "victim"), []byte("victim"), 0o644))
			return filepath.Join(o, "victim")
		}},
		{"a dangling link", nil, func(o string) string { return filepath.Join(o, "created") }},
		{"a link to a file, the file replaceable", Files, func(o string) string {
			require.NoError(t, os.WriteFile(filepath.Join(o, "victim"), []byte("victim"), 0o644))
			return filepath.Join(o, "victim")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			require.NoError(t, os.Symlink(tc.target(outside), filepath.Join(dir, "server-ca.key")))
			err := writeFiles(dir, fakeFiles(), tc.replace)
			require.Error(t, err)
			assert.Contains(t, err.Error(), filepath.Join(dir, "server-ca.key")+" is a symbolic link: refusing to follow it")
			assert.Equal(t, []string{"server-ca.key"}, entries(t, dir), "no other file written")
			if b, err := os.ReadFile(filepath.Join(outside, "victim")); err == nil {
				assert.Equal(t, "victim", string(b), "the link's target is untouched")
			}
			_, err = os.Stat(filepath.Join(outside, "created"))
			assert.True(t, os.IsNotExist(err), "a dangling link's target is not created")
		})
	}
	t.Run("a FIFO", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "client-ca.crt"), 0o600))
		err := writeFiles(dir, fakeFiles(), nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "client-ca.crt is not a regular file")
	})
}

// TestWriteFilesModesAndAllOrNothing: whatever the umask, keys are 0600
// and the rest 0644, also for a file that was there with the same content
// and another mode; no temporary file is left behind. A file there that
// differs from the cluster's (the last one written) fails the call before
// any file is written.
func TestWriteFilesModesAndAllOrNothing(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	files := fakeFiles()

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "server-ca.crt"), files["server-ca.crt"], 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client-ca.key"), files["client-ca.key"], 0o666))
	require.NoError(t, writeFiles(dir, files, nil))
	assert.ElementsMatch(t, Files, entries(t, dir), "exactly the files, no temporary one left")
	for _, name := range Files {
		st, err := os.Lstat(filepath.Join(dir, name))
		require.NoError(t, err)
		want := os.FileMode(0o644)
		if strings.HasSuffix(name, ".key") {
			want = 0o600
		}
		assert.Equal(t, want, st.Mode(), name)
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		assert.Equal(t, files[name], b)
	}

	dir = t.TempDir()
	last := Files[len(Files)-1]
	require.NoError(t, os.WriteFile(filepath.Join(dir, last), []byte("another cluster's"), 0o644))
	err := writeFiles(dir, files, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), last+" differs from the cluster's: this data dir belongs to another cluster")
	assert.Equal(t, []string{last}, entries(t, dir), "nothing written")
	require.NoError(t, writeFiles(dir, files, []string{last}), "unless it may be replaced")
}
