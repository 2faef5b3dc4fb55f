package node_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// fakeChildEnv selects what the re-executed test binary does:
// "cleanup-rules" writes kube-proxy's and the kubelet's host rules, cleans
// them up and prints what is left (rules_test.go).
const fakeChildEnv = "KUBEHARNESS_NODE_FAKE_CHILD"

// TestMain runs the fake child when the test binary is re-executed as one
// (fakeChildEnv), and otherwise fails the package's tests if any goroutine
// outlives them.
func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeChildEnv); mode == "cleanup-rules" {
		os.Exit(cleanupRulesChild())
	}
	goleak.VerifyTestMain(m)
}
