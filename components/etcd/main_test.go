package etcd_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/components/testenv/leaktest"
)

// peerConnLinger bounds how long a closed etcd's peer connections may
// outlive it: etcd's peer listener re-arms its read deadline
// (rafthttp.ConnReadTimeout, 5 s) on each read, which can undo the abort
// net/http's server sends a connection's background read once a request is
// answered; that connection, and its client's keep-alive, end when the
// deadline passes.
const peerConnLinger = 2 * 5 * time.Second

// TestMain fails the package's tests if any goroutine outlives them by
// more than peerConnLinger: a closed etcd, its clients and its listeners
// leave nothing running.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if _, err := leaktest.FindLeaks(peerConnLinger, 100*time.Millisecond); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
