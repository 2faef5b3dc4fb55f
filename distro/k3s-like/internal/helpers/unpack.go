package helpers

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Result is what Unpack did.
type Result struct {
	Bin     string   // the programs' directory, DATA_DIR/data/HASH/bin
	Written []string // the programs written: missing or changed
	Pruned  []string // the other HASH directories removed
	InUse   []string // the other HASH directories kept: a process runs from them
}

// Unpack makes a.Bin(dataDir) hold the archive's programs: each one
// missing, or whose content, mode or link differs from the manifest, is
// written again (to a temporary name, then renamed over, so that a
// running program keeps its file), anything else in it is removed. If
// link is set, it is then made a symbolic link to that directory (a
// directory there, the previous layout's, is replaced): a stable path
// for containerd, which records the shim's path in each task's bundle and
// runs it again after its shim exits. Last, it removes every other
// DATA_DIR/data/HASH directory no process runs from (the shims of the
// previous helpers keep theirs until they exit). Starts on one data dir
// take turns (a lock file, DATA_DIR/data/.lock). Errors name the path.
func (a *Archive) Unpack(dataDir, link string) (Result, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return Result{}, fmt.Errorf("helpers: data dir %s: %w", dataDir, err)
	}
	root := filepath.Join(abs, "data")
	res := Result{Bin: a.Bin(abs)}
	if err := os.MkdirAll(res.Bin, 0o755); err != nil {
		return res, fmt.Errorf("helpers: unpacking into %s: %w", res.Bin, err)
	}
	unlock, err := lock(filepath.Join(root, ".lock"))
	if err != nil {
		return res, fmt.Errorf("helpers: unpacking into %s: %w", res.Bin, err)
	}
	defer unlock()
	if res.Written, err = a.fix(res.Bin); err != nil {
		return res, fmt.Errorf("helpers: unpacking into %s: %w", res.Bin, err)
	}
	if link != "" {
		if err := pointLink(link, res.Bin); err != nil {
			return res, fmt.Errorf("helpers: linking %s to %s: %w", link, res.Bin, err)
		}
	}
	res.Pruned, res.InUse, err = prune(root, a.hash)
	if err != nil {
		return res, fmt.Errorf("helpers: removing old helpers under %s: %w", root, err)
	}
	return res, nil
}

// pointLink makes link a symbolic link to target, replacing what is
// there: a link, atomically; a directory, removed first.
func pointLink(link, target string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(link); err == nil && fi.IsDir() {
		if err := os.RemoveAll(link); err != nil {
			return err
		}
	}
	tmp := link + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// lock takes the lock file path, exclusively, and returns its release.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// fix writes into bin the programs missing or changed there, and removes
// what is not the archive's; it returns the names written.
func (a *Archive) fix(bin string) ([]string, error) {
	want := map[string]File{}
	for _, f := range a.manifest.Files {
		want[f.Name] = f
	}
	entries, err := os.ReadDir(bin)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok {
			if err := os.RemoveAll(filepath.Join(bin, e.Name())); err != nil {
				return nil, err
			}
		}
	}
	stale := map[string]File{}
	for _, f := range a.manifest.Files {
		ok, err := intact(filepath.Join(bin, f.Name), f)
		if err != nil {
			return nil, err
		}
		if !ok {
			stale[f.Name] = f
		}
	}
	if len(stale) == 0 {
		return nil, nil
	}
	var written []string
	err = walk(a.data, func(h *tar.Header, r io.Reader) (bool, error) {
		f, ok := stale[h.Name]
		if !ok {
			return true, nil
		}
		if err := write(bin, f, h, r); err != nil {
			return false, err
		}
		delete(stale, h.Name)
		written = append(written, h.Name)
		return len(stale) > 0, nil
	})
	if err != nil {
		return written, err
	}
	if len(stale) > 0 {
		return written, fmt.Errorf("the archive lacks %s, which its manifest lists", strings.Join(slices.Sorted(maps.Keys(stale)), ", "))
	}
	d, err := os.Open(bin)
	if err != nil {
		return written, err
	}
	defer d.Close()
	return written, d.Sync()
}

// intact reports whether path is f: the link it names, or an executable
// regular file with its content.
func intact(path string, f File) (bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if f.Link != "" {
		if fi.Mode()&os.ModeSymlink == 0 {
			return false, nil
		}
		target, err := os.Readlink(path)
		return err == nil && target == f.Link, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 || fi.Size() != f.Size {
		return false, nil
	}
	sum, _, err := fileSHA256(path)
	if err != nil {
		return false, err
	}
	return sum == f.SHA256, nil
}

// write writes the entry h (read from r) as f into bin: under a temporary
// name, checked against f, renamed over f's.
func write(bin string, f File, h *tar.Header, r io.Reader) error {
	path := filepath.Join(bin, f.Name)
	tmp := filepath.Join(bin, "."+f.Name+".new")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if f.Link != "" {
		if h.Typeflag != tar.TypeSymlink || h.Linkname != f.Link {
			return fmt.Errorf("archive entry %s is not the link to %s its manifest lists", h.Name, f.Link)
		}
		if err := os.Symlink(f.Link, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	if h.Typeflag != tar.TypeReg || h.Size != f.Size {
		return fmt.Errorf("archive entry %s is not the file of %d bytes its manifest lists", h.Name, f.Size)
	}
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	sum := sha256.New()
	_, err = io.CopyN(io.MultiWriter(out, sum), r, f.Size)
	if err == nil {
		err = out.Chmod(0o755) // whatever the umask
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && hex.EncodeToString(sum.Sum(nil)) != f.SHA256 {
		err = fmt.Errorf("archive entry %s: sha256 %x, its manifest says %s", h.Name, sum.Sum(nil), f.SHA256)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// prune removes every directory of root named like a content hash, but
// keep, from which no process runs; it returns those removed and those
// kept for a process.
func prune(root, keep string) (pruned, inUse []string, err error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, err
	}
	var old []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != keep && isHash(e.Name()) {
			old = append(old, filepath.Join(root, e.Name()))
		}
	}
	if len(old) == 0 {
		return nil, nil, nil
	}
	exes := runningExecutables()
	for _, dir := range old {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return pruned, inUse, err
		}
		if slices.ContainsFunc(exes, func(exe string) bool { return strings.HasPrefix(exe, real+"/") }) {
			inUse = append(inUse, dir)
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return pruned, inUse, err
		}
		pruned = append(pruned, dir)
	}
	return pruned, inUse, nil
}

// isHash reports whether name is a hex sha256, as Archive.Hash.
func isHash(name string) bool {
	if len(name) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// runningExecutables are the executables of this machine's processes
// (/proc/PID/exe; a process whose file was replaced or removed still
// counts, by its old path). Processes this one may not inspect are left
// out.
func runningExecutables() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil {
			continue
		}
		out = append(out, strings.TrimSuffix(exe, " (deleted)"))
	}
	return out
}
