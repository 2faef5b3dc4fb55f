package loadbalancer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them: a
// stopped load balancer leaves no proxy, health check or refresh behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
