package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestPackageOf(t *testing.T) {
	for name, want := range map[string]string{
		"k8s.io/api/core/v1.(*Pod).Marshal":                            "k8s.io/api/core/v1",
		"go.etcd.io/etcd/server/v3/etcdserver.(*EtcdServer).Start":     "go.etcd.io/etcd/server/v3/etcdserver",
		"sync/atomic.(*Pointer[go.shape.struct { a.b/c.D int }]).Load": "sync/atomic",
		"runtime.mallocgc": "runtime",
		"k8s.io/kubernetes/pkg/generated/openapi.GetOpenAPIDefinitions.func1": "k8s.io/kubernetes/pkg/generated/openapi",
		"gopkg.in/yaml.v3.(*parser).parse":                                    "gopkg.in/yaml.v3",
		"gopkg.in/yaml.v3.init":                                               "gopkg.in/yaml.v3",
		"example.com/v1x.F":                                                   "example.com/v1x",
		"go:func.*":                                                           funcData,
		"type:.eq.[2]interface {}":                                            typeData,
		"go:itab.*os.File,io.Reader":                                          typeData,
		"go:string.*":                                                         "(go:string)",
		"main.main":                                                           "main",
	} {
		if got := packageOf(name); got != want {
			t.Errorf("packageOf(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestModuleOf(t *testing.T) {
	mods := []string{"k8s.io/api", "k8s.io/apimachinery", "github.com/a/b", "github.com/a/b/v2", "gopkg.in/yaml.v3"}
	for pkg, want := range map[string]string{
		"k8s.io/api/core/v1":           "k8s.io/api",
		"k8s.io/apimachinery/pkg/util": "k8s.io/apimachinery",
		"github.com/a/b/v2/x":          "github.com/a/b/v2", // the longest module holds it
		"github.com/a/bc":              "(other: github.com/a/bc)",
		"gopkg.in/yaml.v3":             "gopkg.in/yaml.v3",
		"net/http":                     "std",
		"runtime":                      "std",
		typeData:                       typeData,
	} {
		if got := moduleOf(pkg, mods); got != want {
			t.Errorf("moduleOf(%q) = %q, want %q", pkg, got, want)
		}
	}
}

// buildHello builds a small program with its symbol table (go test's own
// binary has none).
func buildHello(t *testing.T, ldflags string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.26\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-ldflags="+ldflags, "-o", bin, ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestRunOnAProgram breaks down a small program: the standard library and
// its main package are in it, and the symbols' sizes add up to no more
// than the file's sections; the stripped build is refused.
func TestRunOnAProgram(t *testing.T) {
	bin, stripped := buildHello(t, ""), buildHello(t, "-s -w")
	out := filepath.Join(t.TempDir(), "size.md")
	if err := run(bin, stripped, 5, out); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	report := string(b)
	for _, want := range []string{"| .text |", "| std |", "| runtime |", "The release binary (hello, stripped)"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
	syms, err := symbols(bin)
	if err != nil {
		t.Fatal(err)
	}
	sections, err := sectionSizes(bin)
	if err != nil {
		t.Fatal(err)
	}
	var symTotal, fileTotal int64
	for _, s := range syms {
		symTotal += s.size
	}
	for _, s := range sections {
		fileTotal += s.size
	}
	if symTotal == 0 || symTotal > fileTotal {
		t.Errorf("symbols %d bytes, sections %d: want 0 < symbols <= sections", symTotal, fileTotal)
	}
	if err := run(stripped, "", 5, ""); err == nil || !strings.Contains(err.Error(), "no symbols") {
		t.Errorf("a stripped binary: %v", err)
	}
}

func TestRefusesAStrippedOrMissingBinary(t *testing.T) {
	if err := run("", "", 5, ""); err == nil || !strings.Contains(err.Error(), "-bin") {
		t.Errorf("no -bin: %v", err)
	}
	if err := run(filepath.Join(t.TempDir(), "none"), "", 5, ""); err == nil {
		t.Error("a missing binary: no error")
	}
	if err := run("main.go", filepath.Join(t.TempDir(), "none"), 5, ""); err == nil || !strings.Contains(err.Error(), "-release") {
		t.Errorf("a missing -release: %v", err)
	}
}
