package scopingtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
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

// ModuleDir is where the module cache keeps module mod at the version this
// test binary was built with: found from the source file of fn, a function
// of mod linked into the binary. It holds under -modfile and replace
// directives, where `go list -m` would answer for go.mod instead (test
// binaries carry no module list).
func ModuleDir(t testing.TB, mod string, fn any) string {
	t.Helper()
	pc := reflect.ValueOf(fn).Pointer()
	file, _ := runtime.FuncForPC(pc).FileLine(pc)
	i := strings.Index(file, mod+"@")
	if i < 0 {
		t.Fatalf("%s is not in %s", mod, file)
	}
	end := strings.Index(file[i+len(mod):], "/")
	if end <= 0 {
		t.Fatalf("no version in %s", file)
	}
	dir := file[:i+len(mod)+end]
	if !filepath.IsAbs(dir) { // built with -trimpath
		out, err := exec.Command("go", "env", "GOMODCACHE").Output()
		if err != nil {
			t.Fatalf("go env GOMODCACHE: %v", err)
		}
		dir = filepath.Join(strings.TrimSpace(string(out)), dir)
	}
	return dir
}
