package deb

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/images"
)

// exec.Cmd copies standard error in a goroutine.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// buildDeb makes root (a staged file tree) into a .deb of package name at
// version with dpkg-deb --build, compressed with compress ("xz", "gzip",
// "none"), files owned by root, and returns it as a Package.
func buildDeb(t *testing.T, root, name, version, compress string) Package {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb is not installed:", err)
	}
	control := filepath.Join(root, "DEBIAN")
	if err := os.MkdirAll(control, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(control, 0o755); err != nil {
		t.Fatal(err)
	}
	fields := "Package: " + name + "\nVersion: " + version + "\nArchitecture: all\n" +
		"Maintainer: kubeharness tests <tests@kubeharness.invalid>\nDescription: a test package\n"
	if err := os.WriteFile(filepath.Join(control, "control"), []byte(fields), 0o644); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(t.TempDir(), name+".deb")
	out, err := exec.Command("dpkg-deb", "--root-owner-group", "-Z"+compress, "--build", root, deb).CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb --build %s: %v\n%s", name, err, out)
	}
	if err := os.RemoveAll(control); err != nil {
		t.Fatal(err)
	}
	return Package{Name: name, Version: version, Arch: "all", File: deb}
}

// stage writes a file tree under root: each key is a path; a value
// starting with "->" is a symlink to the rest, "dir" a directory, anything
// else a regular file's content. Modes are the ones in modes (by path,
// "/etc/x"), else 0755 for directories and 0644 for files.
func stage(t *testing.T, root string, files map[string]string, modes map[string]fs.FileMode) {
	t.Helper()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		v, full := files[p], filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(v, "->"):
			err = os.Symlink(strings.TrimPrefix(v, "->"), full)
		case v == "dir":
			err = os.MkdirAll(full, 0o755)
		default:
			err = os.WriteFile(full, []byte(v), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Set every mode, whatever the umask.
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type() == fs.ModeSymlink {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		m, ok := modes["/"+filepath.ToSlash(rel)]
		switch {
		case ok:
		case d.IsDir():
			m = 0o755
		default:
			m = 0o644
		}
		return os.Chmod(p, m)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// materialize writes files under dir, as a container runtime would
// unpack the layer.
func materialize(t *testing.T, dir string, files []images.File) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, f.Path)
		var err error
		switch f.Mode.Type() {
		case fs.ModeDir:
			err = os.MkdirAll(p, 0o755)
		case fs.ModeSymlink:
			err = os.Symlink(f.Target, p)
		default:
			err = os.WriteFile(p, f.Data, 0o600)
		}
		if err == nil && f.Mode.Type() != fs.ModeSymlink {
			err = os.Chmod(p, f.Mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// runChrooted runs prog with args chrooted into dir and returns its
// combined output and error; it skips the test when chroot is not
// permitted.
func runChrooted(t *testing.T, dir, prog string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: dir}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skip("chroot is not permitted here:", err)
	}
	return string(out), err
}

// paths are the Path of files, in order.
func paths(files []images.File) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// byPath indexes files by Path.
func byPath(files []images.File) map[string]images.File {
	m := map[string]images.File{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// errorContains fails t unless err is an error whose text holds each of
// want.
func errorContains(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}
