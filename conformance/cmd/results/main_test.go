package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/conformance/report"
)

const (
	listed   = "[sig-node] Pods (lifecycle) should run a.b* [Conformance]"
	skipFile = "# reasons\n" + listed + "\tsingle node by design\n"
)

// write writes content to name in dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// reportJSON is a ginkgo JSON report of one passed, one failed and one
// listed (skipped) conformance spec.
func reportJSON(t *testing.T) string {
	t.Helper()
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	spec := func(container, text string, state types.SpecState, msg string) types.SpecReport {
		return types.SpecReport{
			ContainerHierarchyTexts: []string{container},
			LeafNodeType:            types.NodeTypeIt,
			LeafNodeText:            text,
			LeafNodeLabels:          []string{"Conformance"},
			State:                   state,
			Failure:                 types.Failure{Message: msg, Location: types.CodeLocation{FileName: "test/e2e/x.go", LineNumber: 7}},
		}
	}
	b, err := json.MarshalIndent([]types.Report{{
		SuiteDescription: report.DefaultSuite,
		StartTime:        start,
		EndTime:          start.Add(90 * time.Minute),
		SpecReports: types.SpecReports{
			spec("[sig-network] DNS", "should provide DNS for services [Conformance]", types.SpecStatePassed, ""),
			spec("[sig-apps] Daemon set", "should run [Conformance]", types.SpecStateFailed, "pods not ready\ndetails"),
			spec("[sig-node] Pods (lifecycle)", "should run a.b* [Conformance]", types.SpecStateSkipped, ""),
		},
	}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSkipRegexp(t *testing.T) {
	skip := write(t, t.TempDir(), "skip.txt", skipFile)
	var out bytes.Buffer
	if err := run([]string{"-skip-regexp", "-skip", skip}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	printed := strings.TrimSuffix(out.String(), "\n")
	re, err := regexp.Compile(printed)
	if err != nil {
		t.Fatalf("printed %q: %v", printed, err)
	}
	if !re.MatchString(report.DefaultSuite + " " + listed) {
		t.Errorf("%q does not match the listed spec", printed)
	}
	if re.MatchString(report.DefaultSuite + " " + listed + " [Serial]") {
		t.Errorf("%q matches a longer neighbour", printed)
	}
}

func TestSkipRegexpEmptyList(t *testing.T) {
	skip := write(t, t.TempDir(), "skip.txt", "# nothing skipped\n")
	var out bytes.Buffer
	if err := run([]string{"-skip-regexp", "-skip", skip}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("empty list printed %q, want nothing", out.String())
	}
}

func TestWritesResults(t *testing.T) {
	dir := t.TempDir()
	jsonPath := write(t, dir, "report.json", reportJSON(t))
	skip := write(t, dir, "skip.txt", skipFile)
	out := filepath.Join(dir, "RESULTS-1.37.md")
	err := run([]string{"-json", jsonPath, "-skip", skip, "-out", out, "-version", "v1.37.2",
		"-command", "make conformance", "-meta", "kernel=6.18", "-meta", "cpus = 2"}, &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"# k3s-like conformance results: Kubernetes v1.37.2\n",
		"- Date: 2026-12-02\n- Command: `make conformance`\n- Suite: Kubernetes e2e suite\n- cpus: 2\n- kernel: 6.18\n",
		"| total | 3 |\n| passed | 1 |\n| failed | 1 |\n| skipped by the skip list | 1 |\n",
		"Wall time: 1h30m0s.",
		"- `[sig-apps] Daemon set should run [Conformance]` — pods not ready (`test/e2e/x.go:7`)\n",
		"- `" + listed + "` — single node by design\n",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("%s lacks %q; got:\n%s", out, want, doc)
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good := write(t, dir, "report.json", reportJSON(t))
	goodSkip := write(t, dir, "skip.txt", skipFile)
	malformedJSON := write(t, dir, "malformed.json", `[{"SuiteDescription": `)
	noConformance := write(t, dir, "other.json", `[{"SuiteDescription": "x", "SpecReports": [{"LeafNodeType": "It", "LeafNodeText": "a", "State": "passed"}]}]`)
	noReason := write(t, dir, "noreason.txt", "# c\n"+listed+"\n")
	dup := write(t, dir, "dup.txt", skipFile+listed+"\tagain\n")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"malformed JSON", []string{"-json", malformedJSON, "-version", "v1"}, "malformed.json: not a ginkgo JSON report"},
		{"missing JSON", []string{"-json", missing, "-version", "v1"}, "no such file"},
		{"no conformance spec", []string{"-json", noConformance, "-version", "v1"}, "no [Conformance] spec"},
		{"skip without reason", []string{"-json", good, "-skip", noReason, "-version", "v1"}, "noreason.txt: line 2: no tab"},
		{"duplicate skip", []string{"-skip-regexp", "-skip", dup}, "dup.txt: line 3: " + `"` + listed + `" is listed already on line 2`},
		{"missing skip list", []string{"-skip-regexp", "-skip", missing}, "no such file"},
		{"no -json", []string{"-version", "v1"}, "-json FILE is required"},
		{"no -version", []string{"-json", good, "-skip", goodSkip}, "-version is required"},
		{"-skip-regexp without -skip", []string{"-skip-regexp"}, "needs -skip"},
		{"bad -meta", []string{"-json", good, "-version", "v1", "-meta", "novalue"}, "want key=value"},
		{"stray argument", []string{"-json", good, "-version", "v1", "extra"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout bytes.Buffer
			err := run(tc.args, &stdout, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("wrote %q to stdout on error", stdout.String())
			}
		})
	}
}

// TestExitCode runs main in a child process: bad input exits 1 with the
// message on stderr.
func TestExitCode(t *testing.T) {
	if args := os.Getenv("RESULTS_TEST_ARGS"); args != "" {
		os.Args = append([]string{"results"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	bad := write(t, t.TempDir(), "bad.json", "{")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExitCode$")
	cmd.Env = append(os.Environ(), "RESULTS_TEST_ARGS="+strings.Join([]string{"-json", bad, "-version", "v1.37.2"}, "\n"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr: %s", err, stderr.String())
	}
	if want := "results: " + bad + ": not a ginkgo JSON report"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q lacks %q", stderr.String(), want)
	}
}
