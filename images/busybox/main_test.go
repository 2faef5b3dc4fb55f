package busybox

import (
	"testing"

	"go.uber.org/goleak"
)

// exec.Cmd copies output in goroutines; httptest serves in others.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
