package report_test

import (
	"log"
	"os"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/kubeharness/kubeharness/conformance/report"
)

func ExampleSummary_Markdown() {
	skips, err := report.LoadSkips(strings.NewReader(
		"# <spec full text><TAB><reason>\n" +
			"[sig-architecture] Conformance Tests should have at least two untainted nodes [Conformance]\tsingle node by design\n"))
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	run := []types.Report{{ // as LoadReports reads it from ginkgo's --json-report
		SuiteDescription: report.DefaultSuite,
		StartTime:        start,
		EndTime:          start.Add(75 * time.Minute),
		SpecReports: types.SpecReports{{
			ContainerHierarchyTexts: []string{"[sig-network] DNS"},
			LeafNodeType:            types.NodeTypeIt,
			LeafNodeText:            "should provide DNS for services [Conformance]",
			LeafNodeLabels:          []string{"Conformance"},
			State:                   types.SpecStatePassed,
		}, {
			ContainerHierarchyTexts: []string{"[sig-apps] Daemon set"},
			LeafNodeType:            types.NodeTypeIt,
			LeafNodeText:            "should run and stop simple daemon [Conformance] [Serial]",
			LeafNodeLabels:          []string{"Conformance", "Serial"},
			State:                   types.SpecStateFailed,
			Failure: types.Failure{
				Message:  "error waiting for daemon pod to start: timed out\n\n{...}",
				Location: types.CodeLocation{FileName: "k8s.io/kubernetes@v1.37.2/test/e2e/apps/daemon_set.go", LineNumber: 180},
			},
		}, {
			ContainerHierarchyTexts: []string{"[sig-architecture] Conformance Tests"},
			LeafNodeType:            types.NodeTypeIt,
			LeafNodeText:            "should have at least two untainted nodes [Conformance]",
			LeafNodeLabels:          []string{"Conformance"},
			State:                   types.SpecStateSkipped,
		}},
	}}
	s := report.Summarize(run, skips)
	err = s.Markdown(os.Stdout, report.Meta{
		Subject: "k3s-like",
		Version: "v1.37.2",
		Command: "make conformance",
		Machine: map[string]string{"cpus": "2"},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// # k3s-like conformance results: Kubernetes v1.37.2
	//
	// - Date: 2026-12-02
	// - Command: `make conformance`
	// - Suite: Kubernetes e2e suite
	// - cpus: 2
	//
	// | [Conformance] specs | count |
	// |---|---:|
	// | total | 3 |
	// | passed | 1 |
	// | failed | 1 |
	// | skipped by the skip list | 1 |
	// | skipped at runtime | 0 |
	// | not run | 0 |
	//
	// Wall time: 1h15m0s.
	// Passed: 50.0% (1 of the 2 specs not skipped by the list).
	//
	// ## Failures (1)
	//
	// - `[sig-apps] Daemon set should run and stop simple daemon [Conformance] [Serial]` — error waiting for daemon pod to start: timed out (`k8s.io/kubernetes@v1.37.2/test/e2e/apps/daemon_set.go:180`)
	//
	// ## Skipped by the skip list (1)
	//
	// - `[sig-architecture] Conformance Tests should have at least two untainted nodes [Conformance]` — single node by design
}
