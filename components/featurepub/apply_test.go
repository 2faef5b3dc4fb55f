package featurepub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// patchRecorder is the Features resource of a dynamic client that only
// patches: it records each apply and how many were in flight at most (a
// client-go fake serializes its reactors, so it could not tell).
type patchRecorder struct {
	dynamic.NamespaceableResourceInterface // nil: only Patch is called
	fail                                   map[string]bool

	mu       sync.Mutex
	inFlight int
	max      int
	applied  map[string]metav1.PatchOptions
}

func (r *patchRecorder) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, _ ...string) (*unstructured.Unstructured, error) {
	r.mu.Lock()
	r.inFlight++
	r.max = max(r.max, r.inFlight)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if pt != types.ApplyPatchType {
		return nil, fmt.Errorf("patch type %s", pt)
	}
	var f featuresv1alpha1.Feature
	if err := json.Unmarshal(data, &f); err != nil || f.Name != name {
		return nil, fmt.Errorf("body of %s: %v (name %q)", name, err, f.Name)
	}
	if r.fail[name] {
		return nil, errors.New("refused")
	}
	r.mu.Lock()
	r.applied[name] = opts
	r.mu.Unlock()
	return &unstructured.Unstructured{}, nil
}

type fakeDynamic struct {
	dynamic.Interface // nil: only Resource is called
	res               *patchRecorder
}

func (f fakeDynamic) Resource(schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return f.res
}

func features(n int) []*featuresv1alpha1.Feature {
	out := make([]*featuresv1alpha1.Feature, n)
	for i := range out {
		out[i] = &featuresv1alpha1.Feature{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("f%d", i)}}
	}
	return out
}

func TestApplyAll(t *testing.T) {
	force := true
	for _, tc := range []struct {
		name        string
		concurrency int
		fail        map[string]bool
		cancel      bool
		wantMax     int
		wantApplied int
		wantErr     string
	}{
		{name: "default concurrency", wantMax: 8, wantApplied: 30},
		{name: "limited", concurrency: 3, wantMax: 3, wantApplied: 30},
		{name: "one at a time", concurrency: 1, wantMax: 1, wantApplied: 30},
		{name: "failures are counted, the others applied", concurrency: 4, fail: map[string]bool{"f3": true, "f17": true},
			wantMax: 4, wantApplied: 28, wantErr: "2 of 30 applies failed, first: apply Feature f"},
		{name: "a cancelled context", concurrency: 4, cancel: true, wantErr: context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &patchRecorder{fail: tc.fail, applied: map[string]metav1.PatchOptions{}}
			p := &Publisher{Server: "node-1", Concurrency: tc.concurrency}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			names, err := p.applyAll(ctx, fakeDynamic{res: rec}, features(30))
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
			assert.LessOrEqual(t, rec.max, max(tc.wantMax, 0), "applies in flight")
			if tc.wantMax > 0 {
				assert.Equal(t, tc.wantMax, rec.max, "the limit is reached (30 applies of 5ms each)")
			}
			assert.Len(t, rec.applied, tc.wantApplied)
			assert.Len(t, names, tc.wantApplied, "the names returned are those applied")
			for name, opts := range rec.applied {
				assert.Equal(t, metav1.PatchOptions{FieldManager: "kubeharness/node-1", Force: &force}, opts, name)
			}
		})
	}
}

func TestFieldManagerAndUserAgent(t *testing.T) {
	p := &Publisher{Server: "node-1"}
	assert.Equal(t, "kubeharness/node-1", p.fieldManager())
	assert.Equal(t, "kubeharness-feature-publisher", p.userAgent())
	p = &Publisher{Server: "node-1", FieldManager: "k3s-like/node-1", UserAgent: "k3s-like-feature-publisher"}
	assert.Equal(t, "k3s-like/node-1", p.fieldManager())
	assert.Equal(t, "k3s-like-feature-publisher", p.userAgent())
}
