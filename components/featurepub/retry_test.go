package featurepub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kubeharness/kubeharness/components/internal/logtest"
)

// TestRetry: failures are logged, through the context's logger, and
// retried until f succeeds; a context that ends stops it (false), even
// while f keeps failing.
func TestRetry(t *testing.T) {
	ctx, lines := logtest.Capture(context.Background())
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
