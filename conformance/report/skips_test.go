package report

import (
	"regexp"
	"strings"
	"testing"
)

func TestLoadSkips(t *testing.T) {
	in := "# comment\n\n  # indented comment\n" +
		"[sig-node] Pods should run (once) [Conformance]\t  single node  \r\n" +
		"   \n" +
		"[sig-apps] Daemon set should rollback [Conformance] [Serial]\tneeds\ttwo nodes\n"
	got, err := LoadSkips(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := SkipList{
		{Name: "[sig-node] Pods should run (once) [Conformance]", Reason: "single node", Line: 4},
		{Name: "[sig-apps] Daemon set should rollback [Conformance] [Serial]", Reason: "needs\ttwo nodes", Line: 6},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if e, ok := got.Lookup(want[1].Name); !ok || e.Line != 6 {
		t.Errorf("Lookup(%q) = %+v, %v", want[1].Name, e, ok)
	}
	if _, ok := got.Lookup("[sig-node] Pods should run (once)"); ok {
		t.Error("Lookup matched a prefix of a listed name")
	}
}

func TestLoadSkipsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no tab", "# c\nname only\n", "line 2: no tab"},
		{"spaces instead of a tab", "a spec   reason\n", "line 1: no tab"},
		{"empty reason", "ok\treason\nspec\t   \n", `line 2: "spec" has no reason`},
		{"empty name", "\treason\n", "line 1: empty spec name"},
		{"blank name", "   \treason\n", "line 1: empty spec name"},
		{"trailing space", "spec \treason\n", "line 1: \"spec \": leading or trailing space"},
		{"duplicate", "a\tx\n\nb\ty\na\tz\n", `line 4: "a" is listed already on line 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := LoadSkips(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("LoadSkips = %v, %v; want error containing %q", list, err, tc.want)
			}
		})
	}
}

// matchesLikeGinkgo is ginkgo's --skip test (internal/focus.go,
// ApplyFocusToSpecs): the --skip values joined by |, matched unanchored
// against the suite description, a space and the spec's full text.
func matchesLikeGinkgo(t *testing.T, skips []string, suite, fullText string) bool {
	t.Helper()
	re, err := regexp.Compile(strings.Join(skips, "|"))
	if err != nil {
		t.Fatal(err)
	}
	return re.MatchString(suite + " " + fullText)
}

func TestRegexpSkipsExactlyTheList(t *testing.T) {
	listed := []string{
		"[sig-node] Pods should run a.b* (once) [Conformance]",
		"[sig-apps] Daemon set should rollback without unnecessary restarts [Conformance] [Serial]",
		`[sig-cli] Kubectl client should support ^$ +? {1} | \d [Conformance]`,
		"[sig-network] DNS should provide DNS for services  [Conformance]", // two spaces
	}
	var list SkipList
	for i, n := range listed {
		list = append(list, SkipEntry{Name: n, Reason: "r", Line: i + 1})
	}
	neighbours := []string{
		// longer
		"[sig-apps] Daemon set should rollback without unnecessary restarts [Conformance] [Serial] [Slow]",
		"[sig-x] [sig-node] Pods should run a.b* (once) [Conformance]",
		"[sig-network] DNS should provide DNS for services  [Conformance] ",
		// shorter
		"[sig-apps] Daemon set should rollback without unnecessary restarts [Conformance]",
		"Daemon set should rollback without unnecessary restarts [Conformance] [Serial]",
		"[sig-network] DNS should provide DNS for services [Conformance]", // one space
		// what the names would match unquoted
		"[sig-node] Pods should run aXbbb once [Conformance]",
		"s should run a.b* (once) [Conformance]",
		`[sig-cli] Kubectl client should support  {1}  d [Conformance]`,
		"",
	}
	re := list.Regexp(DefaultSuite)
	for _, skips := range [][]string{{re}, {`\[Flaky\]`, re}} { // alone, and ORed with another --skip
		for _, n := range listed {
			if !matchesLikeGinkgo(t, skips, DefaultSuite, n) {
				t.Errorf("--skip %q does not skip listed %q", skips, n)
			}
			if matchesLikeGinkgo(t, skips, "My "+DefaultSuite, n) {
				t.Errorf("--skip %q skips %q of another suite", skips, n)
			}
		}
		for _, n := range neighbours {
			if matchesLikeGinkgo(t, skips, DefaultSuite, n) {
				t.Errorf("--skip %q skips unlisted %q", skips, n)
			}
		}
	}
	// A suite without a description: ginkgo matches " " + full text.
	if !matchesLikeGinkgo(t, []string{list.Regexp("")}, "", listed[0]) {
		t.Errorf("Regexp(\"\") does not skip %q", listed[0])
	}
	if got := (SkipList{}).Regexp(DefaultSuite); got != "" {
		t.Errorf("empty list: Regexp = %q, want \"\"", got)
	}
}
