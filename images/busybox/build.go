package busybox

import (
	"archive/tar"
	"bytes"
	"compress/bzip2"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/images"
)

// Version is the busybox release Build builds.
const Version = "1.37.0"

// The source of Version: the orig tarball of Debian's busybox source
// package, which is upstream's busybox-1.37.0.tar.bz2 (busybox.net's and
// Docker's busybox image's SHA-256) and stays in the pool as long as a
// Debian suite has a busybox 1.37.0.
const (
	sourceURL    = "http://deb.debian.org/debian/pool/main/b/busybox/busybox_1.37.0.orig.tar.bz2"
	sourceSHA256 = "3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4"
)

// config is what the build changes of `make defconfig`, one .config line
// each: what upstream's image (docker-library/busybox, Dockerfile.builder)
// sets and unsets, and CONFIG_STATIC (upstream's glibc variant is dynamic,
// its libc and NSS modules copied in; static, the binary is an image by
// itself, as its musl variant is).
const config = `CONFIG_AR=y
CONFIG_FEATURE_AR_CREATE=y
CONFIG_FEATURE_AR_LONG_FILENAMES=y
CONFIG_LAST_SUPPORTED_WCHAR=0
CONFIG_INOTIFYD=y
# CONFIG_FEATURE_SYNC_FANCY is not set
CONFIG_STATIC=y
`

// source is a busybox release's tarball.
type source struct {
	version, url, sha256 string
}

// CacheDir is where busybox is kept unless told otherwise:
// $KUBEHARNESS_CACHE/busybox, KUBEHARNESS_CACHE defaulting to the user's
// cache directory's kubeharness (as the Makefile's does).
func CacheDir() (string, error) {
	if d := os.Getenv("KUBEHARNESS_CACHE"); d != "" {
		return filepath.Join(d, "busybox"), nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("busybox cache: %w", err)
	}
	return filepath.Join(d, "kubeharness", "busybox"), nil
}

// Build returns the static busybox Version, from cacheDir (made if
// missing) if built before, else built there: the source downloaded once
// into cacheDir and checked against its pinned SHA-256, then `make
// defconfig`, the options of upstream's image and CONFIG_STATIC, `make
// busybox` in a temporary directory of cacheDir. Errors name the step, and
// for make its command and the end of its output.
func Build(ctx context.Context, cacheDir string) ([]byte, error) {
	return build(ctx, cacheDir, source{version: Version, url: sourceURL, sha256: sourceSHA256})
}

func build(ctx context.Context, cacheDir string, src source) ([]byte, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("busybox cache %s: %w", cacheDir, err)
	}
	bin := binPath(cacheDir, src)
	if data, err := os.ReadFile(bin); err == nil {
		return data, nil
	}
	tarball, err := fetch(ctx, cacheDir, src)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(cacheDir, ".build-")
	if err != nil {
		return nil, fmt.Errorf("busybox build: %w", err)
	}
	defer os.RemoveAll(work)
	top := "busybox-" + src.version
	epoch, err := unpack(tarball, work, top)
	if err != nil {
		return nil, fmt.Errorf("busybox source %s: %w", tarball, err)
	}
	dir := filepath.Join(work, top)
	env := buildEnv(epoch)
	if err := runMake(ctx, dir, env, "defconfig"); err != nil {
		return nil, err
	}
	if err := setConfig(filepath.Join(dir, ".config"), config); err != nil {
		return nil, err
	}
	if err := runMake(ctx, dir, env, "oldconfig"); err != nil {
		return nil, err
	}
	if err := checkConfig(filepath.Join(dir, ".config"), config); err != nil {
		return nil, err
	}
	if err := runMake(ctx, dir, env, "-j"+strconv.Itoa(runtime.NumCPU()), "busybox"); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "busybox")
	if err := images.CheckStatic(out); err != nil {
		return nil, fmt.Errorf("busybox build: %w", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("busybox build: %w", err)
	}
	if err := os.Rename(out, bin); err != nil {
		return nil, fmt.Errorf("busybox build: keeping it: %w", err)
	}
	return data, nil
}

// binPath is where src's build is kept in cacheDir: named by its version
// and a digest of its source and config.
func binPath(cacheDir string, src source) string {
	key := sha256.Sum256([]byte(src.sha256 + "\n" + config))
	return filepath.Join(cacheDir, "busybox-"+src.version+"-"+hex.EncodeToString(key[:6]))
}

// fetch is the path of src's tarball in cacheDir: the file there if its
// SHA-256 is src's, else downloaded from src.url into a temporary file
// renamed into place once its SHA-256 matches.
func fetch(ctx context.Context, cacheDir string, src source) (string, error) {
	p := filepath.Join(cacheDir, path.Base(src.url))
	if sum, err := images.FileSHA256(p); err == nil && sum == src.sha256 {
		return p, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.url, nil)
	if err != nil {
		return "", fmt.Errorf("busybox source %s: %w", src.url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("busybox source: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("busybox source %s: %s", src.url, resp.Status)
	}
	tmp, err := os.CreateTemp(cacheDir, ".download-")
	if err != nil {
		return "", fmt.Errorf("busybox source: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("busybox source %s: %w", src.url, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != src.sha256 {
		return "", fmt.Errorf("busybox source %s: SHA-256 %s, want %s", src.url, sum, src.sha256)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", fmt.Errorf("busybox source: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", fmt.Errorf("busybox source: %w", err)
	}
	return p, nil
}

// unpack extracts the .tar.bz2 at tarball, whose entries are directories
// and regular files under top, into dir and returns the modification time
// of top (the release's date, as upstream's image takes it for
// SOURCE_DATE_EPOCH).
func unpack(tarball, dir, top string) (time.Time, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var epoch time.Time
	tr := tar.NewReader(bzip2.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return time.Time{}, err
		}
		name := path.Clean(h.Name)
		if name != top && !strings.HasPrefix(name, top+"/") {
			return time.Time{}, fmt.Errorf("entry %q is not under %s/", h.Name, top)
		}
		to := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if name == top {
				epoch = h.ModTime
			}
			err = os.MkdirAll(to, 0o755)
		case tar.TypeReg:
			err = writeFile(to, tr, fs.FileMode(h.Mode)&0o755|0o644)
		default:
			err = fmt.Errorf("entry %q: type %q, want a directory or a regular file", h.Name, h.Typeflag)
		}
		if err != nil {
			return time.Time{}, err
		}
	}
	if epoch.IsZero() {
		return time.Time{}, fmt.Errorf("no directory %s/", top)
	}
	return epoch, nil
}

func writeFile(p string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// buildEnv is this process's environment without what would change the
// build (compiler, flags, a parent make's jobserver), with LC_ALL=C and
// SOURCE_DATE_EPOCH, which busybox embeds instead of the build's time.
func buildEnv(epoch time.Time) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CC", "CFLAGS", "CPPFLAGS", "LDFLAGS", "LDLIBS", "EXTRA_CFLAGS", "EXTRA_LDFLAGS", "CROSS_COMPILE", "ARCH",
			"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "GNUMAKEFLAGS", "KBUILD_OUTPUT", "LC_ALL", "SOURCE_DATE_EPOCH":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "SOURCE_DATE_EPOCH="+strconv.FormatInt(epoch.Unix(), 10))
}

// runMake runs make with args in dir, standard input empty (oldconfig
// takes the defaults). An error names the command and carries the end of
// its output.
func runMake(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "make", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 3000 {
			msg = "…" + msg[len(msg)-3000:]
		}
		return fmt.Errorf("busybox build (in %s): %s: %w (it needs make, gcc and a static libc: build-essential)\n%s", dir, strings.Join(cmd.Args, " "), err, msg)
	}
	return nil
}

// setConfig rewrites the .config at p with each line of lines in place of
// the line of its option ("CONFIG_X=…" or "# CONFIG_X is not set"),
// appended if the option has none.
func setConfig(p, lines string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("busybox config: %w", err)
	}
	have := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, want := range strings.Split(strings.TrimSuffix(lines, "\n"), "\n") {
		opt := option(want)
		found := false
		for i, l := range have {
			if option(l) == opt {
				have[i], found = want, true
			}
		}
		if !found {
			have = append(have, want)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(have, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("busybox config: %w", err)
	}
	return nil
}

// checkConfig reports an option of lines whose line the .config at p (after
// make oldconfig) does not have.
func checkConfig(p, lines string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("busybox config: %w", err)
	}
	have := map[string]bool{}
	for l := range strings.SplitSeq(string(data), "\n") {
		have[l] = true
	}
	for want := range strings.SplitSeq(strings.TrimSuffix(lines, "\n"), "\n") {
		if !have[want] {
			return fmt.Errorf("busybox config: make oldconfig did not keep %q", want)
		}
	}
	return nil
}

// option is the CONFIG_ name a .config line sets or unsets, or "".
func option(line string) string {
	if s, ok := strings.CutPrefix(line, "# "); ok {
		if name, ok := strings.CutSuffix(s, " is not set"); ok && strings.HasPrefix(name, "CONFIG_") {
			return name
		}
		return ""
	}
	if name, _, ok := strings.Cut(line, "="); ok && strings.HasPrefix(name, "CONFIG_") {
		return name
	}
	return ""
}

// Applets runs the busybox binary program with --list and returns the
// applet names it prints.
func Applets(ctx context.Context, program []byte) ([]string, error) {
	dir, err := os.MkdirTemp("", "busybox-applets-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "busybox")
	if err := os.WriteFile(bin, program, 0o755); err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, bin, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	applets := strings.Fields(string(bytes.TrimSpace(out)))
	if len(applets) == 0 {
		return nil, errors.New("busybox --list printed no applets")
	}
	return applets, nil
}
