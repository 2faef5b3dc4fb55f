package report

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

const e2eDir = "/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2/test/e2e/"

// it is a spec report of an It in the containers (a text ending in
// [Conformance] or a Conformance label make it a conformance spec).
func it(containers []string, text string, labels []string, state types.SpecState, msg string, file string, line int) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts: containers,
		LeafNodeType:            types.NodeTypeIt,
		LeafNodeText:            text,
		LeafNodeLabels:          labels,
		LeafNodeLocation:        types.CodeLocation{FileName: e2eDir + "x.go", LineNumber: 1},
		State:                   state,
		Failure: types.Failure{
			Message:  msg,
			Location: types.CodeLocation{FileName: file, LineNumber: line},
		},
	}
}

// conf is the labels of a conformance spec.
func conf() []string { return []string{"Conformance"} }

// testReports is a run of every kind of spec Summarize tells apart, and
// the skip list for it.
func testReports() ([]types.Report, SkipList) {
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	reports := []types.Report{{
		SuiteDescription: DefaultSuite,
		StartTime:        start,
		EndTime:          start.Add(72*time.Minute + 3*time.Second + 400*time.Millisecond),
		SpecReports: types.SpecReports{
			it([]string{"[sig-network] DNS"}, "should provide DNS for services [Conformance]", conf(), types.SpecStatePassed, "", "", 0),
			it([]string{"[sig-network]", "Services"}, "should serve a basic endpoint from pods [Conformance]", nil, types.SpecStatePassed, "", "", 0), // by text
			it([]string{"[sig-node] Pods"}, "should be labelled only", conf(), types.SpecStatePassed, "", "", 0),                                      // by label
			it([]string{"[sig-apps] Daemon set"}, "should rollback without unnecessary restarts [Conformance]", conf(), types.SpecStateFailed,
				"\n  error waiting for daemon pods: timed out\n\n    {\n        s: \"not ready\",\n    }\n", e2eDir+"apps/daemon_set.go", 451),
			it([]string{"[sig-node] Probing container"}, "should be restarted [Conformance]", conf(), types.SpecStateTimedout,
				"A spec timeout occurred", e2eDir+"common/node/container_probe.go", 208),
			it([]string{"[sig-auth] ServiceAccounts"}, "should mount [Conformance]", conf(), types.SpecStateSkipped,
				"Only supported for providers [gce gke]\nsecond line", e2eDir+"auth/service_accounts.go", 77),
			it([]string{"[sig-architecture] Conformance Tests"}, "should have at least two untainted nodes [Conformance]", conf(), types.SpecStateSkipped, "", "", 0),
			it([]string{"[sig-storage] EmptyDir"}, "should not race [Conformance] [Serial]", conf(), types.SpecStateSkipped, "", "", 0), // not run
			it([]string{"[sig-node] ImageVolume"}, "should pull always [Conformance]", conf(), types.SpecStatePassed, "", "", 0),        // listed, ran
			it([]string{"[sig-network] DNS"}, "should resolve google.com", nil, types.SpecStateFailed, "not conformance", "", 0),        // ignored
			it([]string{"[sig-network] DNS"}, "should provide DNS for services [Conformance] [Slow]", []string{"Slow"}, types.SpecStateSkipped, "", "", 0),
			{
				LeafNodeType:     types.NodeTypeSynchronizedAfterSuite,
				LeafNodeLocation: types.CodeLocation{FileName: e2eDir + "e2e.go", LineNumber: 99},
				State:            types.SpecStateFailed,
				Failure:          types.Failure{Message: "cleanup failed\nmore"},
			},
			{LeafNodeType: types.NodeTypeReportAfterSuite, State: types.SpecStatePassed},
		},
	}}
	skips := SkipList{
		{Name: "[sig-architecture] Conformance Tests should have at least two untainted nodes [Conformance]", Reason: "single node by design", Line: 2},
		{Name: "[sig-node] ImageVolume should pull always [Conformance]", Reason: "no registry", Line: 3},
		{Name: "[sig-network] DNS should resolve google.com", Reason: "not conformance: stale", Line: 4},
		{Name: "[sig-gone] Removed spec [Conformance]", Reason: "stale", Line: 5},
	}
	return reports, skips
}

func TestSummarize(t *testing.T) {
	reports, skips := testReports()
	s := Summarize(reports, skips)

	counts := map[string][2]int{
		"total":              {s.Total, 10},
		"passed":             {s.Passed, 4},
		"failed":             {s.Failed, 2},
		"skipped by list":    {s.SkippedByList, 1},
		"skipped at runtime": {s.SkippedAtRuntime, 1},
		"not run":            {s.NotRun, 2},
	}
	for name, c := range counts {
		if c[0] != c[1] {
			t.Errorf("%s = %d, want %d", name, c[0], c[1])
		}
	}
	if want := 72*time.Minute + 3*time.Second + 400*time.Millisecond; s.WallTime != want {
		t.Errorf("WallTime = %v, want %v", s.WallTime, want)
	}
	if pct, ok := s.PassPercent(); !ok || pct < 44.44 || pct > 44.45 { // 4 of 9
		t.Errorf("PassPercent = %v, %v; want 44.4", pct, ok)
	}
	if s.Suite != DefaultSuite {
		t.Errorf("Suite = %q", s.Suite)
	}

	want := []Spec{
		{Name: "[sig-apps] Daemon set should rollback without unnecessary restarts [Conformance]", Outcome: Failed, State: types.SpecStateFailed,
			Detail: "error waiting for daemon pods: timed out", Location: "k8s.io/kubernetes@v1.37.2/test/e2e/apps/daemon_set.go:451"},
		{Name: "[sig-architecture] Conformance Tests should have at least two untainted nodes [Conformance]", Outcome: SkippedByList,
			State: types.SpecStateSkipped, Detail: "single node by design"},
		{Name: "[sig-auth] ServiceAccounts should mount [Conformance]", Outcome: SkippedAtRuntime, State: types.SpecStateSkipped,
			Detail: "Only supported for providers [gce gke]", Location: "k8s.io/kubernetes@v1.37.2/test/e2e/auth/service_accounts.go:77"},
		{Name: "[sig-network] DNS should provide DNS for services [Conformance]", Outcome: Passed, State: types.SpecStatePassed},
		{Name: "[sig-network] DNS should provide DNS for services [Conformance] [Slow]", Outcome: NotRun, State: types.SpecStateSkipped},
		{Name: "[sig-network] Services should serve a basic endpoint from pods [Conformance]", Outcome: Passed, State: types.SpecStatePassed},
		{Name: "[sig-node] ImageVolume should pull always [Conformance]", Outcome: Passed, State: types.SpecStatePassed},
		{Name: "[sig-node] Pods should be labelled only", Outcome: Passed, State: types.SpecStatePassed},
		{Name: "[sig-node] Probing container should be restarted [Conformance]", Outcome: Failed, State: types.SpecStateTimedout,
			Detail: "A spec timeout occurred", Location: "k8s.io/kubernetes@v1.37.2/test/e2e/common/node/container_probe.go:208"},
		{Name: "[sig-storage] EmptyDir should not race [Conformance] [Serial]", Outcome: NotRun, State: types.SpecStateSkipped},
	}
	if !slices.Equal(s.Specs, want) {
		t.Errorf("Specs:\n%s\nwant:\n%s", dump(s.Specs), dump(want))
	}

	var stale []int
	for _, e := range s.Stale {
		stale = append(stale, e.Line)
	}
	if !slices.Equal(stale, []int{4, 5}) { // google.com is not conformance
		t.Errorf("Stale lines = %v, want [4 5]", stale)
	}
	if len(s.Unapplied) != 1 || s.Unapplied[0].Name != "[sig-node] ImageVolume should pull always [Conformance]" {
		t.Errorf("Unapplied = %+v", s.Unapplied)
	}
	wantSuite := []string{"SynchronizedAfterSuite failed: cleanup failed (k8s.io/kubernetes@v1.37.2/test/e2e/e2e.go:99)"}
	if !slices.Equal(s.SuiteFailures, wantSuite) {
		t.Errorf("SuiteFailures = %q, want %q", s.SuiteFailures, wantSuite)
	}
	if got := s.With(Failed); len(got) != 2 || got[0].Name != want[0].Name {
		t.Errorf("With(Failed) = %+v", got)
	}
}

func TestSummarizeOrderIndependent(t *testing.T) {
	reports, skips := testReports()
	a := Summarize(reports, skips)
	slices.Reverse(reports[0].SpecReports)
	b := Summarize(reports, skips)
	var ma, mb bytes.Buffer
	meta := Meta{Version: "v1.37.2"}
	if err := a.Markdown(&ma, meta); err != nil {
		t.Fatal(err)
	}
	if err := b.Markdown(&mb, meta); err != nil {
		t.Fatal(err)
	}
	if ma.String() != mb.String() {
		t.Errorf("output depends on the report's order:\n%s\n---\n%s", ma.String(), mb.String())
	}
}

func dump(specs []Spec) string {
	var b strings.Builder
	for _, s := range specs {
		b.WriteString(strings.Join([]string{s.Name, string(s.Outcome), s.State.String(), s.Detail, s.Location}, " | ") + "\n")
	}
	return b.String()
}

func TestCause(t *testing.T) {
	long := strings.Repeat("é", 250)
	for _, tc := range []struct{ in, want string }{
		{"first line\nsecond line", "first line"},
		{"\n\n   spaced   out  \n\nnext", "spaced out"},
		{"Expected\n    <int>: 1\nto equal\n    <int>: 2", "Expected <int>: 1 to equal <int>: 2"},
		{"Unexpected error:\n    <*errors.errorString | 0xc0>: \n    boom\n    {s: \"boom\"}", "Unexpected error: <*errors.errorString | 0xc0>: boom"},
		{long, strings.Repeat("é", 200) + "…"},
		{"  \n ", "(no message)"},
	} {
		if got := cause(tc.in); got != tc.want {
			t.Errorf("cause(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPanicCause(t *testing.T) {
	sr := it([]string{"[sig-x] X"}, "panics [Conformance]", conf(), types.SpecStatePanicked, "Test Panicked", "/usr/local/go/src/runtime/panic.go", 1)
	sr.Failure.ForwardedPanic = "assignment to entry in nil map\ngoroutine 1"
	s := Summarize([]types.Report{{SpecReports: types.SpecReports{sr}}}, nil)
	if len(s.Specs) != 1 || s.Specs[0].Outcome != Failed || s.Specs[0].Detail != "Test Panicked: assignment to entry in nil map" {
		t.Errorf("Specs = %+v", s.Specs)
	}
}

func TestLocation(t *testing.T) {
	for _, tc := range []struct {
		loc  types.CodeLocation
		want string
	}{
		{types.CodeLocation{FileName: "/root/go/pkg/mod/k8s.io/kubernetes@v1.37.2/test/e2e/a.go", LineNumber: 3}, "k8s.io/kubernetes@v1.37.2/test/e2e/a.go:3"},
		{types.CodeLocation{FileName: "k8s.io/kubernetes@v1.37.2/test/e2e/a.go", LineNumber: 4}, "k8s.io/kubernetes@v1.37.2/test/e2e/a.go:4"},
		{types.CodeLocation{FileName: "/src/a.go", LineNumber: 5}, "/src/a.go:5"},
		{types.CodeLocation{}, "fallback.go:9"},
	} {
		if got := location(tc.loc, types.CodeLocation{FileName: "fallback.go", LineNumber: 9}); got != tc.want {
			t.Errorf("location(%+v) = %q, want %q", tc.loc, got, tc.want)
		}
	}
}

// TestJSONRoundTrip writes the reports as ginkgo's GenerateJSONReport
// does (an indented []types.Report) and reads them back.
func TestJSONRoundTrip(t *testing.T) {
	reports, skips := testReports()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(reports); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"State": "timedout"`) {
		t.Fatalf("not ginkgo's encoding of states:\n%s", buf.String())
	}
	back, err := LoadReports(&buf)
	if err != nil {
		t.Fatal(err)
	}
	want, got := Summarize(reports, skips), Summarize(back, skips)
	if !slices.Equal(got.Specs, want.Specs) || got.WallTime != want.WallTime || !got.Start.Equal(want.Start) ||
		!slices.Equal(got.SuiteFailures, want.SuiteFailures) || len(got.Stale) != len(want.Stale) {
		t.Errorf("after the round trip:\n%s%v %v\nwant:\n%s%v %v", dump(got.Specs), got.WallTime, got.SuiteFailures,
			dump(want.Specs), want.WallTime, want.SuiteFailures)
	}
}

func TestLoadReportsErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[{"SuiteDescription": "x",`, "not a ginkgo JSON report"},
		{`{"SuiteDescription": "x"}`, "not a ginkgo JSON report"},
		{`[{"SpecReports": [{"State": "bogus"}]}]`, "not a ginkgo JSON report"},
		{`[] []`, "data after the array"},
		{`[]`, "holds no suite"},
		{``, "not a ginkgo JSON report"},
	} {
		if _, err := LoadReports(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadReports(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// TestGinkgoFixture reads testdata/report.json, which the ginkgo CLI wrote
// for testdata/suite run with --skip set to skips.txt's Regexp (see
// testdata/suite): ginkgo skipped exactly the listed specs, and the
// regexp matches exactly those of the report's full texts.
func TestGinkgoFixture(t *testing.T) {
	f, err := os.Open("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	reports, err := LoadReports(f)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := os.Open("testdata/skips.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	skips, err := LoadSkips(sf)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(reports, skips)
	if s.Total != 11 || s.Passed != 4 || s.Failed != 2 || s.SkippedByList != 3 || s.SkippedAtRuntime != 1 || s.NotRun != 1 {
		t.Errorf("counts %d total, %d passed, %d failed, %d by list, %d at runtime, %d not run; want 11, 4, 2, 3, 1, 1",
			s.Total, s.Passed, s.Failed, s.SkippedByList, s.SkippedAtRuntime, s.NotRun)
	}
	if len(s.Stale) != 1 || s.Stale[0].Name != "[sig-node] Nonexistent spec [Conformance]" {
		t.Errorf("Stale = %+v", s.Stale)
	}
	if len(s.Unapplied) != 0 {
		t.Errorf("Unapplied = %+v", s.Unapplied)
	}
	var byList []string
	for _, spec := range s.With(SkippedByList) {
		byList = append(byList, spec.Name)
	}
	var listed []string
	for _, e := range skips[:3] {
		listed = append(listed, e.Name)
	}
	slices.Sort(listed)
	if !slices.Equal(byList, listed) {
		t.Errorf("ginkgo skipped %q, want the listed %q", byList, listed)
	}
	re := regexp.MustCompile(skips.Regexp(reports[0].SuiteDescription))
	for _, sr := range reports[0].SpecReports {
		name := FullText(sr)
		if _, isListed := skips.Lookup(name); re.MatchString(reports[0].SuiteDescription+" "+name) != isListed {
			t.Errorf("regexp match of %q = %v, listed = %v", name, !isListed, isListed)
		}
	}
	for _, spec := range s.With(Failed) {
		if spec.Location == "" || strings.Contains(spec.Detail, "\n") {
			t.Errorf("failure %+v: want a location and one line", spec)
		}
	}
	if rt := s.With(SkippedAtRuntime); len(rt) != 1 || rt[0].Detail != "Only supported for providers [gce gke] (not skeleton)" {
		t.Errorf("runtime skips = %+v", rt)
	}
	if fs := s.With(Failed); len(fs) != 2 || fs[1].Detail != "Test Panicked: assignment to entry in nil map" {
		t.Errorf("failures = %+v", fs)
	}
}
