package featurepub

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"k8s.io/klog/v2"
)

// logged returns ctx with a logger (klog.FromContext) that records every
// line, and the lines recorded so far that have all of want.
func logged(ctx context.Context) (context.Context, func(want ...string) []string) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	return klog.NewContext(ctx, logger), func(want ...string) []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
	lines:
		for _, l := range lines {
			for _, w := range want {
				if !strings.Contains(l, w) {
					continue lines
				}
			}
			out = append(out, l)
		}
		return out
	}
}

// TestRetry: failures are logged, through the context's logger, and
// retried until f succeeds; a context that ends stops it (false), even
// while f keeps failing.
func TestRetry(t *testing.T) {
	ctx, lines := logged(context.Background())
	calls := 0
	ok := retry(ctx, "x", time.Millisecond, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	assert.True(t, ok)
	assert.Equal(t, 3, calls)
	assert.Len(t, lines(`"msg"="Retrying"`, `"action"="x"`, `"err"="not yet"`), 2)

	ctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.False(t, retry(ctx, "x", time.Second, func() error { return errors.New("never") }))
	assert.Less(t, time.Since(start), 2*time.Second, "stops with its context, not after a backoff step")
}
