package proctree_test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/kubeharness/kubeharness/components/node/proctree"
)

// TestShimsAndDescendants: the shims of one socket, and everything under
// them, once each.
func TestShimsAndDescendants(t *testing.T) {
	sock := "/run/k3s-like/abc/containerd.sock"
	table := proctree.Table{
		1:   {PPID: 0, Cmdline: "/sbin/init"},
		10:  {PPID: 1, Cmdline: "/bin/k3s-like server"},
		11:  {PPID: 10, Cmdline: "/bin/k3s-like containerd --config c"},
		20:  {PPID: 1, Cmdline: "/bin/k3s-like -namespace k8s.io -id a -address " + sock + " -publish-binary x"},
		21:  {PPID: 20, Cmdline: "/pause"},
		22:  {PPID: 20, Cmdline: "/pause"},
		23:  {PPID: 21, Cmdline: "/child"},
		30:  {PPID: 1, Cmdline: "/bin/k3s-like -namespace k8s.io -id b -address " + sock + "2 -publish-binary x"}, // another node's
		31:  {PPID: 30, Cmdline: "/pause"},
		40:  {PPID: 1, Cmdline: "/bin/k3s-like -namespace k8s.io -id c -address " + sock + " -publish-binary x"},
		400: {PPID: 40, Cmdline: "/pause"},
	}
	shims := table.Shims(sock)
	if fmt.Sprint(shims) != "[20 40]" {
		t.Errorf("shims %v, want [20 40]", shims)
	}
	got := table.Descendants(append(shims, 20)...)
	want := []int{20, 21, 22, 23, 40, 400}
	if len(got) != len(want) {
		t.Fatalf("descendants %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("descendants %v, want %v", got, want)
		}
	}
}

// TestReadAndKill: Read sees a process group this test started, with its
// parent and command lines; Kill leaves none of it alive.
func TestReadAndKill(t *testing.T) {
	leader := exec.Command("sh", "-c", "sleep 320 & sleep 321 & wait")
	leader.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = leader.Wait(); close(done) }()
	var group []int
	var table proctree.Table
	for deadline := time.Now().Add(10 * time.Second); len(group) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group %v, want sh and its two sleeps", group)
		}
		var err error
		if table, err = proctree.Read(); err != nil {
			t.Fatal(err)
		}
		group = table.Group(leader.Process.Pid)
	}
	if p := table[leader.Process.Pid]; p.PPID != os.Getpid() || !p.Alive() {
		t.Errorf("the leader %+v: want this process's child, alive", p)
	}
	if got := table.Descendants(leader.Process.Pid); fmt.Sprint(got) != fmt.Sprint(group) {
		t.Errorf("descendants %v, want the group %v", got, group)
	}
	proctree.Kill(group, 5*time.Second)
	for _, pid := range group {
		if proctree.Alive(pid) {
			t.Errorf("process %d alive after Kill", pid)
		}
	}
	<-done
}
