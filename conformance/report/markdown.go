package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
)

// Meta is what the document says about the run besides the report.
type Meta struct {
	Subject string            // what was tested, e.g. "k3s-like"
	Version string            // Kubernetes version of the suite, e.g. "v1.37.2" (required)
	Date    string            // date of the run; "" for the report's start date (UTC)
	Command string            // the command that ran the suite
	Machine map[string]string // machine facts (cpus, kernel, ...), listed sorted by key
}

// Markdown writes the results document: title, run facts, a table of
// counts, wall time and pass percentage, then one line per failure, per
// spec skipped by the list or at runtime, per spec not run, and per stale
// or unapplied skip-list entry. The output depends only on s and meta.
func (s Summary) Markdown(w io.Writer, meta Meta) error {
	if meta.Version == "" {
		return errors.New("no Kubernetes version for the title")
	}
	b := bufio.NewWriter(w)
	title := "Conformance results: Kubernetes " + meta.Version
	if meta.Subject != "" {
		title = meta.Subject + " conformance results: Kubernetes " + meta.Version
	}
	fmt.Fprintf(b, "# %s\n\n", text(title))

	date := meta.Date
	if date == "" && !s.Start.IsZero() {
		date = s.Start.UTC().Format(time.DateOnly)
	}
	if date != "" {
		fmt.Fprintf(b, "- Date: %s\n", text(date))
	}
	if meta.Command != "" {
		fmt.Fprintf(b, "- Command: %s\n", code(meta.Command))
	}
	if s.Suite != "" {
		fmt.Fprintf(b, "- Suite: %s\n", text(s.Suite))
	}
	keys := make([]string, 0, len(meta.Machine))
	for k := range meta.Machine {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "- %s: %s\n", text(k), text(meta.Machine[k]))
	}

	fmt.Fprintf(b, "\n| [Conformance] specs | count |\n|---|---:|\n")
	for _, row := range []struct {
		name string
		n    int
	}{
		{"total", s.Total},
		{string(Passed), s.Passed},
		{string(Failed), s.Failed},
		{string(SkippedByList), s.SkippedByList},
		{string(SkippedAtRuntime), s.SkippedAtRuntime},
		{string(NotRun), s.NotRun},
	} {
		fmt.Fprintf(b, "| %s | %d |\n", row.name, row.n)
	}
	fmt.Fprintf(b, "\nWall time: %s.\n", s.WallTime.Round(time.Second))
	if pct, ok := s.PassPercent(); ok {
		fmt.Fprintf(b, "Passed: %.1f%% (%d of the %d specs not skipped by the list).\n", pct, s.Passed, s.Total-s.SkippedByList)
	} else {
		fmt.Fprintf(b, "Passed: n/a (no spec outside the skip list).\n")
	}

	if len(s.SuiteFailures) > 0 {
		fmt.Fprintf(b, "\n## Suite failures (%d)\n\n", len(s.SuiteFailures))
		for _, f := range s.SuiteFailures {
			fmt.Fprintf(b, "- %s\n", text(f))
		}
	}
	section(b, "Failures", s.With(Failed), func(spec Spec) string {
		state := ""
		if spec.State.String() != "failed" {
			state = " [" + spec.State.String() + "]"
		}
		return fmt.Sprintf("%s — %s%s%s", code(spec.Name), text(spec.Detail), state, at(spec.Location))
	})
	section(b, "Skipped by the skip list", s.With(SkippedByList), func(spec Spec) string {
		return fmt.Sprintf("%s — %s", code(spec.Name), text(spec.Detail))
	})
	section(b, "Skipped at runtime", s.With(SkippedAtRuntime), func(spec Spec) string {
		return fmt.Sprintf("%s — %s%s", code(spec.Name), text(spec.Detail), at(spec.Location))
	})
	section(b, "Not run", s.With(NotRun), func(spec Spec) string {
		if spec.State == types.SpecStateSkipped {
			return code(spec.Name) + " — skipped without a message (filtered out, or the run ended first)"
		}
		return fmt.Sprintf("%s — %s", code(spec.Name), spec.State)
	})
	section(b, "Stale skip-list entries", s.Stale, func(e SkipEntry) string {
		return fmt.Sprintf("%s (line %d) — matches no [Conformance] spec of the run", code(e.Name), e.Line)
	})
	section(b, "Skip-list entries ginkgo did not skip", s.Unapplied, func(spec Spec) string {
		return fmt.Sprintf("%s — %s (was --skip passed?)", code(spec.Name), spec.Outcome)
	})
	return b.Flush()
}

// section writes a heading with the item count and one list line per
// item, or nothing if there are none.
func section[T any](b *bufio.Writer, heading string, items []T, line func(T) string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s (%d)\n\n", heading, len(items))
	for _, it := range items {
		fmt.Fprintf(b, "- %s\n", line(it))
	}
}

// at is " (loc)" with loc as code, or "" without a location.
func at(loc string) string {
	if loc == "" {
		return ""
	}
	return " (" + code(loc) + ")"
}

// code is s as a Markdown code span, its fence longer than any run of
// backticks in it.
func code(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// text escapes the characters that Markdown would read as markup.
func text(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
