package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	reports, skips := testReports()
	// A cause with Markdown markup in it.
	reports[0].SpecReports[3].Failure.Message = "Unexpected error: <*errors.errorString>: *boom* [x]\nmore"
	var b bytes.Buffer
	err := Summarize(reports, skips).Markdown(&b, Meta{
		Subject: "k3s-like",
		Version: "v1.37.2",
		Command: "make conformance",
		Machine: map[string]string{"kernel": "6.18.0", "cpus": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# k3s-like conformance results: Kubernetes v1.37.2\n",
		"- Date: 2026-12-02\n- Command: `make conformance`\n- Suite: Kubernetes e2e suite\n- cpus: 2\n- kernel: 6.18.0\n",
		"| total | 10 |\n| passed | 4 |\n| failed | 2 |\n| skipped by the skip list | 1 |\n| skipped at runtime | 1 |\n| not run | 2 |\n",
		"Wall time: 1h12m3s.\n",
		"Passed: 44.4% (4 of the 9 specs not skipped by the list).\n",
		"## Suite failures (1)\n\n- SynchronizedAfterSuite failed: cleanup failed (k8s.io/kubernetes@v1.37.2/test/e2e/e2e.go:99)\n",
		"## Failures (2)\n\n" +
			"- `[sig-apps] Daemon set should rollback without unnecessary restarts [Conformance]` — Unexpected error: \\<\\*errors.errorString\\>: \\*boom\\* \\[x\\] (`k8s.io/kubernetes@v1.37.2/test/e2e/apps/daemon_set.go:451`)\n" +
			"- `[sig-node] Probing container should be restarted [Conformance]` — A spec timeout occurred [timedout] (`k8s.io/kubernetes@v1.37.2/test/e2e/common/node/container_probe.go:208`)\n",
		"## Skipped by the skip list (1)\n\n- `[sig-architecture] Conformance Tests should have at least two untainted nodes [Conformance]` — single node by design\n",
		"## Skipped at runtime (1)\n\n- `[sig-auth] ServiceAccounts should mount [Conformance]` — Only supported for providers \\[gce gke\\] (`k8s.io/kubernetes@v1.37.2/test/e2e/auth/service_accounts.go:77`)\n",
		"## Not run (2)\n\n- `[sig-network] DNS should provide DNS for services [Conformance] [Slow]` — skipped without a message",
		"## Stale skip-list entries (2)\n\n- `[sig-network] DNS should resolve google.com` (line 4) — matches no [Conformance] spec of the run\n" +
			"- `[sig-gone] Removed spec [Conformance]` (line 5)",
		"## Skip-list entries ginkgo did not skip (1)\n\n- `[sig-node] ImageVolume should pull always [Conformance]` — passed (was --skip passed?)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Markdown lacks %q; got:\n%s", want, out)
		}
	}
	if strings.Contains(out, "— not conformance") { // the failed non-conformance spec's message
		t.Errorf("a non-conformance spec is listed as a result:\n%s", out)
	}
}

func TestMarkdownEmptySections(t *testing.T) {
	var b bytes.Buffer
	if err := (Summary{}).Markdown(&b, Meta{Version: "v1.36.3", Date: "2026-01-02"}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "# Conformance results: Kubernetes v1.36.3\n\n- Date: 2026-01-02\n") {
		t.Errorf("header:\n%s", out)
	}
	if strings.Contains(out, "##") || !strings.Contains(out, "Passed: n/a") {
		t.Errorf("want no sections and no percentage:\n%s", out)
	}
}

func TestMarkdownNeedsVersion(t *testing.T) {
	if err := (Summary{}).Markdown(&bytes.Buffer{}, Meta{}); err == nil {
		t.Error("Markdown without a version: no error")
	}
}

func TestCode(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"[sig-node] a", "`[sig-node] a`"},
		{"a `b` c", "`` a `b` c ``"},
		{"a ``b", "``` a ``b ```"},
	} {
		if got := code(tc.in); got != tc.want {
			t.Errorf("code(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
