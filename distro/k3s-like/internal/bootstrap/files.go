package bootstrap

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// writeFiles writes Files from files to dir, after checking every one that
// is already there: one that differs from the cluster's is an error (that
// data dir belongs to another cluster), unless its name is in replace (the
// files this server just made and lost to another server's); one that is a
// symbolic link or not a regular file is an error. So either every file is
// written or none is. Keys are 0600, the rest 0644.
func writeFiles(dir string, files map[string][]byte, replace []string) error {
	return writeNames(dir, files, Files, replace)
}

// writeNames is writeFiles of the files names.
func writeNames(dir string, files map[string][]byte, names, replace []string) error {
	mayReplace := map[string]bool{}
	for _, r := range replace {
		mayReplace[r] = true
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		have, err := readRegular(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case !bytes.Equal(have, files[name]) && !mayReplace[name]:
			return fmt.Errorf("%s differs from the cluster's: this data dir belongs to another cluster; use a fresh --data-dir", path)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, name := range names {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".key" {
			mode = 0o600
		}
		if err := atomicfile.Write(filepath.Join(dir, name), files[name], mode); err != nil {
			return err
		}
	}
	return nil
}

// readRegular reads path without following a symbolic link there (nor
// blocking on a FIFO); anything but a regular file is an error naming it.
// A missing file is an error that is fs.ErrNotExist.
func readRegular(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: refusing to follow it; the cluster's PKI files must be regular files (remove the link)", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): the cluster's PKI files must be (remove it)", path, st.Mode().Type())
	}
	return io.ReadAll(f)
}
