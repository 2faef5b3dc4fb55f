package harness

import (
	"os"
	"runtime/debug"
)

// SetGCPercent sets the garbage collector's goal
// (runtime/debug.SetGCPercent) to percent and reports true, unless the
// GOGC environment variable is set: the operator's choice wins. One
// process's collector marks every component's heap at once, and what they
// allocate meanwhile counts as live; a percentage below Go's 100 keeps the
// heap near what separate processes hold, for more collector CPU. A distro
// sets that once its components are ready, and may set a higher goal for
// their start, which allocates the most.
func SetGCPercent(percent int) bool {
	if _, set := os.LookupEnv("GOGC"); set {
		return false
	}
	debug.SetGCPercent(percent)
	return true
}
