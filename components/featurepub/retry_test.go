package featurepub

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRetry: failures are logged and retried until f succeeds; a context
// that ends stops it (false), even while f keeps failing.
func TestRetry(t *testing.T) {
	var logged []string
	logf := func(format string, a ...any) { logged = append(logged, format) }
	calls := 0
	ok := retry(context.Background(), "x", time.Millisecond, logf, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	assert.True(t, ok)
	assert.Equal(t, 3, calls)
	assert.Len(t, logged, 2)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.False(t, retry(ctx, "x", time.Second, logf, func() error { return errors.New("never") }))
	assert.Less(t, time.Since(start), 2*time.Second, "stops with its context, not after a backoff step")
}
