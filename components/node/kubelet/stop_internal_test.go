package kubelet

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestStoppedWhileStarting: a stop during the kubelet's start (its CRI
// calls cancelled) is a stop, not a failure; the same errors while it
// runs, and other errors after the stop, are failures.
func TestStoppedWhileStarting(t *testing.T) {
	running := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	canceledRPC := fmt.Errorf("failed to run Kubelet: %w", status.Error(codes.Canceled, "context canceled"))
	other := errors.New("failed to run Kubelet: cgroup-root does not exist")
	assert.NoError(t, stoppedWhileStarting(stopped, nil))
	assert.NoError(t, stoppedWhileStarting(stopped, canceledRPC))
	assert.NoError(t, stoppedWhileStarting(stopped, fmt.Errorf("x: %w", context.Canceled)))
	assert.Equal(t, other, stoppedWhileStarting(stopped, other))
	assert.Equal(t, canceledRPC, stoppedWhileStarting(running, canceledRPC))
	assert.Equal(t, other, stoppedWhileStarting(running, other))
}
