package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// exec.Cmd copies output in goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPause runs the real pause binary, built static as mkimages builds it.
func TestPause(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String()+" exits 0", func(t *testing.T) {
			cmd := exec.Command(bin)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitStarted(t, cmd.Process.Pid, bin)
			stopAndCheck(t, cmd, cmd.Process.Pid, sig)
		})
	}

	// Not PID 1: a shell starts a child that will orphan a grandchild, then
	// execs pause in its own process, so pause is the child's parent and,
	// as a subreaper, the grandchild's new parent once the child exits.
	t.Run("reaps orphans as a subreaper", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", `
sh -c 'until [ -e "$DIR/go" ]; do sleep 0.01; done
sleep 1 & echo $! >"$DIR/orphan.tmp"; mv "$DIR/orphan.tmp" "$DIR/orphan"' &
echo $! >"$DIR/child"
exec "$PAUSE"`)
		cmd.Env = append(os.Environ(), "DIR="+dir, "PAUSE="+bin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pause := cmd.Process.Pid
		waitStarted(t, pause, bin)
		child := readPID(t, filepath.Join(dir, "child"))
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		orphan := readPID(t, filepath.Join(dir, "orphan"))
		// The child exits at once; the orphan sleeps 1 s under pause.
		waitFor(t, fmt.Sprintf("orphan %d to have pause (%d) as its parent", orphan, pause), func() bool {
			st, ok := status(orphan)
			return ok && st["PPid"] == strconv.Itoa(pause)
		})
		waitGone(t, child)
		waitGone(t, orphan)
		if kids := children(t, pause); len(kids) > 0 {
			t.Errorf("pause still has children %v", kids)
		}
		stopAndCheck(t, cmd, pause, syscall.SIGTERM)
		if stderr.Len() > 0 {
			t.Errorf("stderr: %s", stderr.String())
		}
	})

	// PID 1 of a PID namespace, as in a pod: the kernel gives it every
	// orphan of the namespace.
	t.Run("reaps orphans as PID 1", func(t *testing.T) {
		cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", bin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var pause int
		waitFor(t, "unshare to start pause", func() bool {
			if kids := children(t, cmd.Process.Pid); len(kids) == 1 {
				pause = kids[0]
				return true
			}
			st, ok := status(cmd.Process.Pid)
			return !ok || st["State"][0] == 'Z' // exited: reported below
		})
		if pause == 0 {
			_ = cmd.Wait()
			if strings.Contains(stderr.String(), "Operation not permitted") {
				t.Skipf("no PID namespaces here: %s", stderr.String())
			}
			t.Fatalf("unshare exited: %s", stderr.String())
		}
		waitStarted(t, pause, bin)
		// A shell in pause's namespace backgrounds a sleep and exits.
		enter := exec.Command("nsenter", "--target", strconv.Itoa(pause), "--pid", "--", "sh", "-c", "sleep 1 >/dev/null 2>&1 & exit 0")
		if out, err := enter.CombinedOutput(); err != nil {
			t.Fatalf("nsenter: %v\n%s", err, out)
		}
		kids := children(t, pause)
		if len(kids) != 1 {
			t.Fatalf("pause's children %v, want the orphaned sleep", kids)
		}
		if st, _ := status(kids[0]); st["Name"] != "sleep" {
			t.Fatalf("pause's child %d is %q, want the orphaned sleep", kids[0], st["Name"])
		}
		waitGone(t, kids[0])
		stopAndCheck(t, cmd, pause, syscall.SIGTERM) // unshare exits with pause's status
	})
}

// stopAndCheck sends sig to pid and checks that cmd exits 0 within 2 s.
func stopAndCheck(t *testing.T, cmd *exec.Cmd, pid int, sig syscall.Signal) {
	t.Helper()
	start := time.Now()
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after %v: %v, want exit 0", sig, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("exited %v after %v, want within 2s", d, sig)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running 10s after %v", sig)
	}
}

// status is /proc/PID/status as fields; false if there is no such process.
func status(pid int) (map[string]string, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, false
	}
	st := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			st[k] = strings.TrimSpace(v)
		}
	}
	return st, true
}

// exe is where /proc/PID/exe points, "" if unknown.
func exe(pid int) string {
	p, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return p
}

// children lists the processes whose parent is pid, zombies included.
func children(t *testing.T, pid int) []int {
	t.Helper()
	des, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, de := range des {
		n, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if st, ok := status(n); ok && st["PPid"] == strconv.Itoa(pid) {
			kids = append(kids, n)
		}
	}
	return kids
}

// waitStarted waits until pid runs bin, then 300 ms more: pause's first
// statements make it a subreaper and take SIGINT, SIGTERM and SIGCHLD (before
// that, Go's runtime dies of SIGTERM), and nothing outside shows when they
// have run. The margin is wide: the runtime's start takes about 1 ms.
func waitStarted(t *testing.T, pid int, bin string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("process %d to run %s", pid, bin), func() bool { return exe(pid) == bin })
	time.Sleep(300 * time.Millisecond)
}

// waitGone waits until pid is reaped; a zombie that stays fails the test.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("process %d to be reaped", pid), func() bool {
		_, ok := status(pid)
		return !ok
	})
}

// readPID waits for the file at path and reads the PID in it.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, path, func() bool {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if pid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return true
	})
	return pid
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}
