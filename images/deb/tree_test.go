package deb

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/images"
)

// linksPackage builds kh-links 1.0 (xz, dpkg-deb's default): symlink
// chains, a hard link, a setuid file, a loop, a dangling link, a directory
// tree with a dangling link and a sticky directory, and documentation.
func linksPackage(t *testing.T) Package {
	t.Helper()
	root := t.TempDir()
	stage(t, root, map[string]string{
		"/usr/bin/real":     "hello\n",
		"/usr/bin/l1":       "->real",
		"/usr/bin/l2":       "->/usr/bin/l1",
		"/bin/l3":           "->../usr/bin/l2",
		"/usr/bin/suid":     "suid\n",
		"/usr/bin/loop1":    "->loop2",
		"/usr/bin/loop2":    "->loop1",
		"/usr/bin/dangling": "->missing",
		"/usr/bin/through":  "->../share/app/data",

		"/etc/app/a.conf":     "a\n",
		"/etc/app/sub/b.conf": "b\n",
		"/etc/app/sub/link":   "->../a.conf",
		"/etc/app/gone":       "->/nowhere/at/all",
		"/etc/app/sticky":     "dir",
		"/etc/app/lib":        "->/usr/share/app",

		"/usr/share/app/data":                 "data\n",
		"/usr/share/app/doc/kept":             "kept\n",
		"/usr/share/doc/kh-links/copyright":   "copyright\n",
		"/usr/share/man/man1/real.1":          "man\n",
		"/usr/share/locale/de/LC_MESSAGES/mo": "mo\n",
	}, map[string]fs.FileMode{
		"/usr/bin/real":   0o755,
		"/usr/bin/suid":   fs.ModeSetuid | 0o4755,
		"/etc/app/a.conf": 0o640,
		"/etc/app/sticky": fs.ModeSticky | 0o777,
	})
	if err := os.Link(filepath.Join(root, "usr/bin/real"), filepath.Join(root, "usr/bin/hard")); err != nil {
		t.Fatal(err)
	}
	return buildDeb(t, root, "kh-links", "1.0", "xz")
}

func TestUnpackSelect(t *testing.T) {
	ctx := context.Background()
	pkg := linksPackage(t)

	// The archive really has a hard link, or the test below proves nothing.
	tarData, err := exec.Command("dpkg-deb", "--fsys-tarfile", pkg.File).Output()
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for tr := tar.NewReader(bytes.NewReader(tarData)); ; {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeLink {
			links++
		}
	}
	if links != 1 {
		t.Fatalf("%s has %d hard links, want 1", pkg.File, links)
	}

	tree, err := Unpack(ctx, pkg)
	if err != nil {
		t.Fatal(err)
	}
	dir := func(p string) images.File { return images.File{Path: p, Mode: fs.ModeDir | 0o755} }
	link := func(p, target string) images.File {
		return images.File{Path: p, Mode: fs.ModeSymlink | 0o777, Target: target}
	}

	t.Run("symlink chain", func(t *testing.T) {
		got, err := tree.Select("/bin/l3")
		if err != nil {
			t.Fatal(err)
		}
		want := []images.File{
			dir("/bin"),
			link("/bin/l3", "../usr/bin/l2"),
			dir("/usr"),
			dir("/usr/bin"),
			link("/usr/bin/l1", "real"),
			link("/usr/bin/l2", "/usr/bin/l1"),
			{Path: "/usr/bin/real", Mode: 0o755, Data: []byte("hello\n")},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Select(/bin/l3) =\n%v\nwant\n%v", got, want)
		}
	})

	t.Run("hard link, setuid, through a relative link", func(t *testing.T) {
		got, err := tree.Select("/usr/bin/hard", "/usr/bin/suid", "/usr/bin/real", "/usr/bin/through")
		if err != nil {
			t.Fatal(err)
		}
		m := byPath(got)
		for _, p := range []string{"/usr/bin/hard", "/usr/bin/real"} {
			if f := m[p]; f.Mode != 0o755 || string(f.Data) != "hello\n" || f.Target != "" {
				t.Errorf("%s = %+v, want a regular 0755 file holding hello", p, f)
			}
		}
		if f := m["/usr/bin/suid"]; f.Mode != fs.ModeSetuid|0o755 || string(f.Data) != "suid\n" {
			t.Errorf("/usr/bin/suid = %v %q, want setuid 0755", f.Mode, f.Data)
		}
		if f := m["/usr/share/app/data"]; string(f.Data) != "data\n" {
			t.Errorf("the target of /usr/bin/through: %+v", f)
		}
		for _, f := range got {
			if f.UID != 0 || f.GID != 0 {
				t.Errorf("%s owned by %d:%d", f.Path, f.UID, f.GID)
			}
		}
	})

	t.Run("directories", func(t *testing.T) {
		got, err := tree.Select("/etc/app", "/usr/share")
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"/etc", "/etc/app", "/etc/app/a.conf", "/etc/app/gone", "/etc/app/lib",
			"/etc/app/sticky", "/etc/app/sub", "/etc/app/sub/b.conf", "/etc/app/sub/link",
			"/usr", "/usr/share", "/usr/share/app", "/usr/share/app/data",
			"/usr/share/app/doc", "/usr/share/app/doc/kept",
		}
		if p := paths(got); !slices.Equal(p, want) {
			t.Errorf("Select(/etc/app, /usr/share) paths =\n%q\nwant\n%q", p, want)
		}
		m := byPath(got)
		if f := m["/etc/app/a.conf"]; f.Mode != 0o640 {
			t.Errorf("/etc/app/a.conf mode %v, want 0640", f.Mode)
		}
		if f := m["/etc/app/sticky"]; f.Mode != fs.ModeDir|fs.ModeSticky|0o777 {
			t.Errorf("/etc/app/sticky mode %v, want sticky 0777 directory", f.Mode)
		}
		if f := m["/etc/app/gone"]; f.Target != "/nowhere/at/all" {
			t.Errorf("the dangling link /etc/app/gone: %+v", f)
		}
		// The layer takes the entries as they are.
		layer, err := images.Layer(got)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := layer.Digest(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("documentation when asked for", func(t *testing.T) {
		got, err := tree.Select("/usr/share/doc/kh-links")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(paths(got), "/usr/share/doc/kh-links/copyright") {
			t.Errorf("Select(/usr/share/doc/kh-links) = %q, want the copyright", paths(got))
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			want []string
		}{
			{"/usr/bin/loop1", []string{"/usr/bin/loop1", "more than 40 symlinks (a loop?)"}},
			{"/usr/bin/dangling", []string{"/usr/bin/dangling", "/usr/bin/missing is in none of the packages"}},
			{"/nope", []string{"/nope is in none of the packages"}},
			{"/usr/bin/real/x", []string{"/usr/bin/real is not a directory"}},
			{"usr/bin/real", []string{`"usr/bin/real"`, "not an absolute path"}},
		} {
			files, err := tree.Select(tc.path)
			errorContains(t, err, tc.want...)
			if files != nil {
				t.Errorf("Select(%s) returned files with its error", tc.path)
			}
		}
	})
}

func TestUnpackConflict(t *testing.T) {
	ctx := context.Background()
	base := linksPackage(t)
	for _, tc := range []struct {
		name  string
		files map[string]string
		modes map[string]fs.FileMode
		want  []string // in the error; none for no error
	}{
		{
			name: "kh-same",
			// The same file, and directories with another mode.
			files: map[string]string{"/usr/share/app/data": "data\n", "/usr/share/app/other": "other\n"},
			modes: map[string]fs.FileMode{"/usr/share/app": 0o700},
		},
		{
			name:  "kh-content",
			files: map[string]string{"/etc/app/a.conf": "not a\n"},
			modes: map[string]fs.FileMode{"/etc/app/a.conf": 0o640},
			want:  []string{"/etc/app/a.conf", "kh-links=1.0", "kh-content=1.0"},
		},
		{
			name:  "kh-mode",
			files: map[string]string{"/usr/share/app/data": "data\n"},
			modes: map[string]fs.FileMode{"/usr/share/app/data": 0o600},
			want:  []string{"/usr/share/app/data", "kh-links=1.0", "kh-mode=1.0"},
		},
		{
			name:  "kh-type",
			files: map[string]string{"/usr/bin/l1": "a file\n"},
			want:  []string{"/usr/bin/l1", "kh-links=1.0", "kh-type=1.0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			stage(t, root, tc.files, tc.modes)
			other := buildDeb(t, root, tc.name, "1.0", "gzip")
			tree, err := Unpack(ctx, base, other)
			if tc.want != nil {
				errorContains(t, err, tc.want...)
				if tree != nil {
					t.Error("a tree with the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := tree.Select("/usr/share/app")
			if err != nil {
				t.Fatal(err)
			}
			m := byPath(got)
			if m["/usr/share/app"].Mode != fs.ModeDir|0o755 {
				t.Errorf("/usr/share/app mode %v, want the first package's 0755", m["/usr/share/app"].Mode)
			}
			if string(m["/usr/share/app/other"].Data) != "other\n" || string(m["/usr/share/app/data"].Data) != "data\n" {
				t.Errorf("the union of both packages' /usr/share/app: %q", paths(got))
			}
		})
	}
}

// hostLib is a file ldd shows: the name a program needs and the path on
// this host.
type hostLib struct{ name, path string }

// lddLibs returns the libraries `ldd prog` lists and its loader (the
// vDSO left out); it skips the test without ldd or a dynamic prog.
func lddLibs(t *testing.T, prog string) (libs []hostLib, loader string) {
	t.Helper()
	out, err := exec.Command("ldd", prog).Output()
	if err != nil {
		t.Skipf("ldd %s: %v", prog, err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, hostLib{f[0], f[2]})
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			loader = f[0]
		}
	}
	if len(libs) == 0 || loader == "" {
		t.Skipf("ldd %s shows no libraries or no loader:\n%s", prog, out)
	}
	return libs, loader
}

// copyHost copies the host's file src to dst under root, and if src is a
// symlink, the link and (at the place the link leads under root) its
// target, recursively. It returns the paths (under root) it made.
func copyHost(t *testing.T, root, src, dst string) []string {
	t.Helper()
	fi, err := os.Lstat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, path.Dir(dst)), 0o755); err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() == fs.ModeSymlink {
		target, err := os.Readlink(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, dst)); err != nil {
			t.Fatal(err)
		}
		nextSrc, nextDst := target, target
		if !path.IsAbs(target) {
			nextSrc, nextDst = path.Join(path.Dir(src), target), path.Join(path.Dir(dst), target)
		}
		return append([]string{dst}, copyHost(t, root, nextSrc, nextDst)...)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, dst), data, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	return []string{dst}
}

// elfPackage builds a package of the host's /usr/bin/ls, the libraries
// ldd shows for it (alternately in the first and second multiarch
// directory), its loader and an unused library, leaving out the library
// omitLib and the loader if omitLoader. It returns the package, the paths
// Select("/usr/bin/ls") must give apart from directories.
func elfPackage(t *testing.T, name, omitLib string, omitLoader bool) (Package, []string) {
	t.Helper()
	const prog = "/usr/bin/ls"
	libs, loader := lddLibs(t, prog)
	dirs := libDirs(runtime.GOARCH)
	root := t.TempDir()
	want := copyHost(t, root, prog, prog)
	for i, l := range libs {
		if l.name == omitLib {
			continue
		}
		want = append(want, copyHost(t, root, l.path, path.Join(dirs[i%2], l.name))...)
	}
	if !omitLoader {
		want = append(want, copyHost(t, root, loader, loader)...)
	}
	unused, err := os.ReadFile(libs[0].path)
	if err == nil {
		err = os.WriteFile(filepath.Join(root, dirs[1], "libunused.so.1"), unused, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	return buildDeb(t, root, name, "1.0", "none"), slices.Compact(want)
}

func TestSelectELF(t *testing.T) {
	ctx := context.Background()
	pkg, want := elfPackage(t, "kh-elf", "", false)
	tree, err := Unpack(ctx, pkg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tree.Select("/usr/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range got {
		if !f.Mode.IsDir() {
			files = append(files, f.Path)
		}
	}
	if !slices.Equal(files, want) {
		t.Fatalf("Select(/usr/bin/ls) files =\n%q\nwant (ldd's closure)\n%q", files, want)
	}
	// The selection runs on its own.
	dir := t.TempDir()
	materialize(t, dir, got)
	out, err := runChrooted(t, dir, "/usr/bin/ls", "/")
	if err != nil {
		t.Fatalf("ls / in a root of the selection: %v\n%s", err, out)
	}
	if fields := strings.Fields(out); !slices.Contains(fields, "usr") || !slices.Contains(fields, "lib") {
		t.Errorf("ls / in a root of the selection printed %q, want usr and lib among it", out)
	}
}

// TestNeeds: a program of no package (the host's ls) gets what Select
// gives for the same program in the tree, but the program itself; a static
// program needs nothing; a file that is not ELF is an error.
func TestNeeds(t *testing.T) {
	ctx := context.Background()
	pkg, want := elfPackage(t, "kh-needs", "", false)
	tree, err := Unpack(ctx, pkg)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := os.ReadFile("/usr/bin/ls")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tree.Needs("ls", ls)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range got {
		if !f.Mode.IsDir() {
			files = append(files, f.Path)
		}
	}
	if want = slices.DeleteFunc(want, func(p string) bool { return p == "/usr/bin/ls" }); !slices.Equal(files, want) {
		t.Fatalf("Needs(ls) files =\n%q\nwant (ldd's closure without ls)\n%q", files, want)
	}
	if busybox, err := os.ReadFile("/bin/busybox"); err == nil {
		if got, err := tree.Needs("busybox", busybox); err != nil || len(got) != 0 {
			t.Errorf("Needs(a static busybox) = %d entries, %v; want none", len(got), err)
		}
	}
	if _, err := tree.Needs("script", []byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "script") {
		t.Errorf("Needs(a script) = %v, want an error naming it", err)
	}
}

func TestSelectELFMissing(t *testing.T) {
	ctx := context.Background()
	libs, loader := lddLibs(t, "/usr/bin/ls")
	last := libs[len(libs)-1].name // needed by ls or by a library of it

	t.Run("library", func(t *testing.T) {
		pkg, _ := elfPackage(t, "kh-elf-nolib", last, false)
		tree, err := Unpack(ctx, pkg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tree.Select("/usr/bin/ls")
		errorContains(t, err, "select /usr/bin/ls", "needs "+last+", which is in none of", libDirs(runtime.GOARCH)[0])
	})
	t.Run("loader", func(t *testing.T) {
		pkg, _ := elfPackage(t, "kh-elf-noloader", "", true)
		tree, err := Unpack(ctx, pkg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tree.Select("/usr/bin/ls")
		errorContains(t, err, "/usr/bin/ls: its loader "+loader, path.Dir(loader)+" is in none of the packages")
	})
}

// archive is a tar archive of files (a path ending in "/" is a directory,
// any other a regular file holding its own path), as a data.tar.
func archive(t *testing.T, files ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: "./" + f, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f))}
		if strings.HasSuffix(f, "/") {
			h.Mode, h.Typeflag, h.Size = 0o750, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(f)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Archives without their directories' entries, which dpkg-deb never
// builds but a hand-made .deb may hold.
func TestTreeParents(t *testing.T) {
	t.Run("made", func(t *testing.T) {
		tree := newTree()
		if err := tree.add("a=1", archive(t, "x/", "x/y/z")); err != nil {
			t.Fatal(err)
		}
		if err := tree.index(); err != nil {
			t.Fatal(err)
		}
		got, err := tree.Select("/x")
		if err != nil {
			t.Fatal(err)
		}
		want := []images.File{
			{Path: "/x", Mode: fs.ModeDir | 0o750},
			{Path: "/x/y", Mode: fs.ModeDir | 0o755},
			{Path: "/x/y/z", Mode: 0o644, Data: []byte("x/y/z")},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Select(/x) =\n%v\nwant\n%v", got, want)
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		tree := newTree()
		if err := tree.add("a=1", archive(t, "x")); err != nil {
			t.Fatal(err)
		}
		if err := tree.add("b=2", archive(t, "x/y")); err != nil {
			t.Fatal(err)
		}
		errorContains(t, tree.index(), "/x/y (package b=2)", "its parent /x (package a=1) is not a directory")
	})
	t.Run("leaving the root", func(t *testing.T) {
		errorContains(t, newTree().add("a=1", archive(t, "../x")), `"./../x"`, "not a path inside the root")
	})
}
