package scopingtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// UpstreamString is an upstream message that code recognises by text, and
// the string literal of the upstream file that produces it.
type UpstreamString struct {
	Name    string // the constant's name
	Text    string // what the code matches
	Module  string // the upstream module
	File    string // the file of Module that produces it
	Literal string // upstream's literal, as it stands in File; it contains Text
}

// CheckUpstreamStrings fails t for every s whose Literal does not contain
// its Text, or is no longer in its File, read from dir(s.Module): a
// dependency bump that rewords a message fails there instead of silently
// changing what the code does.
func CheckUpstreamStrings(t testing.TB, dir func(module string) string, strs ...UpstreamString) {
	t.Helper()
	for _, s := range strs {
		if !strings.Contains(s.Literal, s.Text) {
			t.Errorf("%s: %q is not part of upstream's literal %s", s.Name, s.Text, s.Literal)
		}
		path := filepath.Join(dir(s.Module), s.File)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: its upstream file: %v", s.Name, err)
			continue
		}
		if !strings.Contains(string(src), s.Literal) {
			t.Errorf("%s: %s is no longer in %s", s.Name, s.Literal, path)
		}
	}
}
