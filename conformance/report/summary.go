package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// Outcome is what became of a conformance spec in the run.
type Outcome string

// The outcomes, in the order the document lists them.
const (
	Passed           Outcome = "passed"
	Failed           Outcome = "failed" // also panicked, interrupted, aborted, timed out
	SkippedByList    Outcome = "skipped by the skip list"
	SkippedAtRuntime Outcome = "skipped at runtime"
	NotRun           Outcome = "not run" // filtered out, pending, or after an interrupt or timeout
)

// maxDetail is how many characters of a message a Spec keeps.
const maxDetail = 200

// Spec is one conformance spec of the run.
type Spec struct {
	Name     string // full text
	Outcome  Outcome
	State    types.SpecState // ginkgo's state
	Detail   string          // failure cause, skip-list reason or skip message
	Location string          // file:line of the failure or the runtime skip
}

// Summary is one run's conformance specs, classified.
type Summary struct {
	Suite      string        // suite description(s), joined by ", "
	Start, End time.Time     // earliest start and latest end of the reports
	WallTime   time.Duration // End - Start

	Total, Passed, Failed, SkippedByList, SkippedAtRuntime, NotRun int

	Specs         []Spec      // sorted by name, then location
	Stale         []SkipEntry // entries that name no conformance spec, in file order
	Unapplied     []Spec      // listed specs that ginkgo did not skip (no --skip given?)
	SuiteFailures []string    // suite-level failures (BeforeSuite, timeout, interrupt), sorted
}

// LoadReports reads what `ginkgo --json-report` writes: a JSON array of
// types.Report, one per suite. An empty array, or a spec without a valid
// State, is an error.
func LoadReports(r io.Reader) ([]types.Report, error) {
	var reports []types.Report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&reports); err != nil {
		return nil, fmt.Errorf("not a ginkgo JSON report: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a ginkgo JSON report: data after the array")
	}
	if len(reports) == 0 {
		return nil, errors.New("ginkgo JSON report holds no suite")
	}
	for _, r := range reports {
		for _, sr := range r.SpecReports {
			if sr.State == types.SpecStateInvalid {
				return nil, fmt.Errorf("not a ginkgo JSON report: spec %q has no valid State", FullText(sr))
			}
		}
	}
	return reports, nil
}

// Summarize classifies the [Conformance] specs of the reports (label
// Conformance, or "[Conformance]" in the full text; other specs are
// ignored). A spec skipped without a message is SkippedByList if the list
// names it, else NotRun; skipped with a message (Skip() called) it is
// SkippedAtRuntime; in any failure state it is Failed. A list entry that
// names no conformance spec of the reports is Stale; a listed spec that
// ginkgo did not skip is also in Unapplied.
func Summarize(reports []types.Report, skips SkipList) Summary {
	var s Summary
	matched := map[string]bool{}
	var suites []string
	for _, r := range reports {
		if r.SuiteDescription != "" && !slices.Contains(suites, r.SuiteDescription) {
			suites = append(suites, r.SuiteDescription)
		}
		if !r.StartTime.IsZero() && (s.Start.IsZero() || r.StartTime.Before(s.Start)) {
			s.Start = r.StartTime
		}
		if r.EndTime.After(s.End) {
			s.End = r.EndTime
		}
		s.SuiteFailures = append(s.SuiteFailures, r.SpecialSuiteFailureReasons...)
		for _, sr := range r.SpecReports {
			if sr.LeafNodeType != types.NodeTypeIt {
				if sr.State.Is(types.SpecStateFailureStates) {
					f := fmt.Sprintf("%s %s: %s", sr.LeafNodeType, sr.State, cause(sr.Failure.Message))
					if loc := location(sr.Failure.Location, sr.LeafNodeLocation); loc != "" {
						f += " (" + loc + ")"
					}
					s.SuiteFailures = append(s.SuiteFailures, f)
				}
				continue
			}
			if !isConformance(sr) {
				continue
			}
			spec := classify(sr, skips)
			if _, listed := skips.Lookup(spec.Name); listed {
				matched[spec.Name] = true
				if spec.Outcome != SkippedByList {
					s.Unapplied = append(s.Unapplied, spec)
				}
			}
			s.Specs = append(s.Specs, spec)
		}
	}
	s.Suite = strings.Join(suites, ", ")
	if !s.Start.IsZero() && s.End.After(s.Start) {
		s.WallTime = s.End.Sub(s.Start)
	}
	for _, e := range skips {
		if !matched[e.Name] {
			s.Stale = append(s.Stale, e)
		}
	}
	sortSpecs(s.Specs)
	sortSpecs(s.Unapplied)
	slices.Sort(s.SuiteFailures)
	for _, spec := range s.Specs {
		s.Total++
		switch spec.Outcome {
		case Passed:
			s.Passed++
		case Failed:
			s.Failed++
		case SkippedByList:
			s.SkippedByList++
		case SkippedAtRuntime:
			s.SkippedAtRuntime++
		case NotRun:
			s.NotRun++
		}
	}
	return s
}

// PassPercent is the share of passed specs among those not skipped by the
// list (their reason is written down; a runtime skip or a spec not run
// counts against it), and false if there are none.
func (s Summary) PassPercent() (float64, bool) {
	n := s.Total - s.SkippedByList
	if n <= 0 {
		return 0, false
	}
	return 100 * float64(s.Passed) / float64(n), true
}

// With returns the specs with this outcome, sorted.
func (s Summary) With(o Outcome) []Spec {
	var out []Spec
	for _, spec := range s.Specs {
		if spec.Outcome == o {
			out = append(out, spec)
		}
	}
	return out
}

// classify gives one spec's outcome.
func classify(sr types.SpecReport, skips SkipList) Spec {
	spec := Spec{Name: FullText(sr), State: sr.State}
	switch {
	case sr.State.Is(types.SpecStatePassed):
		spec.Outcome = Passed
	case sr.State.Is(types.SpecStateFailureStates):
		spec.Outcome = Failed
		spec.Detail = cause(sr.Failure.Message)
		if p := firstLine(sr.Failure.ForwardedPanic); p != "" {
			spec.Detail = truncate(spec.Detail + ": " + p)
		}
		spec.Location = location(sr.Failure.Location, sr.LeafNodeLocation)
	case sr.State.Is(types.SpecStateSkipped) && strings.TrimSpace(sr.Failure.Message) != "":
		spec.Outcome = SkippedAtRuntime
		spec.Detail = firstLine(sr.Failure.Message)
		spec.Location = location(sr.Failure.Location, sr.LeafNodeLocation)
	default: // skipped without a message, pending
		spec.Outcome = NotRun
		if e, ok := skips.Lookup(spec.Name); ok && sr.State.Is(types.SpecStateSkipped) {
			spec.Outcome = SkippedByList
			spec.Detail = e.Reason
		}
	}
	return spec
}

// isConformance reports whether a spec is a [Conformance] one: by label
// (Kubernetes 1.37's framework.ConformanceIt adds it) or by its text.
func isConformance(sr types.SpecReport) bool {
	return slices.Contains(sr.Labels(), "Conformance") || strings.Contains(FullText(sr), "[Conformance]")
}

// FullText is the text of a spec that ginkgo's --focus and --skip match,
// without the suite's description: the non-empty container texts and the
// spec's own text, joined by spaces.
func FullText(sr types.SpecReport) string {
	texts := make([]string, 0, len(sr.ContainerHierarchyTexts)+1)
	for _, t := range append(slices.Clip(sr.ContainerHierarchyTexts), sr.LeafNodeText) {
		if t != "" {
			texts = append(texts, t)
		}
	}
	return strings.Join(texts, " ")
}

// cause is the one-line cause of a failure message: its first non-blank
// line, trimmed, joined with the lines after it while it is a bare header
// ("Expected" of gomega, or a line ending in ":"), cut to about 200
// characters.
func cause(msg string) string {
	var lines []string
	for l := range strings.SplitSeq(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "(no message)"
	}
	c := lines[0]
	// gomega: "Expected …", or "Timed out after 60s." then "Expected …".
	if c == "Expected" || len(lines) > 1 && lines[1] == "Expected" {
		c = strings.Join(lines, " ")
	} else {
		for i := 1; i < len(lines) && strings.HasSuffix(c, ":"); i++ {
			c += " " + lines[i]
		}
	}
	return truncate(strings.Join(strings.Fields(c), " "))
}

// firstLine is the first non-blank line of msg, trimmed and cut to about
// 200 characters.
func firstLine(msg string) string {
	for l := range strings.SplitSeq(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l)
		}
	}
	return ""
}

// truncate cuts s to maxDetail runes, marking the cut with "…".
func truncate(s string) string {
	r := []rune(s)
	if len(r) <= maxDetail {
		return s
	}
	return strings.TrimSpace(string(r[:maxDetail])) + "…"
}

// location is file:line of loc, or of fallback if loc has no file. A
// module-cache path is shortened to what -trimpath would record
// (k8s.io/kubernetes@v1.37.2/test/e2e/...).
func location(loc, fallback types.CodeLocation) string {
	if loc.FileName == "" {
		loc = fallback
	}
	if loc.FileName == "" {
		return ""
	}
	file := loc.FileName
	if _, after, ok := strings.Cut(file, "/pkg/mod/"); ok {
		file = after
	}
	return fmt.Sprintf("%s:%d", file, loc.LineNumber)
}

// sortSpecs sorts by name, then location.
func sortSpecs(specs []Spec) {
	slices.SortStableFunc(specs, func(a, b Spec) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Location, b.Location)
	})
}
