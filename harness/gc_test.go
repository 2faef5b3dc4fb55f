package harness_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// The process-wide collector setting: each case restores it.
func TestSetGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Run("unset GOGC: the distro's", func(t *testing.T) {
		t.Setenv("GOGC", "")
		require.NoError(t, os.Unsetenv("GOGC"))
		assert.True(t, harness.SetGCPercent(75))
		assert.Equal(t, 75, debug.SetGCPercent(100))
	})
	t.Run("GOGC set: the operator's", func(t *testing.T) {
		t.Setenv("GOGC", "100")
		assert.False(t, harness.SetGCPercent(75))
		assert.Equal(t, 100, debug.SetGCPercent(100))
	})
}
