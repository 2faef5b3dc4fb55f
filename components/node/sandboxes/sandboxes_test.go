package sandboxes_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/node/sandboxes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClient is a CRI with n sandboxes whose stop takes delay; it records
// how many stops ran at once at most.
type fakeClient struct {
	runtimeapi.RuntimeServiceClient // the methods RemoveAll does not call panic
	n                               int
	delay                           time.Duration
	failRemove                      string // the sandbox whose removal fails

	mu            sync.Mutex
	running, most int
	stopped, gone []string
}

func (f *fakeClient) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	resp := &runtimeapi.ListPodSandboxResponse{}
	for i := range f.n {
		id := fmt.Sprint("sb", i)
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: "pod-" + id}})
	}
	return resp, nil
}

func (f *fakeClient) StopPodSandbox(ctx context.Context, r *runtimeapi.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	f.running++
	f.most = max(f.most, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.mu.Lock()
	f.stopped = append(f.stopped, r.PodSandboxId)
	f.mu.Unlock()
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeClient) RemovePodSandbox(_ context.Context, r *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	if r.PodSandboxId == f.failRemove {
		return nil, errors.New("busy")
	}
	f.mu.Lock()
	f.gone = append(f.gone, r.PodSandboxId)
	f.mu.Unlock()
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// TestRemoveAllBounded: every sandbox is stopped and removed, never more
// than Concurrency at once.
func TestRemoveAllBounded(t *testing.T) {
	f := &fakeClient{n: 5*sandboxes.Concurrency() + 1, delay: 5 * time.Millisecond}
	n, err := sandboxes.RemoveAll(t.Context(), f, klog.Background())
	require.NoError(t, err)
	assert.Equal(t, f.n, n)
	assert.Len(t, f.gone, f.n)
	assert.LessOrEqual(t, f.most, sandboxes.Concurrency())
	assert.Greater(t, f.most, 1, "in parallel")
}

// TestRemoveAllNamesFailures: a sandbox the CRI does not remove is named
// in the error and not counted.
func TestRemoveAllNamesFailures(t *testing.T) {
	f := &fakeClient{n: 3, failRemove: "sb1"}
	n, err := sandboxes.RemoveAll(t.Context(), f, klog.Background())
	assert.Equal(t, 2, n)
	assert.EqualError(t, err, "removing pod sandbox default/pod-sb1: busy")
}

// TestRemoveAllDeadline: at ctx's end the sandboxes being stopped fail with
// it and those not started are named as not stopped; RemoveAll returns
// within the deadline.
func TestRemoveAllDeadline(t *testing.T) {
	f := &fakeClient{n: 3 * sandboxes.Concurrency(), delay: time.Hour}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	n, err := sandboxes.RemoveAll(ctx, f, klog.Background())
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, 0, n)
	assert.ErrorContains(t, err, "stopping pod sandbox default/pod-sb0: context deadline exceeded")
	last := fmt.Sprint("sb", f.n-1)
	assert.ErrorContains(t, err, "pod sandbox default/pod-"+last+" not stopped: context deadline exceeded")
	assert.Empty(t, f.stopped)
}
