package harness

import (
	"os"
	"runtime/debug"

	"github.com/kubeharness/kubeharness/scoping"
)

// GCPercent returns a barrier hook that sets the garbage collector's goal
// (runtime/debug.SetGCPercent) to percent, unless the GOGC environment
// variable is set: the operator's choice wins. One process's collector
// marks every component's heap at once, and what they allocate meanwhile
// counts as live; a lower percentage than Go's 100 keeps the heap near what
// separate processes hold, for more collector CPU.
func GCPercent(percent int) BarrierHook {
	return func(*scoping.Plan) error {
		if _, set := os.LookupEnv("GOGC"); !set {
			debug.SetGCPercent(percent)
		}
		return nil
	}
}
