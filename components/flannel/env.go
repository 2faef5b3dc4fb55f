package flannel

import (
	"fmt"
	"os"
)

// NodeNameEnv is the environment variable flannel's kube subnet manager
// takes its node's name from: process-wide.
const NodeNameEnv = "NODE_NAME"

// SetNodeNameEnv sets NODE_NAME to the node's name, for flannel's kube
// subnet manager, and returns the value it replaced ("" if unset). It is
// process-wide, so a distro calls it once, at the barrier (a
// harness.BarrierHook), before any component runs.
func SetNodeNameEnv(node string) (previous string, err error) {
	previous = os.Getenv(NodeNameEnv)
	if err := os.Setenv(NodeNameEnv, node); err != nil {
		return previous, &EnvError{Name: NodeNameEnv, Value: previous, Want: node, Err: err}
	}
	return previous, nil
}

// EnvError is a process environment variable that is not what flannel
// needs: NODE_NAME not the node's name at Run (SetNodeNameEnv was not
// called at the barrier, or another value was set since), or Setenv failing.
type EnvError struct {
	Name, Value, Want string
	Err               error // Setenv's, if that failed
}

// Example: flannel: NODE_NAME="" in the process environment, want
// "node-a" (flannel's kube subnet manager reads its node's name there; call
// flannel.SetNodeNameEnv at the barrier)
func (e *EnvError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: setting %s=%q: %v", Name, e.Name, e.Want, e.Err)
	}
	return fmt.Sprintf("%s: %s=%q in the process environment, want %q (flannel's kube subnet manager reads its node's name there; call flannel.SetNodeNameEnv at the barrier)",
		Name, e.Name, e.Value, e.Want)
}

// Unwrap returns Setenv's error, if any.
func (e *EnvError) Unwrap() error { return e.Err }
