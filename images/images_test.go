package images_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/images"
)

// The layer's compression runs in goroutines of go-containerregistry.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// entry is a layer entry as a test compares it.
type entry struct {
	name     string
	typ      byte
	mode     int64
	uid, gid int
	target   string
	data     string
}

// layerEntries reads img's only layer.
func layerEntries(t *testing.T, img v1.Image) []entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %v, want the Unix epoch", h.Name, h.ModTime)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Typeflag, h.Mode, h.Uid, h.Gid, h.Linkname, string(data)})
	}
}

func TestPauseImage(t *testing.T) {
	img, err := images.Build(images.PauseSpec([]byte("\x7fELF pause")))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent", "images", "pause.tar")
	if err := images.Write(path, images.PauseName, img); err != nil {
		t.Fatal(err)
	}
	loaded := load(t, path, images.PauseName)
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/pause"}) || cf.Config.Cmd != nil {
		t.Errorf("entrypoint %q cmd %q, want [/pause] and none", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.User != "65535:65535" {
		t.Errorf("user %q, want 65535:65535", cf.Config.User)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created %v, want the Unix epoch", cf.Created)
	}
	want := []entry{{name: "pause", typ: tar.TypeReg, mode: 0o755, data: "\x7fELF pause"}}
	if got := layerEntries(t, loaded); !slices.Equal(got, want) {
		t.Errorf("layer:\n got %+v\nwant %+v", got, want)
	}
}

// load reads the archive at path as the image tagged ref, checking the
// archive's mode and that nothing else is in its directory.
func load(t *testing.T, path, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("loading %s as %s: %v", path, ref, err)
	}
	if _, err := img.Digest(); err != nil {
		t.Fatal(err)
	}
	other, err := name.NewTag("example.com/other:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tarball.ImageFromPath(path, &other); err == nil {
		t.Errorf("%s loads as %s too; it should hold only %s", path, other, ref)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode() != 0o644 {
		t.Errorf("%s: mode %v, want 0644", path, info.Mode())
	}
	des, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(des) != 1 {
		t.Errorf("%s holds %d entries, want only %s (a temporary file left?)", filepath.Dir(path), len(des), filepath.Base(path))
	}
	return img
}

func TestCoreDNSImage(t *testing.T) {
	img, err := images.Build(images.CoreDNSSpec([]byte("\x7fELF coredns")))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "coredns.tar")
	if err := images.Write(path, images.CoreDNSName, img); err != nil {
		t.Fatal(err)
	}
	cf, err := load(t, path, images.CoreDNSName).ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{"/coredns"}) || cf.Config.Cmd != nil || cf.Config.User != "65532:65532" {
		t.Errorf("entrypoint %q cmd %q user %q, want [/coredns], none, 65532:65532", cf.Config.Entrypoint, cf.Config.Cmd, cf.Config.User)
	}
	want := []entry{{name: "coredns", typ: tar.TypeReg, mode: 0o755, data: "\x7fELF coredns"}}
	if got := layerEntries(t, img); !slices.Equal(got, want) {
		t.Errorf("layer:\n got %+v\nwant %+v", got, want)
	}
}

// TestCoreDNSNameIsTheModuleVersion: the image's tag is the version of
// github.com/coredns/coredns that go.mod requires, the one built.
func TestCoreDNSNameIsTheModuleVersion(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var version string
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/coredns/coredns" {
			version = f[1]
		}
	}
	if version == "" {
		t.Fatal("go.mod requires no github.com/coredns/coredns")
	}
	if want := "kubeharness.local/coredns:" + version; images.CoreDNSName != want {
		t.Errorf("CoreDNSName %q, want %q (go.mod requires github.com/coredns/coredns %s)", images.CoreDNSName, want, version)
	}
}

func TestBusyboxImage(t *testing.T) {
	spec, err := images.BusyboxSpec([]byte("busybox binary"), []string{"sh", "busybox", "[", "wget"})
	if err != nil {
		t.Fatal(err)
	}
	img, err := images.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := images.BusyboxName("1:1.35.0-4+deb12u1+b1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "busybox.tar")
	if err := images.Write(path, ref, img); err != nil {
		t.Fatal(err)
	}
	loaded := load(t, path, ref)
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cf.Config.Cmd, []string{"sh"}) || cf.Config.Entrypoint != nil {
		t.Errorf("cmd %q entrypoint %q, want [sh] and none", cf.Config.Cmd, cf.Config.Entrypoint)
	}
	if !slices.Contains(cf.Config.Env, images.DefaultPath) {
		t.Errorf("env %q lacks %s", cf.Config.Env, images.DefaultPath)
	}
	want := []entry{
		{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "bin/[", typ: tar.TypeSymlink, mode: 0o777, target: "busybox"},
		{name: "bin/busybox", typ: tar.TypeReg, mode: 0o755, data: "busybox binary"},
		{name: "bin/sh", typ: tar.TypeSymlink, mode: 0o777, target: "busybox"},
		{name: "bin/wget", typ: tar.TypeSymlink, mode: 0o777, target: "busybox"},
		{name: "etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "etc/group", typ: tar.TypeReg, mode: 0o644, data: "root:x:0:\nnogroup:x:65534:\n"},
		{name: "etc/passwd", typ: tar.TypeReg, mode: 0o644, data: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		{name: "root/", typ: tar.TypeDir, mode: 0o700},
		{name: "tmp/", typ: tar.TypeDir, mode: 0o1777},
	}
	if got := layerEntries(t, loaded); !slices.Equal(got, want) {
		t.Errorf("layer:\n got %+v\nwant %+v", got, want)
	}
}

func TestLayerAddsParentsKeepsOwnersAndModes(t *testing.T) {
	img, err := images.Build(images.Spec{Files: []images.File{
		{Path: "/usr/local/bin/tool", Mode: fs.ModeSetuid | 0o750, UID: 0, GID: 7, Data: []byte("x")},
		{Path: "home/app/", Mode: fs.ModeDir | fs.ModeSetgid | 0o770, UID: 1000, GID: 1000},
		{Path: "/home/app/link", Mode: fs.ModeSymlink | 0o777, UID: 1000, GID: 1000, Target: "../../usr/local/bin/tool"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{
		{name: "home/", typ: tar.TypeDir, mode: 0o755},
		{name: "home/app/", typ: tar.TypeDir, mode: 0o2770, uid: 1000, gid: 1000},
		{name: "home/app/link", typ: tar.TypeSymlink, mode: 0o777, uid: 1000, gid: 1000, target: "../../usr/local/bin/tool"},
		{name: "usr/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/local/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/local/bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "usr/local/bin/tool", typ: tar.TypeReg, mode: 0o4750, gid: 7, data: "x"},
	}
	if got := layerEntries(t, img); !slices.Equal(got, want) {
		t.Errorf("layer:\n got %+v\nwant %+v", got, want)
	}
}

func TestSameInputsSameDigest(t *testing.T) {
	files := []images.File{
		{Path: "/a", Mode: 0o644, Data: []byte("a")},
		{Path: "/d/b", Mode: 0o600, Data: []byte("b")},
		{Path: "/d/l", Mode: fs.ModeSymlink | 0o777, Target: "b"},
	}
	digest := func(files []images.File) v1.Hash {
		t.Helper()
		img, err := images.Build(images.Spec{Files: files, Entrypoint: []string{"/a"}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	first := digest(files)
	if again := digest(slices.Clone(files)); again != first {
		t.Errorf("the same files built twice: %s, then %s", first, again)
	}
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	if d := digest(reversed); d != first {
		t.Errorf("the same files in another order: %s, want %s", d, first)
	}
	changed := slices.Clone(files)
	changed[1].Mode = 0o644
	if d := digest(changed); d == first {
		t.Errorf("a changed mode kept the digest %s", d)
	}

	// Written twice, the archives are the same bytes.
	dir := t.TempDir()
	var archives [2][]byte
	for i := range archives {
		img, err := images.Build(images.PauseSpec([]byte("pause")))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "pause.tar")
		if err := images.Write(p, images.PauseName, img); err != nil {
			t.Fatal(err)
		}
		if archives[i], err = os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Error("two archives of the same image differ")
	}
}

func TestLayerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []images.File
		want  string
	}{
		{"empty path", []images.File{{Path: "", Mode: 0o644}}, `layer entry "": not a path inside the image`},
		{"root", []images.File{{Path: "/", Mode: fs.ModeDir | 0o755}}, `layer entry "/": not a path inside the image`},
		{"escape", []images.File{{Path: "../etc/passwd", Mode: 0o644}}, `layer entry "../etc/passwd": not a path inside the image`},
		{"twice", []images.File{{Path: "/a", Mode: 0o644}, {Path: "a/", Mode: 0o644}}, `layer entry "a/": given twice`},
		{"symlink without target", []images.File{{Path: "/l", Mode: fs.ModeSymlink}}, `layer entry "/l": a symlink without a target`},
		{"target on a file", []images.File{{Path: "/f", Mode: 0o644, Target: "x"}}, `layer entry "/f": a target ("x") on an entry that is not a symlink`},
		{"directory with data", []images.File{{Path: "/d", Mode: fs.ModeDir, Data: []byte("x")}}, `layer entry "/d": a directory with data`},
		{"device", []images.File{{Path: "/dev/null", Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}}, `layer entry "/dev/null": unsupported type`},
		{"parent a file", []images.File{{Path: "/f", Mode: 0o644}, {Path: "/f/g", Mode: 0o644}}, `layer entry "f/g": its parent "f" is not a directory`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := images.Build(images.Spec{Files: tc.files})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestBusyboxSpecRefusesAppletPaths(t *testing.T) {
	for _, a := range []string{"", "..", "../sh", "sbin/init"} {
		if _, err := images.BusyboxSpec(nil, []string{"sh", a}); err == nil || !strings.Contains(err.Error(), `busybox applet "`+a+`": not a file name`) {
			t.Errorf("applet %q: error %v, want one naming it", a, err)
		}
	}
}

func TestBusyboxName(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"1:1.35.0-4+deb12u1+b1", "kubeharness.local/busybox:1.35.0-4_deb12u1_b1"},
		{"1.37.0-2", "kubeharness.local/busybox:1.37.0-2"},
		{"1:1.36.1-9~bpo12+1", "kubeharness.local/busybox:1.36.1-9_bpo12_1"},
	} {
		got, err := images.BusyboxName(tc.version)
		if err != nil || got != tc.want {
			t.Errorf("BusyboxName(%q) = %q, %v; want %q", tc.version, got, err, tc.want)
		}
		if _, err := name.NewTag(got, name.StrictValidation); err != nil {
			t.Errorf("%q is not a valid tag: %v", got, err)
		}
	}
	for _, v := range []string{"", "1:", ".1", strings.Repeat("1", 129)} {
		if got, err := images.BusyboxName(v); err == nil || !strings.Contains(err.Error(), "busybox version") {
			t.Errorf("BusyboxName(%q) = %q, %v; want an error naming the version", v, got, err)
		}
	}
}

func TestWriteErrors(t *testing.T) {
	img, err := images.Build(images.PauseSpec([]byte("pause")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := images.Write(filepath.Join(dir, "x.tar"), "Not A Name", img); err == nil || !strings.Contains(err.Error(), `image name "Not A Name"`) {
		t.Errorf("a bad name: error %v, want one naming it", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(file, "pause.tar")
	if err := images.Write(bad, images.PauseName, img); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a file as the directory: error %v, want one naming %s", err, bad)
	}
}

func TestCheckStatic(t *testing.T) {
	text := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := images.CheckStatic(text); err == nil || !strings.Contains(err.Error(), text+": not an ELF executable") {
		t.Errorf("a script: %v, want not an ELF executable", err)
	}
	if err := images.CheckStatic("/bin/ls"); err == nil || !strings.Contains(err.Error(), "/bin/ls: dynamically linked (interpreter /") {
		t.Errorf("/bin/ls: %v, want dynamically linked with its interpreter", err)
	}
	// A static binary passes: the pause program's build in cmd/mkimages's
	// tests, and Debian's busybox-static here when installed.
	if _, err := os.Stat("/bin/busybox"); err == nil {
		if err := images.CheckStatic("/bin/busybox"); err != nil {
			t.Errorf("/bin/busybox: %v", err)
		}
	}
}

// TestWriteRefs: one archive, the same image under every name; no name is
// an error.
func TestWriteRefs(t *testing.T) {
	img, err := images.Build(images.Spec{Files: []images.File{{Path: "/x", Mode: 0o644, Data: []byte("x")}}})
	if err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "two.tar")
	refs := []string{"registry.k8s.io/e2e-test-images/nginx:1.27.0-2", "registry.k8s.io/e2e-test-images/nginx:1.28.0-2"}
	if err := images.WriteRefs(path, refs, img); err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		tag, err := name.NewTag(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tarball.ImageFromPath(path, &tag)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if d, err := got.Digest(); err != nil || d != want {
			t.Errorf("%s: digest %v (%v), want %v", r, d, err, want)
		}
	}
	if err := images.WriteRefs(filepath.Join(t.TempDir(), "none.tar"), nil, img); err == nil {
		t.Error("WriteRefs with no name: no error")
	}
}
