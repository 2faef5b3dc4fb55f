package flannel_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// TestMain fails the package's tests if any goroutine outlives them. A
// child (TestChild) runs a control plane, which leaves goroutines behind
// by design: its scenario checks flannel's own instead (flannelGoroutines).
func TestMain(m *testing.M) {
	if testenv.ChildScenario() != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// scenarios are what TestChild runs in a child process (TestFlannelInNetns).
var scenarios = map[string]func(*testing.T){
	"vxlan":   func(t *testing.T) { scenarioNetwork(t, "vxlan") },
	"host-gw": func(t *testing.T) { scenarioNetwork(t, "host-gw") },
}

// TestChild runs a scenario in a child process started by another test.
func TestChild(t *testing.T) { testenv.RunScenario(t, scenarios) }
