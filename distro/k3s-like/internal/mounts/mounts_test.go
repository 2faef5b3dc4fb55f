package mounts

import (
	"strings"
	"testing"
)

// TestUnder: the mounts at or below the directories, deepest first,
// escapes undone; a sibling whose name only starts alike is not below, a
// malformed line is skipped, a relative directory is made absolute.
func TestUnder(t *testing.T) {
	info := strings.Join([]string{
		`22 1 0:21 / /run rw - tmpfs tmpfs rw`,
		`900 22 0:4 / /run/k3s-like/abc/state/netns/cni-1 rw - nsfs nsfs rw`,
		`901 22 0:50 / /run/k3s-like/abcd/state/x rw - tmpfs tmpfs rw`,
		`902 1 0:51 / /tmp/b/data/agent/kubelet/pods/u/volumes/kube-api-access rw - tmpfs tmpfs rw`,
		`903 1 0:52 / /tmp/b/data/with\040space rw - tmpfs tmpfs rw`,
		`904 1 0:53 / /tmp/b/data2 rw - tmpfs tmpfs rw`,
		`905 1 0:54 / /tmp/b/data rw - tmpfs tmpfs rw`,
		`garbage`,
	}, "\n")
	got := Under(info, "/tmp/b/data", "/run/k3s-like/abc")
	want := []string{
		"/tmp/b/data/agent/kubelet/pods/u/volumes/kube-api-access",
		"/run/k3s-like/abc/state/netns/cni-1",
		"/tmp/b/data/with space",
		"/tmp/b/data",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Under(info, "nowhere/relative"); len(got) != 0 {
		t.Errorf("a relative directory nothing is mounted under: got %q", got)
	}
	if got := unescape(`a\134b\11`); got != `a\b\11` {
		t.Errorf("unescape: got %q", got)
	}
}
