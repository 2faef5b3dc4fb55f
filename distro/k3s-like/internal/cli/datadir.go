package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultDataDir is k3s's choice of data dir: /var/lib/k3s-like for root,
// ~/.k3s-like for anyone else.
func DefaultDataDir(euid int, home string) string {
	if euid == 0 {
		return "/var/lib/k3s-like"
	}
	return filepath.Join(home, ".k3s-like")
}

// CheckWritable creates the data dir if it is missing and fails with one
// line naming what to fix. A data dir it creates is 0700: it holds private
// keys and the etcd data (never more open, whatever the umask: a umask only
// clears bits). An existing dir keeps its mode (MkdirAll leaves it, and nothing
// chmods it): it is the operator's, who may have set that mode on purpose.
// TestFileModes checks the mode of a data dir the binary created.
func CheckWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s cannot be created (%v): choose another --data-dir", dir, UnwrapPath(err))
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable (%v): fix its permissions or choose another --data-dir", dir, UnwrapPath(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// UnwrapPath is a *os.PathError's cause, for a message that names the path
// once; any other error as it is.
func UnwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ExitCode ends the process with that status and no message: the command
// printed what it had to say (upgrade-plan's 3: something changes), or
// logged it.
type ExitCode int

func (c ExitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }
