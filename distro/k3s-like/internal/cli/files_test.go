package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckFileModes: what group or others may do with a file, and how the
// check reports it: a warning naming the file, its mode and the fix, or
// with protect an error naming every such file; never the contents.
func TestCheckFileModes(t *testing.T) {
	for _, tc := range []struct {
		perm   os.FileMode
		secret bool
		want   string
	}{
		{0o600, true, ""},
		{0o400, true, ""},
		{0o700, true, ""},
		{0o640, true, "readable by group or others"},
		{0o604, true, "readable by group or others"},
		{0o620, true, "writable by group or others"},
		{0o666, true, "readable and writable by group or others"},
		{0o711, true, ""}, // execute alone reads nothing
		{0o644, false, ""},
		{0o664, false, "writable by group or others"},
		{0o602, false, "writable by group or others"},
	} {
		assert.Equal(t, tc.want, exposure(tc.perm, tc.secret), "%04o secret=%v", tc.perm, tc.secret)
	}

	dir := t.TempDir()
	write := func(name string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("s3cret-value\n"), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	open := write("open", 0o644)
	closed := write("closed", 0o600)
	files := []checkedFile{
		{path: open, what: "the token file", note: "--token-file", secret: true},
		{path: closed, what: "the token file", secret: true},
		{path: filepath.Join(dir, "missing"), what: "the token file", secret: true},
	}
	var stderr bytes.Buffer
	require.NoError(t, checkFileModes(&stderr, false, files))
	assert.Equal(t, "Warning: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open+" (--protect-files makes this an error)\n", stderr.String())

	stderr.Reset()
	other := write("other", 0o660)
	err := checkFileModes(&stderr, true, append(files, checkedFile{path: other, what: "the config file"}))
	require.Error(t, err)
	assert.Equal(t, "--protect-files: the token file "+open+" (--token-file) is readable by group or others (mode 0644): chmod 600 "+open+"; the config file "+other+" is writable by group or others (mode 0660): chmod 600 "+other, err.Error())
	assert.Empty(t, stderr.String(), "an error, not a warning")
	assert.NotContains(t, err.Error(), "s3cret-value")
}

// TestOpenLog: --log FILE is never opened through a symbolic link (an
// error naming it; the link's target neither created nor written), is
// created 0600 whatever the umask allows, is appended to, and an existing
// regular file open to group or others is made 0600 (was says from what);
// a FIFO keeps its mode.
func TestOpenLog(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	link := filepath.Join(dir, "link.log")
	require.NoError(t, os.Symlink(victim, link))
	_, _, err := openLog(link)
	require.EqualError(t, err, "--log="+link+": is a symbolic link: refusing to follow it; give the file it points to, or remove the link")
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(got))
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), vst.Mode().Perm(), "the link's target is not chmodded")
	dangling := filepath.Join(dir, "dangling.log")
	require.NoError(t, os.Symlink(filepath.Join(dir, "created"), dangling))
	_, _, err = openLog(dangling)
	assert.ErrorContains(t, err, "is a symbolic link")
	_, err = os.Lstat(filepath.Join(dir, "created"))
	assert.True(t, os.IsNotExist(err), "a dangling link's target is not created")

	fresh := filepath.Join(dir, "fresh.log")
	f, was, err := openLog(fresh)
	require.NoError(t, err)
	f.Close()
	assert.Zero(t, was)
	st, err := os.Stat(fresh)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	old := filepath.Join(dir, "old.log")
	require.NoError(t, os.WriteFile(old, []byte("before\n"), 0o644))
	require.NoError(t, os.Chmod(old, 0o644))
	f, was, err = openLog(old)
	require.NoError(t, err)
	_, err = f.WriteString("after\n")
	require.NoError(t, err)
	f.Close()
	assert.Equal(t, os.FileMode(0o644), was)
	st, err = os.Stat(old)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "made 0600")
	got, err = os.ReadFile(old)
	require.NoError(t, err)
	assert.Equal(t, "before\nafter\n", string(got), "appended")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Chmod(fifo, 0o644))
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0) // so that opening it to write does not block
	require.NoError(t, err)
	defer r.Close()
	f, was, err = openLog(fifo)
	require.NoError(t, err)
	f.Close()
	assert.Zero(t, was)
	st, err = os.Stat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "not a regular file (a FIFO, /dev/null): its mode is kept")
}

// TestConfigFilesToCheckSecrets: a config file that sets token or
// agent-token (or appends to one) is checked as a secret, naming the key;
// one that sets neither is not; one that cannot be read is.
func TestConfigFilesToCheckSecrets(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	files := configFilesToCheck([]string{
		write("token.yaml", "token: s3cret\n"),
		write("agent.yaml", "agent-token: s3cret\n"),
		write("appended.yaml", "agent-token+: s3cret\n"),
		write("plain.yaml", "node-name: a\n"),
		filepath.Join(dir, "missing.yaml"),
	})
	require.Len(t, files, 5)
	assert.Equal(t, []bool{true, true, true, false, true}, []bool{files[0].secret, files[1].secret, files[2].secret, files[3].secret, files[4].secret})
	assert.Equal(t, "it sets token", files[0].note)
	assert.Equal(t, "it sets agent-token", files[1].note)
	assert.Equal(t, "it sets agent-token", files[2].note)
}

// TestCheckFileOwnerAndDirectory: a file owned by another user than root
// and the process's, a file in a directory group or others may write
// (without the sticky bit) or another user owns, and a link in such a
// directory are each a warning naming the fix; a sticky directory
// (/tmp's 1777) is not; with protect, an error.
func TestCheckFileOwnerAndDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown to another user")
	}
	const other = 54321
	base := t.TempDir()
	mk := func(dir string, perm os.FileMode, uid int) string {
		p := filepath.Join(base, dir)
		require.NoError(t, os.Mkdir(p, 0o700))
		require.NoError(t, os.Chmod(p, perm))
		require.NoError(t, os.Chown(p, uid, -1))
		return p
	}
	file := func(dir, name string, uid int) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("token: s3cret\n"), 0o600))
		require.NoError(t, os.Chown(p, uid, -1))
		return p
	}
	safe := mk("safe", 0o755, 0)
	open := mk("open", 0o777, 0)
	sticky := mk("sticky", 0o777|os.ModeSticky, 0)
	theirs := mk("theirs", 0o755, other)

	check := func(f string) string {
		var stderr bytes.Buffer
		require.NoError(t, checkFiles(&stderr, false, []checkedFile{{path: f, what: "the config file"}}, 0))
		return stderr.String()
	}
	assert.Empty(t, check(file(safe, "ok.yaml", 0)))
	assert.Empty(t, check(file(sticky, "ok.yaml", 0)), "a sticky directory: others cannot replace root's file")
	owned := file(safe, "owned.yaml", other)
	assert.Equal(t, "Warning: the config file "+owned+" is owned by uid 54321, neither root nor this process's user (uid 0), who may change it: chown 0 "+owned+" (--protect-files makes this an error)\n", check(owned))
	inOpen := file(open, "c.yaml", 0)
	assert.Equal(t, "Warning: the config file "+inOpen+" is in the directory "+open+", writable by group or others (mode 0777), who may replace it: chmod go-w "+open+" (--protect-files makes this an error)\n", check(inOpen))
	inTheirs := file(theirs, "c.yaml", 0)
	assert.Equal(t, "Warning: the config file "+inTheirs+" is in the directory "+theirs+", owned by uid 54321, neither root nor this process's user (uid 0), who may replace it: chown 0 "+theirs+" (--protect-files makes this an error)\n", check(inTheirs))
	// A link in an open directory to a safe file: the link may be replaced.
	link := filepath.Join(open, "link.yaml")
	require.NoError(t, os.Symlink(file(safe, "target.yaml", 0), link))
	assert.Contains(t, check(link), "the config file "+link+" is in the directory "+open+", writable by group or others")

	err := checkFiles(io.Discard, true, []checkedFile{{path: owned, what: "the config file"}, {path: inOpen, what: "the token file", secret: true}}, 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--protect-files: the config file "+owned+" is owned by uid 54321")
	assert.Contains(t, err.Error(), "; the token file "+inOpen+" is in the directory "+open)
	assert.NotContains(t, err.Error(), "s3cret")
}
