package deb

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/kubeharness/kubeharness/images"
)

// maxSymlinks bounds the symlinks one path resolution follows, as Linux's
// 40 does.
const maxSymlinks = 40

// Select returns the layer entries for paths (absolute, such as
// "/usr/bin/curl" or "/etc/nginx") and what they need, sorted by path,
// each once, owned by root (0:0), modes as in the packages:
//   - each symlink met while resolving a path (relative or absolute
//     targets, resolved within the tree; more than 40 for one path is an
//     error, a loop), and the entry it leads to;
//   - every parent directory;
//   - a directory's entries, recursively, except /usr/share/doc, man, info,
//     locale and lintian; a symlink among them whose target is in none of
//     the packages is kept as it is;
//   - for an ELF file, its PT_INTERP loader and the closure of its
//     DT_NEEDED libraries, looked up in /lib/TRIPLET, /usr/lib/TRIPLET
//     (Debian's multiarch directories for runtime.GOARCH), /lib and
//     /usr/lib, skipping files of another ELF class or machine;
//     DT_RUNPATH and DT_RPATH are not read.
//
// A path, loader or library that is not in the tree is an error naming it
// (and, for a library, the file needing it). The entries' Data is the
// tree's own: read it, do not change it.
func (t *Tree) Select(paths ...string) ([]images.File, error) {
	s := &selection{t: t, out: map[string]images.File{}, done: map[string]bool{}}
	for _, p := range paths {
		if !path.IsAbs(p) {
			return nil, fmt.Errorf("select %q: not an absolute path", p)
		}
		if err := s.take(path.Clean(p), false); err != nil {
			return nil, fmt.Errorf("select %s: %w", p, err)
		}
	}
	return s.files(), nil
}

// Needs returns what the ELF program (one that is not in the tree, such
// as a program the caller built; name names it in errors) needs from the
// tree to run in an image of these files: its PT_INTERP loader and the
// closure of its DT_NEEDED libraries, with their symlinks and parent
// directories, as [Tree.Select] finds them; none for a static program. A
// program that is not ELF, or needs what the tree lacks, is an error.
func (t *Tree) Needs(name string, program []byte) ([]images.File, error) {
	s := &selection{t: t, out: map[string]images.File{}, done: map[string]bool{}}
	if err := s.takeELF(name, program); err != nil {
		return nil, err
	}
	return s.files(), nil
}

// files is s's entries sorted by path.
func (s *selection) files() []images.File {
	files := make([]images.File, 0, len(s.out))
	for _, f := range s.out {
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b images.File) int { return strings.Compare(a.Path, b.Path) })
	return files
}

// selection is one Select call's state.
type selection struct {
	t *Tree
	// out is the entries chosen so far, by path.
	out map[string]images.File
	// done is the resolved paths taken (with their contents and
	// libraries) so far.
	done map[string]bool
}

// skipped reports whether a directory walk leaves p out.
func skipped(p string) bool {
	switch p {
	case "/usr/share/doc", "/usr/share/man", "/usr/share/info", "/usr/share/locale", "/usr/share/lintian":
		return true
	}
	return false
}

// take adds p, the symlinks leading from it to an entry, that entry and
// what the entry needs. In a directory walk (walk), a chain of symlinks
// ending outside the tree is kept as it is.
func (s *selection) take(p string, walk bool) error {
	res, links, err := s.t.resolve(p)
	for _, l := range links {
		s.add(l)
	}
	var missing *notFoundError
	if walk && len(links) > 0 && errors.As(err, &missing) {
		return nil
	}
	if err != nil {
		if len(links) > 0 {
			last := links[len(links)-1]
			return fmt.Errorf("%s, through the symlink %s → %s: %w", p, last, s.t.entries[last].target, err)
		}
		return err
	}
	if s.done[res] {
		return nil
	}
	s.done[res] = true
	e := s.t.entries[res]
	if res != "/" {
		s.add(res)
	}
	switch {
	case res == "/" || e.mode.IsDir():
		for _, c := range s.t.children[res] {
			if skipped(c) {
				continue
			}
			if err := s.take(c, true); err != nil {
				return err
			}
		}
	case e.mode.Type() == 0 && bytes.HasPrefix(e.data, []byte(elf.ELFMAG)):
		return s.takeELF(res, e.data)
	}
	return nil
}

// takeELF takes the loader and the libraries the ELF file p, of content
// data, needs.
func (s *selection) takeELF(p string, data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: reading it as ELF: %w", p, err)
	}
	for _, prog := range f.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(prog.Open())
		if err != nil {
			return fmt.Errorf("%s: reading its PT_INTERP: %w", p, err)
		}
		interp := string(bytes.TrimRight(b, "\x00"))
		if !path.IsAbs(interp) {
			return fmt.Errorf("%s: its loader %q is not an absolute path", p, interp)
		}
		if err := s.take(path.Clean(interp), false); err != nil {
			return fmt.Errorf("%s: its loader %s: %w", p, interp, err)
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: reading its DT_NEEDED: %w", p, err)
	}
	for _, lib := range needed {
		found := s.t.findLib(lib, f.Class, f.Machine)
		if found == "" {
			return fmt.Errorf("%s needs %s, which is in none of %s", p, lib, strings.Join(s.t.libDirs, ", "))
		}
		if err := s.take(found, false); err != nil {
			return fmt.Errorf("%s needs %s: %w", p, lib, err)
		}
	}
	return nil
}

// findLib returns the path of the library lib (a DT_NEEDED name) in the
// first of t.libDirs that has it as an ELF file of class and machine, or
// "" if none has. A name with a slash is a path itself.
func (t *Tree) findLib(lib string, class elf.Class, machine elf.Machine) string {
	var candidates []string
	if strings.Contains(lib, "/") {
		if path.IsAbs(lib) {
			candidates = []string{path.Clean(lib)}
		}
	} else {
		for _, d := range t.libDirs {
			candidates = append(candidates, d+"/"+lib)
		}
	}
	for _, c := range candidates {
		res, _, err := t.resolve(c)
		if err != nil || res == "/" || t.entries[res].mode.Type() != 0 {
			continue
		}
		f, err := elf.NewFile(bytes.NewReader(t.entries[res].data))
		if err == nil && f.Class == class && f.Machine == machine {
			return c
		}
	}
	return ""
}

// add puts the tree's entry at p (a resolved path) and its parent
// directories into s.out.
func (s *selection) add(p string) {
	if _, ok := s.out[p]; ok {
		return
	}
	e := s.t.entries[p]
	f := images.File{Path: p, Mode: e.mode}
	switch e.mode.Type() {
	case fs.ModeSymlink:
		f.Target = e.target
	case 0:
		f.Data = e.data
	}
	s.out[p] = f
	for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
		if _, ok := s.out[dir]; ok {
			break
		}
		s.out[dir] = images.File{Path: dir, Mode: s.t.entries[dir].mode}
	}
}

// notFoundError is a path in none of the packages.
type notFoundError struct{ path string }

func (e *notFoundError) Error() string { return e.path + " is in none of the packages" }

// resolve returns the path p (clean, absolute) leads to in t, through
// symlinks in any of its components, the last included, with no symlink
// in it; and the symlinks followed, in order, even on an error. A
// component that is missing is a *notFoundError.
func (t *Tree) resolve(p string) (string, []string, error) {
	var links []string
	rest := components(p)
	cur := "/"
	for hops := 0; len(rest) > 0; {
		c := rest[0]
		rest = rest[1:]
		if c == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		e, ok := t.entries[next]
		switch {
		case !ok:
			return "", links, &notFoundError{next}
		case e.mode.Type() == fs.ModeSymlink:
			if hops++; hops > maxSymlinks {
				return "", links, fmt.Errorf("more than %d symlinks (a loop?), the last %s → %s", maxSymlinks, next, e.target)
			}
			links = append(links, next)
			if path.IsAbs(e.target) {
				cur = "/"
			}
			rest = append(components(e.target), rest...)
		case len(rest) > 0 && !e.mode.IsDir():
			return "", links, fmt.Errorf("%s is not a directory", next)
		default:
			cur = next
		}
	}
	return cur, links, nil
}

// components splits p at its slashes, dropping empty and "." parts.
func components(p string) []string {
	var out []string
	for c := range strings.SplitSeq(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}
