package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them (the
// node-client approver's informers, the publishers' loops).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
