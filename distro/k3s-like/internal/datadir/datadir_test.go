package datadir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNodeRun: one short directory under /run/k3s-like per data dir, the
// same for the dir's relative and absolute paths; the socket in it.
func TestNodeRun(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("data", 0o700); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "data")
	if NodeRun("data") != NodeRun(abs) {
		t.Errorf("relative %s, absolute %s", NodeRun("data"), NodeRun(abs))
	}
	if NodeRun(abs) == NodeRun(filepath.Join(dir, "other")) {
		t.Error("two data dirs, one runtime directory")
	}
	run := NodeRun(abs)
	if !strings.HasPrefix(run, "/run/k3s-like/") || len(filepath.Base(run)) != 10 {
		t.Errorf("NodeRun %s", run)
	}
	if got := ContainerdSocket(abs); got != filepath.Join(run, "containerd.sock") || len(got) > 107 {
		t.Errorf("ContainerdSocket %s", got)
	}
}
