// Command results turns one ginkgo run of upstream's conformance suite
// into the results document, or prints the --skip regexp of a skip list.
//
//	results -json report.json [-skip skip-1.37.txt] -out RESULTS-1.37.md -version v1.37.2 \
//		[-command "make conformance"] [-subject k3s-like] [-date 2006-01-02] [-meta key=value ...]
//	results -skip-regexp -skip skip-1.37.txt [-suite "Kubernetes e2e suite"]
//
// The first form reads what `ginkgo --json-report` wrote and the skip list
// (package report's format: full text, tab, reason) and writes the
// Markdown document (to stdout without -out). The second prints the value
// for ginkgo's --skip that skips exactly the listed specs, or nothing for
// an empty list (then pass no --skip). Bad input (a missing file,
// malformed JSON, a malformed skip list, a report without [Conformance]
// specs) exits 1 with a message; failed specs do not.
package main
