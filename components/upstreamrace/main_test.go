package upstreamrace_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks the parent process for leaked goroutines. A child (one
// scenario, re-executed) exits right after it printed its result: what
// upstream's commands leave running there is what the scenarios are about.
func TestMain(m *testing.M) {
	if child() {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}
