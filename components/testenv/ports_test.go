package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FreePort never returns a port twice in one process, even once the port
// is free again: 500 draws from 15,000 ports repeat one with probability
// above 0.999 when nothing is recorded.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	ports, err := FreePorts(500)
	require.NoError(t, err)
	for _, p := range ports {
		require.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.GreaterOrEqual(t, p, portLow)
		assert.Less(t, p, portHigh)
	}
}

// A reservation holds while its process runs, for that process too, and
// lapses once it has exited; a garbled record lapses as well.
func TestReservePort(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ports")
	self := os.Getpid()

	ok, err := reservePort(dir, 20001, self)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = reservePort(dir, 20001, self)
	require.NoError(t, err)
	assert.False(t, ok, "the same process again")

	// Held by another running process (this one's parent).
	require.NoError(t, os.WriteFile(filepath.Join(dir, "20002"), []byte(strconv.Itoa(os.Getppid())), 0o600))
	ok, err = reservePort(dir, 20002, self)
	require.NoError(t, err)
	assert.False(t, ok, "held by a running process")

	// Held by a process that has exited.
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "20003"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600))
	ok, err = reservePort(dir, 20003, self)
	require.NoError(t, err)
	assert.True(t, ok, "the holder has exited")
	b, err := os.ReadFile(filepath.Join(dir, "20003"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(self), string(b))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "20004"), []byte("garbage"), 0o600))
	ok, err = reservePort(dir, 20004, self)
	require.NoError(t, err)
	assert.True(t, ok, "a garbled record")

	// A directory that cannot be made is an error, not a port.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err = reservePort(filepath.Join(file, "ports"), 20005, self)
	assert.ErrorContains(t, err, "port reservations")
}
