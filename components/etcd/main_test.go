package etcd_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// closed etcd, its clients and its listeners leave nothing running.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
