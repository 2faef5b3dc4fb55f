package cli

import (
	"fmt"
	"io"
	"os"
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

// checkFileModes checks the files' permission bits (of the file a symbolic
// link points to, the one that is read): each file group or others may read
// (a secret) or write is a warning on stderr naming it, its mode and the
// fix, as k3s warns about its token file; with protect (--protect-files)
// it is an error naming every such file instead, one line. A missing file
// is left to whoever reads it. No file's contents are read, so no message
// holds a secret.
func checkFileModes(stderr io.Writer, protect bool, files []checkedFile) error {
	var refused []string
	for _, f := range files {
		st, err := os.Stat(f.path)
		if err != nil {
			continue
		}
		perm := st.Mode().Perm()
		how := exposure(perm, f.secret)
		if how == "" {
			continue
		}
		name := f.what + " " + f.path
		if f.note != "" {
			name += " (" + f.note + ")"
		}
		msg := fmt.Sprintf("%s is %s (mode %04o): chmod 600 %s", name, how, perm, f.path)
		if protect {
			refused = append(refused, msg)
			continue
		}
		fmt.Fprintf(stderr, "Warning: %s (--protect-files makes this an error)\n", msg)
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
