package busybox

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/images"
)

// fakeBusybox is the static program of testdata/fake.
func fakeBusybox(t *testing.T) []byte {
	t.Helper()
	p, err := images.GoBuild(context.Background(), "go", ".", "./testdata/fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tarball is a .tar.bz2 (made with the bzip2 command) of a directory
// top/, dated 1700000000, holding a file per name of files (mode 0755).
func tarball(t *testing.T, top string, files map[string][]byte) []byte {
	t.Helper()
	if _, err := exec.LookPath("bzip2"); err != nil {
		t.Skip("bzip2 is not installed:", err)
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	date := time.Unix(1700000000, 0)
	if err := tw.WriteHeader(&tar.Header{Name: top + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: date}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(files[n])), ModTime: date}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[n]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bzip2", "-c")
	cmd.Stdin = &b
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fakeMakefile does what build asks of busybox's: defconfig writes a
// .config; oldconfig runs the recipe given; busybox checks the .config,
// the environment, and copies prebuilt.
func fakeMakefile(oldconfig, busybox string) []byte {
	return []byte("defconfig:\n\tprintf '# CONFIG_STATIC is not set\\nCONFIG_AR=n\\nCONFIG_OTHER=y\\n' > .config\n" +
		"oldconfig:\n\t" + oldconfig + "\n" +
		"busybox:\n" +
		"\tgrep -qx CONFIG_STATIC=y .config && grep -qx CONFIG_AR=y .config && grep -qx CONFIG_OTHER=y .config\n" +
		"\tgrep -qx '# CONFIG_FEATURE_SYNC_FANCY is not set' .config\n" +
		"\ttest \"$$SOURCE_DATE_EPOCH\" = 1700000000 && test -z \"$$CFLAGS\" && test \"$$LC_ALL\" = C\n" +
		"\t" + busybox + "\n")
}

// serve serves data at /NAME and counts the requests.
func serve(t *testing.T, data []byte) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/busybox_9.9.9.orig.tar.bz2" {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestBuild(t *testing.T) {
	t.Setenv("CFLAGS", "-O0") // build leaves it out
	ctx := context.Background()
	fake := fakeBusybox(t)
	good := tarball(t, "busybox-9.9.9", map[string][]byte{
		"busybox-9.9.9/Makefile": fakeMakefile("true", "cp prebuilt busybox"),
		"busybox-9.9.9/prebuilt": fake,
	})
	srv, requests := serve(t, good)
	src := source{version: "9.9.9", url: srv.URL + "/busybox_9.9.9.orig.tar.bz2", sha256: sum(good)}

	t.Run("built, then from the cache", func(t *testing.T) {
		dir := t.TempDir()
		requests.Store(0)
		got, err := build(ctx, dir, src)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, fake) {
			t.Fatal("the build is not the Makefile's busybox")
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		want := []string{filepath.Base(binPath(dir, src)), "busybox_9.9.9.orig.tar.bz2"}
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("cache holds %q, want %q (no temporary files)", names, want)
		}
		if got, err := build(ctx, dir, src); err != nil || !bytes.Equal(got, fake) {
			t.Errorf("second build: %v", err)
		}
		if err := os.Remove(binPath(dir, src)); err != nil {
			t.Fatal(err)
		}
		if got, err := build(ctx, dir, src); err != nil || !bytes.Equal(got, fake) {
			t.Errorf("build from the cached source: %v", err)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("%d downloads, want 1", n)
		}
	})
	for _, tc := range []struct {
		name string
		src  source
		data []byte
		want []string
	}{
		{"wrong digest", source{version: "9.9.9", url: src.url, sha256: strings.Repeat("0", 64)}, good, []string{"busybox source " + src.url + ": SHA-256 " + sum(good) + ", want 000"}},
		{"not served", source{version: "9.9.9", url: srv.URL + "/missing.tar.bz2", sha256: src.sha256}, good, []string{"busybox source " + srv.URL + "/missing.tar.bz2: 404"}},
		{"oldconfig drops an option", src, tarball(t, "busybox-9.9.9", map[string][]byte{
			"busybox-9.9.9/Makefile": fakeMakefile("sed -i /CONFIG_INOTIFYD/d .config", "cp prebuilt busybox"),
		}), []string{`make oldconfig did not keep "CONFIG_INOTIFYD=y"`}},
		{"make fails", src, tarball(t, "busybox-9.9.9", map[string][]byte{
			"busybox-9.9.9/Makefile": fakeMakefile("true", "echo compiler error; false"),
		}), []string{"busybox build (in ", "make -j", "busybox: exit status 2", "compiler error", "build-essential"}},
		{"not static", src, tarball(t, "busybox-9.9.9", map[string][]byte{
			"busybox-9.9.9/Makefile": fakeMakefile("true", "cp /bin/sh busybox"),
		}), []string{"busybox build: ", "dynamically linked"}},
		{"entry outside the release", src, tarball(t, "busybox-9.9.9", map[string][]byte{
			"other/Makefile": fakeMakefile("true", "true"),
		}), []string{`entry "other/Makefile" is not under busybox-9.9.9/`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := tc.src
			if !bytes.Equal(tc.data, good) {
				srv, _ := serve(t, tc.data)
				s.url, s.sha256 = srv.URL+"/busybox_9.9.9.orig.tar.bz2", sum(tc.data)
			}
			_, err := build(ctx, dir, s)
			if err == nil {
				t.Fatal("built")
			}
			for _, w := range tc.want {
				if tc.name != "wrong digest" && tc.name != "not served" {
					w = strings.ReplaceAll(w, src.url, s.url)
				}
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := os.Stat(binPath(dir, s)); err == nil {
				t.Error("a failed build was kept")
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
				t.Errorf("temporary files left: %q", left)
			}
		})
	}
}

func TestSetConfig(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".config")
	in := "# comment\nCONFIG_STATIC=n\n# CONFIG_AR is not set\nCONFIG_KEEP=y\n# CONFIG_FEATURE_SYNC_FANCY is not set\nCONFIG_INOTIFYD=y\n"
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := setConfig(p, "CONFIG_STATIC=y\nCONFIG_AR=y\n# CONFIG_INOTIFYD is not set\nCONFIG_NEW=1\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := "# comment\nCONFIG_STATIC=y\nCONFIG_AR=y\nCONFIG_KEEP=y\n# CONFIG_FEATURE_SYNC_FANCY is not set\n# CONFIG_INOTIFYD is not set\nCONFIG_NEW=1\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if err := checkConfig(p, "CONFIG_STATIC=y\n# CONFIG_INOTIFYD is not set\n"); err != nil {
		t.Error(err)
	}
	if err := checkConfig(p, "CONFIG_KEEP=n\n"); err == nil || !strings.Contains(err.Error(), `did not keep "CONFIG_KEEP=n"`) {
		t.Errorf("checkConfig of a missing line: %v", err)
	}
}

func TestApplets(t *testing.T) {
	ctx := context.Background()
	got, err := Applets(ctx, fakeBusybox(t))
	if err != nil || !slices.Equal(got, []string{"sh", "wget"}) {
		t.Errorf("Applets = %q, %v; want [sh wget]", got, err)
	}
	if _, err := Applets(ctx, []byte("#!/bin/sh\nexit 3\n")); err == nil || !strings.Contains(err.Error(), "busybox --list: exit status 3") {
		t.Errorf("Applets of a failing program: %v", err)
	}
	if _, err := Applets(ctx, []byte("#!/bin/sh\n")); err == nil || !strings.Contains(err.Error(), "printed no applets") {
		t.Errorf("Applets of a silent program: %v", err)
	}
}

// TestRelease checks the behaviours busybox is built for, on the build in
// the default cache (make conformance-images or make images leave it
// there; the test does not build it): its ash passes on environment
// names that are not shell names and runs nc from PATH, its wget -T times
// out.
func TestRelease(t *testing.T) {
	dir, err := CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := binPath(dir, source{version: Version, url: sourceURL, sha256: sourceSHA256})
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("busybox %s is not built (make images builds it): %v", Version, err)
	}
	run := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Run("environment names", func(t *testing.T) {
		out, err := run([]string{"data-1=value-1", "$_-data-1=value-2", "PATH=/bin"}, "sh", "-c", "env")
		if err != nil || !strings.Contains(out, "\ndata-1=value-1\n") && !strings.HasPrefix(out, "data-1=value-1\n") || !strings.Contains(out, "$_-data-1=value-2") {
			t.Errorf("sh -c env: %v\n%s", err, out)
		}
	})
	t.Run("PATH before applets", func(t *testing.T) {
		path := t.TempDir()
		if err := os.WriteFile(filepath.Join(path, "nc"), []byte("#!/bin/sh\necho PATH nc\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := run([]string{"PATH=" + path + ":/usr/bin:/bin"}, "sh", "-c", "nc -v")
		if err != nil || out != "PATH nc\n" {
			t.Errorf("sh -c nc: %v\n%s", err, out)
		}
	})
	t.Run("wget -T", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		start := time.Now()
		out, err := run(nil, "wget", "-q", "-O", "-", "-T", "1", "http://"+l.Addr().String()+"/")
		took := time.Since(start)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(out, "download timed out") || took > 10*time.Second {
			t.Errorf("wget -T 1 from a server that never answers: %v after %s\n%s", err, took, out)
		}
	})
}
