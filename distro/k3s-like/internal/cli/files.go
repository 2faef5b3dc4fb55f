package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// checkedFile is a file the process reads that checkFileModes checks.
type checkedFile struct {
	path string
	what string // "the token file"
	note string // after the path, in parentheses: "--token-file"; may be ""
	// secret: the file holds a secret, so group or others may not read it
	// either. Writing one is never theirs: whoever can write a token file
	// chooses the cluster's token, whoever can write a config file the
	// server's flags.
	secret bool
}

// exposure says what group or others may do with a file of mode perm that
// they should not; "" for nothing.
func exposure(perm os.FileMode, secret bool) string {
	r := secret && perm&0o044 != 0
	w := perm&0o022 != 0
	switch {
	case r && w:
		return "readable and writable by group or others"
	case r:
		return "readable by group or others"
	case w:
		return "writable by group or others"
	}
	return ""
}

// checkFileModes checks the files (the file a symbolic link points to, the
// one that is read): each file group or others may read (a secret) or
// write, each owned by a user other than root and this process's, and each
// in a directory that group or others may write (without the sticky bit)
// or that such a user owns, since whoever may write the directory can
// replace the file, is a warning on stderr naming it, what is wrong and
// the fix, as k3s warns about its token file; with protect
// (--protect-files) it is an error naming every such file instead, one
// line. A missing file is left to whoever reads it. No file's contents are
// read, so no message holds a secret.
func checkFileModes(stderr io.Writer, protect bool, files []checkedFile) error {
	return checkFiles(stderr, protect, files, os.Geteuid())
}

// checkFiles is checkFileModes for the process user euid.
func checkFiles(stderr io.Writer, protect bool, files []checkedFile, euid int) error {
	var refused []string
	for _, f := range files {
		resolved, err := filepath.EvalSymlinks(f.path)
		if err != nil {
			continue
		}
		st, err := os.Stat(resolved)
		if err != nil {
			continue
		}
		name := f.what + " " + f.path
		if f.note != "" {
			name += " (" + f.note + ")"
		}
		var msgs []string
		perm := st.Mode().Perm()
		if how := exposure(perm, f.secret); how != "" {
			msgs = append(msgs, fmt.Sprintf("%s is %s (mode %04o): chmod 600 %s", name, how, perm, f.path))
		}
		if uid, ok := owner(st); ok && uid != 0 && uid != euid {
			msgs = append(msgs, fmt.Sprintf("%s is owned by uid %d, neither root nor this process's user (uid %d), who may change it: chown %d %s", name, uid, euid, euid, resolved))
		}
		dirs := []string{filepath.Dir(resolved)}
		if d := filepath.Dir(f.path); d != dirs[0] {
			dirs = append(dirs, d) // the link's: whoever writes it may replace the link
		}
		for _, dir := range dirs {
			dst, err := os.Stat(dir)
			if err != nil {
				continue
			}
			dperm := dst.Mode().Perm()
			if dperm&0o022 != 0 && dst.Mode()&os.ModeSticky == 0 {
				msgs = append(msgs, fmt.Sprintf("%s is in the directory %s, writable by group or others (mode %04o), who may replace it: chmod go-w %s", name, dir, dperm, dir))
			}
			if uid, ok := owner(dst); ok && uid != 0 && uid != euid {
				msgs = append(msgs, fmt.Sprintf("%s is in the directory %s, owned by uid %d, neither root nor this process's user (uid %d), who may replace it: chown %d %s", name, dir, uid, euid, euid, dir))
			}
		}
		for _, msg := range msgs {
			if protect {
				refused = append(refused, msg)
				continue
			}
			fmt.Fprintf(stderr, "Warning: %s (--protect-files makes this an error)\n", msg)
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("--protect-files: %s", strings.Join(refused, "; "))
	}
	return nil
}

// tokenFileToCheck is the token file ResolveToken would read, for
// checkFileModes; none when the token comes from elsewhere.
func tokenFileToCheck(token, file, dataDir string, getenv func(string) string) []checkedFile {
	_, path, what := cluster.TokenSource(token, file, dataDir, getenv)
	switch {
	case path == "":
		return nil
	case what == cluster.DataDirTokenSource:
		return []checkedFile{{path: path, what: what, secret: true}}
	}
	return []checkedFile{{path: path, what: "the token file", note: what, secret: true}}
}
