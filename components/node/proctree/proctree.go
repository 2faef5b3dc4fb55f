package proctree

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is one process of /proc.
type Process struct {
	PPID, PGID int
	// State is /proc/PID/stat's: "R", "S", "Z" (a zombie), …
	State string
	// Cmdline is the command line, each argument followed by a space.
	Cmdline string
}

// Alive reports whether the process was neither a zombie nor dead.
func (p Process) Alive() bool { return p.State != "Z" && p.State != "X" }

// Table is /proc read once, by PID.
type Table map[int]Process

// Read reads every process's parent, group, state and command line.
func Read() (Table, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	t := Table{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f := Stat(pid)
		if len(f) < 3 {
			continue
		}
		p := Process{State: f[0]}
		p.PPID, _ = strconv.Atoi(f[1])
		p.PGID, _ = strconv.Atoi(f[2])
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		p.Cmdline = string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		t[pid] = p
	}
	return t, nil
}

// Group returns the processes of process group pgid, sorted.
func (t Table) Group(pgid int) []int {
	return t.selected(func(p Process) bool { return p.PGID == pgid })
}

// Shims returns the shims of the containerd serving socket, sorted: every
// process whose command line has "-address SOCKET" (containerd-shim-runc-v2
// … -address SOCKET …, whatever its argv[0]).
func (t Table) Shims(socket string) []int {
	return t.selected(func(p Process) bool { return strings.Contains(p.Cmdline, "-address "+socket+" ") })
}

// Under returns the processes run from directory dir (their argv[0] in
// it), sorted.
func (t Table) Under(dir string) []int {
	prefix := filepath.Clean(dir) + "/"
	return t.selected(func(p Process) bool { return strings.HasPrefix(p.Cmdline, prefix) })
}

func (t Table) selected(match func(Process) bool) []int {
	var out []int
	for pid, p := range t {
		if match(p) {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// Descendants returns the roots and every process under them, each once,
// sorted. A process not in t is not walked: delete one (this process, say)
// to leave out what is under it.
func (t Table) Descendants(roots ...int) []int {
	children := map[int][]int{}
	for pid, p := range t {
		children[p.PPID] = append(children[p.PPID], pid)
	}
	seen := map[int]bool{}
	var walk func(int)
	walk = func(pid int) {
		if seen[pid] {
			return
		}
		seen[pid] = true
		for _, c := range children[pid] {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	out := make([]int, 0, len(seen))
	for pid := range seen {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// Stat returns /proc/PID/stat's fields after "(comm)", which may hold
// spaces and parentheses: the state is [0], the parent [1], the group [2];
// nil if pid is gone.
func Stat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

// Alive reports whether pid is a process that is neither a zombie nor dead.
func Alive(pid int) bool {
	f := Stat(pid)
	return len(f) > 0 && Process{State: f[0]}.Alive()
}

// Kill sends SIGKILL to each of pids, then waits, wait at most in all,
// until none is Alive.
func Kill(pids []int, wait time.Duration) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(wait)
	for _, pid := range pids {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}
