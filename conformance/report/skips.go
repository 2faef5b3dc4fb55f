package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// DefaultSuite is the description e2e.test gives ginkgo.RunSpecs
// (test/e2e/e2e.go): the start of every text ginkgo's --skip matches.
const DefaultSuite = "Kubernetes e2e suite"

// SkipEntry is one spec of a skip list.
type SkipEntry struct {
	Name   string // the spec's full text, exactly
	Reason string // why it is skipped
	Line   int    // its line in the file, from 1
}

// SkipList is a skip list in file order.
type SkipList []SkipEntry

// LoadSkips reads a skip list: one entry per line, the spec's full text, a
// tab, then the reason. Lines whose first non-blank character is # and
// blank lines are ignored; the reason is trimmed. A line without a tab, an
// empty name or reason, a name with leading or trailing spaces, or a name
// listed twice is an error naming the line.
func LoadSkips(r io.Reader) (SkipList, error) {
	var list SkipList
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		name, reason, ok := strings.Cut(line, "\t")
		reason = strings.TrimSpace(reason)
		switch {
		case !ok:
			return nil, fmt.Errorf("line %d: no tab: want <spec full text><TAB><reason>", n)
		case strings.TrimSpace(name) == "":
			return nil, fmt.Errorf("line %d: empty spec name", n)
		case reason == "":
			return nil, fmt.Errorf("line %d: %q has no reason", n, name)
		case strings.TrimSpace(name) != name:
			return nil, fmt.Errorf("line %d: %q: leading or trailing space in the spec name", n, name)
		}
		if first, dup := seen[name]; dup {
			return nil, fmt.Errorf("line %d: %q is listed already on line %d", n, name, first)
		}
		seen[name] = n
		list = append(list, SkipEntry{Name: name, Reason: reason, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return list, nil
}

// Lookup returns the entry for the spec with this full text.
func (l SkipList) Lookup(name string) (SkipEntry, bool) {
	for _, e := range l {
		if e.Name == name {
			return e, true
		}
	}
	return SkipEntry{}, false
}

// Regexp returns the value of ginkgo's --skip flag that skips exactly the
// listed specs of the suite with this description (DefaultSuite for
// e2e.test): ginkgo matches it against the description, a space and the
// spec's full text, so it is anchored at both ends, each name quoted.
// It is "" for an empty list: pass no --skip then (ginkgo joins repeated
// --skip values with |, so an empty one would match every spec).
func (l SkipList) Regexp(suite string) string {
	if len(l) == 0 {
		return ""
	}
	names := make([]string, len(l))
	for i, e := range l {
		names[i] = regexp.QuoteMeta(e.Name)
	}
	return "^" + regexp.QuoteMeta(suite+" ") + "(?:" + strings.Join(names, "|") + ")$"
}
