// Package suite is a small ginkgo suite shaped like e2e.test's (the same
// suite description, [Conformance] in texts and labels), run once by the
// ginkgo CLI to write ../report.json with ../skips.txt's --skip regexp:
//
//	cd conformance && go test -c -o /tmp/suite.test ./report/testdata/suite &&
//	  go tool ginkgo run --procs=2 --json-report=report.json --output-dir=report/testdata \
//	    --label-filter=Conformance \
//	    --skip="$(go run ./cmd/results -skip-regexp -skip report/testdata/skips.txt)" /tmp/suite.test
//
// Its specs fail on purpose.
package suite

import (
	"testing"

	"github.com/onsi/ginkgo/v2"
)

func TestSuite(t *testing.T) {
	ginkgo.RunSpecs(t, "Kubernetes e2e suite")
}

// conformance labels a spec as e2e's framework.ConformanceIt does.
const conformance = "Conformance"

var _ = ginkgo.Describe("[sig-architecture] Conformance Tests", func() {
	// Listed.
	ginkgo.It("should have at least two untainted nodes [Conformance]", ginkgo.Label(conformance), func() {
		ginkgo.Fail("Conformance requires at least two nodes")
	})
})

// A longer neighbour of the listed spec above, by a prefix: it must run.
var _ = ginkgo.Describe("[sig-x] [sig-architecture] Conformance Tests", func() {
	ginkgo.It("should have at least two untainted nodes [Conformance]", ginkgo.Label(conformance), func() {})
})

var _ = ginkgo.Describe("[sig-apps] Daemon set", func() {
	// Listed.
	ginkgo.It("should rollback without unnecessary restarts [Conformance] [Serial]", ginkgo.Label(conformance), ginkgo.Serial, func() {
		ginkgo.Fail("Conformance test suite needs a cluster with at least 2 nodes.")
	})
	// Shorter and longer neighbours: they run.
	ginkgo.It("should rollback without unnecessary restarts [Conformance]", ginkgo.Label(conformance), func() {
		ginkgo.Fail("error waiting for daemon pods to be rolled back: timed out\n\n    {\n        s: \"pods not ready\",\n    }")
	})
	ginkgo.It("should rollback without unnecessary restarts [Conformance] [Serial] [Slow]", ginkgo.Label(conformance), ginkgo.Serial, func() {})
})

var _ = ginkgo.Describe("[sig-node] Pods (lifecycle)", func() {
	// Listed: . * ( ) are regexp metacharacters.
	ginkgo.It("should run a.b* (once) [Conformance]", ginkgo.Label(conformance), func() {
		ginkgo.Fail("listed, must not run")
	})
	// What the unquoted name would match: it runs.
	ginkgo.It("should run aXbbb once [Conformance]", ginkgo.Label(conformance), func() {})
	ginkgo.It("should skip itself [Conformance]", ginkgo.Label(conformance), func() {
		ginkgo.Skip("Only supported for providers [gce gke] (not skeleton)\nsecond line")
	})
	ginkgo.It("should panic [Conformance]", ginkgo.Label(conformance), func() {
		var m map[string]int
		m["x"] = 1
	})
	// Conformance by label only.
	ginkgo.It("should be labelled", ginkgo.Label(conformance), func() {})
	// [Conformance] by text, no label: --label-filter leaves it out (not run).
	ginkgo.It("should be filtered out [Conformance]", func() {})
	// Not conformance: ignored.
	ginkgo.It("should do something else", func() {})
})
