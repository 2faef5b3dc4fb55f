package etcd

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// TestAddRetries: a refused learner add is retried for the refusals that
// pass by themselves — among them a removed member's ID, which a member
// re-added at the same peer URL in the same Unix second gets again
// (TestClusterRejoinsWithClearedDataDir failed so in about 1 run of 2
// when its member was added and removed within one second) — and for no
// other error.
func TestAddRetries(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{rpctypes.ErrUnhealthy, true},
		{rpctypes.ErrTooManyLearners, true},
		{rpctypes.ErrMemberNotFound, true},
		{fmt.Errorf("adding: %w", rpctypes.ErrMemberNotFound), true},
		{rpctypes.ErrPeerURLExist, false},
		{rpctypes.ErrPermissionDenied, false},
		{errors.New("context deadline exceeded"), false},
	} {
		if got := addRetries(tc.err); got != tc.want {
			t.Errorf("addRetries(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
