package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write makes path a regular file holding data with exactly mode,
// or leaves it as it was. data goes to a new file in the same directory
// (os.CreateTemp: O_CREATE|O_EXCL, 0600, a random name, so nothing already
// there is opened), which is given mode (fchmod: whatever the umask),
// synced and renamed over path: a reader sees the old file or the new one,
// never half of one, and a symbolic link at path is replaced, not followed.
// The directory is synced, so that the rename outlives a crash. On an error
// before the rename succeeded the temporary file is removed.
func Write(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	if err := fill(tmp, data, mode); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("%s is written, but syncing its directory failed: %w", path, err)
	}
	return nil
}

// fill writes data to f, gives it mode, syncs and closes it.
func fill(f *os.File, data []byte, mode os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// syncDir makes a directory's entries (a rename into it) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
