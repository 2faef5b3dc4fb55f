package deb

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"strings"
)

// Tree is the union of some packages' file trees, as dpkg would unpack
// them, held in memory.
type Tree struct {
	// entries is every entry by clean absolute path ("/usr/bin/curl"),
	// the root excluded.
	entries map[string]*entry
	// children lists each directory's entries, sorted.
	children map[string][]string
	// libDirs are the directories DT_NEEDED names are looked up in.
	libDirs []string
}

// entry is one file of a Tree.
type entry struct {
	// mode is fs.ModeDir, fs.ModeSymlink or no type (a regular file),
	// with the permission, setuid, setgid and sticky bits.
	mode   fs.FileMode
	data   []byte // a regular file's
	target string // a symlink's
	// pkg is the package ("name=version") that shipped it.
	pkg string
}

// Unpack reads pkgs' data archives (with `dpkg-deb --fsys-tarfile`, as
// data.tar may be xz-compressed) into one Tree, in memory. Hard links
// become copies of the file they link to. A path several packages ship is
// fine when it is a directory everywhere (the first package's mode is kept)
// or the same entry (type, mode, content or target); otherwise it is an
// error naming the path and both packages, as is an entry below a
// non-directory, one of another type (device, pipe) or one leaving the
// root. Owners are dropped: every entry Select returns is root's. A
// directory that is not in the archives but has entries gets mode 0755.
func Unpack(ctx context.Context, pkgs ...Package) (*Tree, error) {
	t := newTree()
	for _, p := range pkgs {
		id := p.Name + "=" + p.Version
		out, err := run(ctx, "", "dpkg-deb", "--fsys-tarfile", p.File)
		if err == nil {
			err = t.add(id, out)
		}
		if err != nil {
			return nil, fmt.Errorf("package %s (%s): %w", id, p.File, err)
		}
	}
	if err := t.index(); err != nil {
		return nil, err
	}
	return t, nil
}

// newTree returns an empty Tree for this machine's architecture.
func newTree() *Tree {
	return &Tree{
		entries:  map[string]*entry{},
		children: map[string][]string{},
		libDirs:  libDirs(runtime.GOARCH),
	}
}

// index adds the missing parent directories, checks that every parent is
// a directory, and lists each directory's children.
func (t *Tree) index() error {
	for p, e := range t.entries {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			d, ok := t.entries[dir]
			if !ok {
				t.entries[dir] = &entry{mode: fs.ModeDir | 0o755, pkg: e.pkg}
				continue
			}
			if !d.mode.IsDir() {
				return fmt.Errorf("%s (package %s): its parent %s (package %s) is not a directory", p, e.pkg, dir, d.pkg)
			}
			break
		}
	}
	for p := range t.entries {
		dir := path.Dir(p)
		t.children[dir] = append(t.children[dir], p)
	}
	for _, c := range t.children {
		slices.Sort(c)
	}
	return nil
}

// add merges the tar archive data, pkg's file tree, into t.
func (t *Tree) add(pkg string, data []byte) error {
	regular := map[string]*entry{} // pkg's regular files, for hard links
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the data archive: %w", err)
		}
		p, err := archivePath(h.Name)
		if err != nil {
			return err
		}
		if p == "/" {
			continue
		}
		e := &entry{mode: h.FileInfo().Mode(), pkg: pkg}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if e.data, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			regular[p] = e
		case tar.TypeSymlink:
			if h.Linkname == "" {
				return fmt.Errorf("%s: a symlink without a target", p)
			}
			e.target = h.Linkname
		case tar.TypeLink:
			target, err := archivePath(h.Linkname)
			if err != nil {
				return fmt.Errorf("hard link %s: %w", p, err)
			}
			orig, ok := regular[target]
			if !ok {
				return fmt.Errorf("hard link %s: %s is not an earlier regular file of the package", p, target)
			}
			e.mode, e.data = orig.mode, orig.data
			regular[p] = e
		default:
			return fmt.Errorf("%s: unsupported tar entry type %q", p, h.Typeflag)
		}
		if err := t.merge(p, e); err != nil {
			return err
		}
	}
}

// merge puts e at p unless p is there already, which is an error unless
// both are directories or they are the same.
func (t *Tree) merge(p string, e *entry) error {
	old, ok := t.entries[p]
	if !ok {
		t.entries[p] = e
		return nil
	}
	if old.mode.IsDir() && e.mode.IsDir() ||
		old.mode == e.mode && old.target == e.target && bytes.Equal(old.data, e.data) {
		return nil
	}
	return fmt.Errorf("%s: shipped by %s and by %s, differently (%v and %v)", p, old.pkg, e.pkg, old.mode, e.mode)
}

// archivePath is the clean absolute path of a data archive's entry name
// ("./usr/bin/curl"); a name leaving the root is an error.
func archivePath(name string) (string, error) {
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("archive entry %q: not a path inside the root", name)
	}
	return path.Join("/", c), nil
}

// libDirs are the directories, in order, DT_NEEDED names are looked up
// in for goarch: Debian's multiarch directories, then /lib and /usr/lib.
func libDirs(goarch string) []string {
	triplet := map[string]string{
		"amd64":    "x86_64-linux-gnu",
		"arm64":    "aarch64-linux-gnu",
		"arm":      "arm-linux-gnueabihf",
		"386":      "i386-linux-gnu",
		"ppc64le":  "powerpc64le-linux-gnu",
		"s390x":    "s390x-linux-gnu",
		"riscv64":  "riscv64-linux-gnu",
		"mips64le": "mips64el-linux-gnuabi64",
	}[goarch]
	if triplet == "" {
		return []string{"/lib", "/usr/lib"}
	}
	return []string{"/lib/" + triplet, "/usr/lib/" + triplet, "/lib", "/usr/lib"}
}
