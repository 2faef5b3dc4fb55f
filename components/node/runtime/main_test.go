package runtime_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs a fake child when the test binary is re-executed as one
// (fakeChildEnv), and otherwise fails the package's tests if any goroutine
// outlives them.
func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeChildEnv); mode != "" {
		os.Exit(fakeChild(mode))
	}
	goleak.VerifyTestMain(m)
}
