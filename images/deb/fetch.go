package deb

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/images"
)

// Package is one downloaded .deb.
type Package struct {
	// Name, Version and Arch are the package's, as apt-cache show gives
	// them; Arch is "all" for an architecture-independent package.
	Name, Version, Arch string
	// File is the .deb's path in the cache directory.
	File string
	// SHA256 is the .deb's digest (lower-case hex), from apt's index and
	// checked against File.
	SHA256 string
}

// Fetch makes sure each of pkgs ("name" or "name=version", a package of this
// machine's architecture or "all") is in cacheDir (made if missing) as a
// .deb, and returns them in order. The version is the given one, or else
// the one apt would install (apt-cache policy's Candidate). A file of
// cacheDir named as apt-get download names it (name_version_arch.deb, ':'
// as %3a) is reused when its SHA256 is apt-cache show's; otherwise
// `apt-get download name=version` fetches it again into a temporary
// directory of cacheDir, and it is renamed into place once its SHA256
// matches. It runs apt-cache and apt-get (with LC_ALL=C) and nothing else;
// errors name the package and, once known, the version.
func Fetch(ctx context.Context, cacheDir string, pkgs ...string) ([]Package, error) {
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("deb cache %s: %w", cacheDir, err)
	}
	// One apt-cache policy and one apt-cache show for all (each run reads
	// apt's whole cache); if that fails, package by package, for the error
	// naming the one at fault.
	resolved, batchErr := resolveAll(ctx, pkgs)
	out := make([]Package, 0, len(pkgs))
	for i, spec := range pkgs {
		var p Package
		if batchErr == nil {
			p = resolved[i]
		} else {
			var err error
			if p, err = resolve(ctx, spec); err != nil {
				return nil, err
			}
		}
		p.File = filepath.Join(cacheDir, debFileName(p.Name, p.Version, p.Arch))
		if sum, serr := images.FileSHA256(p.File); serr != nil || sum != p.SHA256 {
			if derr := download(ctx, cacheDir, p); derr != nil {
				return nil, fmt.Errorf("package %s=%s: %w", p.Name, p.Version, derr)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// resolveAll is resolve for every spec, with one apt-cache policy and one
// apt-cache show.
func resolveAll(ctx context.Context, specs []string) ([]Package, error) {
	names := make([]string, len(specs))
	versions := make([]string, len(specs))
	var unpinned []string
	for i, spec := range specs {
		name, version, pinned := strings.Cut(spec, "=")
		if !validName(name) || (pinned && !validVersion(version)) {
			return nil, fmt.Errorf("package %q: not a Debian package name, or name=version", spec)
		}
		names[i], versions[i] = name, version
		if !pinned {
			unpinned = append(unpinned, name)
		}
	}
	if len(unpinned) > 0 {
		out, err := run(ctx, "", "apt-cache", append([]string{"policy"}, unpinned...)...)
		if err != nil {
			return nil, err
		}
		for i, spec := range specs {
			if !strings.Contains(spec, "=") {
				if versions[i], err = parseCandidate(out, names[i]); err != nil {
					return nil, err
				}
			}
		}
	}
	args := []string{"show"}
	for i := range specs {
		args = append(args, names[i]+"="+versions[i])
	}
	out, err := run(ctx, "", "apt-cache", args...)
	if err != nil {
		return nil, err
	}
	pkgs := make([]Package, len(specs))
	for i := range specs {
		rec, err := parseRecord(out, names[i], versions[i])
		if err != nil {
			return nil, err
		}
		pkgs[i] = Package{Name: names[i], Version: versions[i], Arch: rec.arch, SHA256: rec.sha256}
	}
	return pkgs, nil
}

// resolve is the version (given, or apt's candidate), architecture and
// SHA256 of one package; errors name it.
func resolve(ctx context.Context, spec string) (Package, error) {
	name, version, pinned := strings.Cut(spec, "=")
	if !validName(name) || (pinned && !validVersion(version)) {
		return Package{}, fmt.Errorf("package %q: not a Debian package name, or name=version", spec)
	}
	if !pinned {
		out, err := run(ctx, "", "apt-cache", "policy", name)
		if err == nil {
			version, err = parseCandidate(out, name)
		}
		if err != nil {
			return Package{}, fmt.Errorf("package %s: %w", name, err)
		}
	}
	out, err := run(ctx, "", "apt-cache", "show", name+"="+version)
	var rec record
	if err == nil {
		rec, err = parseRecord(out, name, version)
	}
	if err != nil {
		return Package{}, fmt.Errorf("package %s=%s: %w", name, version, err)
	}
	return Package{Name: name, Version: version, Arch: rec.arch, SHA256: rec.sha256}, nil
}

// download runs apt-get download for p in a temporary directory of
// cacheDir and renames the .deb it writes to p.File if its SHA256 is
// p.SHA256.
func download(ctx context.Context, cacheDir string, p Package) error {
	tmp, err := os.MkdirTemp(cacheDir, ".apt-get-download-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := run(ctx, tmp, "apt-get", "-q", "download", p.Name+"="+p.Version); err != nil {
		return err
	}
	debs, err := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if err != nil {
		return err
	}
	if len(debs) != 1 {
		return fmt.Errorf("apt-get download wrote %d .deb files (%v), want 1", len(debs), debs)
	}
	sum, err := images.FileSHA256(debs[0])
	if err != nil {
		return err
	}
	if sum != p.SHA256 {
		return fmt.Errorf("downloaded %s has SHA256 %s, apt-cache show says %s", filepath.Base(debs[0]), sum, p.SHA256)
	}
	if err := os.Chmod(debs[0], 0o644); err != nil {
		return err
	}
	return os.Rename(debs[0], p.File)
}

// run runs the program name with args in dir ("" for the current one)
// under LC_ALL=C, so apt's output is not translated, and returns its
// standard output. An error names the command and carries its standard
// error.
func run(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out, nil
}

// validName reports whether name is a Debian package name (lower-case
// letters, digits, '+', '-', '.'; at least two, starting alphanumeric), so
// it cannot be taken for an option.
func validName(name string) bool {
	if len(name) < 2 || !isAlnum(name[0]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isAlnum(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return strings.ToLower(name) == name
}

// validVersion reports whether v is made of the characters a Debian
// version may hold and starts with a digit.
func validVersion(v string) bool {
	if v == "" || v[0] < '0' || v[0] > '9' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && !strings.ContainsRune(".+-~:", rune(c)) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parseCandidate returns the Candidate line of name's section of
// `apt-cache policy name` output. A missing section, a missing line or the
// candidate "(none)" (a virtual or unavailable package) is an error.
func parseCandidate(out []byte, name string) (string, error) {
	in := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if line != "" && line[0] != ' ' {
			in = line == name+":"
			continue
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Candidate:"); in && ok {
			v = strings.TrimSpace(v)
			if v == "(none)" || v == "" {
				return "", fmt.Errorf("apt-cache policy: no installation candidate (a virtual or unavailable package?)")
			}
			return v, nil
		}
	}
	return "", fmt.Errorf("apt-cache policy: no candidate for %s (unknown package?)", name)
}

// record is what Fetch needs of an apt-cache show stanza.
type record struct {
	arch, sha256 string
}

// parseRecord returns the architecture and SHA256 of the stanza of
// `apt-cache show name=version` output for that package and version that
// has a SHA256 (a package known only from dpkg's status file has none). No
// such stanza, a malformed SHA256, or two stanzas with different SHA256s
// is an error.
func parseRecord(out []byte, name, version string) (record, error) {
	var found record
	statusOnly := false
	for _, stanza := range strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n\n") {
		f := fields(stanza)
		if f["Package"] != name || f["Version"] != version {
			continue
		}
		sum := strings.ToLower(f["SHA256"])
		if sum == "" {
			statusOnly = true
			continue
		}
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return record{}, fmt.Errorf("apt-cache show: SHA256 %q is not a SHA-256 digest", f["SHA256"])
		}
		if f["Architecture"] == "" {
			return record{}, fmt.Errorf("apt-cache show: no Architecture")
		}
		r := record{arch: f["Architecture"], sha256: sum}
		if found.sha256 != "" && found != r {
			return record{}, fmt.Errorf("apt-cache show: two records, %s (%s) and %s (%s)", found.sha256, found.arch, r.sha256, r.arch)
		}
		found = r
	}
	switch {
	case found.sha256 != "":
		return found, nil
	case statusOnly:
		return record{}, fmt.Errorf("apt-cache show: only dpkg's status has this version, no archive offers it")
	}
	return record{}, fmt.Errorf("apt-cache show: no record of this version")
}

// fields parses a deb822 stanza's single-line fields; continuation lines
// are dropped.
func fields(stanza string) map[string]string {
	f := map[string]string{}
	for line := range strings.SplitSeq(stanza, "\n") {
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			f[k] = strings.TrimSpace(v)
		}
	}
	return f
}

// debFileName is the name apt-get download gives the .deb of name, version
// and arch: name_version_arch.deb, with ':' (an epoch's), '%' and '_' of
// version as %xx.
func debFileName(name, version, arch string) string {
	var v strings.Builder
	for i := 0; i < len(version); i++ {
		c := version[i]
		if c == ':' || c == '%' || c == '_' || c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&v, "%%%02x", c)
			continue
		}
		v.WriteByte(c)
	}
	return name + "_" + v.String() + "_" + arch + ".deb"
}
