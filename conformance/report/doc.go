// Package report turns one ginkgo run of upstream's conformance suite into
// the results document (RESULTS-<minor>.md).
//
// LoadSkips reads the skip list: one spec per line, its full text and the
// reason it is skipped, separated by a tab. SkipList.Regexp gives the
// --skip regular expression that skips exactly those specs.
//
// LoadReports reads the report `ginkgo --json-report` writes
// ([]types.Report). Summarize classifies each [Conformance] spec in it
// (passed, failed, skipped by the list, skipped at runtime, not run) and
// finds the list's stale entries; Summary.Markdown writes the document.
//
// A spec's full text is what ginkgo's --focus and --skip match: its
// containers' texts and its own text, the empty ones left out, joined by
// single spaces (ginkgo's internal Spec.Text), after the suite's
// description and a space.
package report
