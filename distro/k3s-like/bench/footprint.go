package main

// The node's footprint (issue 46), measured in the node benchmark's runs:
// each shim's memory and what makes it up (smaps), and the CPU of each CNI
// plugin exec, timed from the exited plugin's rusage; the report's
// before/after tables are in footprint_report.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/version"
	"golang.org/x/sys/unix"
)

// The kinds of the node benchmark's runs.
const (
	// kindA is `k3s-like server` with its node, the release binary.
	kindA = "A"
	// kindB is the node as processes (node.go).
	kindB = "B"
	// kindABefore is A with the previous layout's binary (-k3s-like-before).
	kindABefore = "A-before"
	// kindAgent is `k3s-like agent` against a `server --disable-agent`.
	kindAgent = "agent"
	// kindAgentBefore is kindAgent with the previous layout's binary.
	kindAgentBefore = "agent-before"
)

// allKinds are the kinds -node-runs takes, in the order a pair runs them.
var allKinds = []string{kindA, kindB, kindABefore, kindAgent, kindAgentBefore}

// isBefore: the kind runs -k3s-like-before.
func isBefore(kind string) bool { return kind == kindABefore || kind == kindAgentBefore }

// isAgent: the kind's node is `k3s-like agent`.
func isAgent(kind string) bool { return kind == kindAgent || kind == kindAgentBefore }

// nodeKinds are the kinds of a pair's runs, from -node-runs, in allKinds'
// order; without a before binary the before kinds are left out. B needs
// A (the runtime files it runs are A's).
func nodeKinds(runs, before string) ([]string, error) {
	want := map[string]bool{}
	for _, k := range strings.Split(runs, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !slices.Contains(allKinds, k) {
			return nil, fmt.Errorf("-node-runs: unknown run %q (want some of %s)", k, strings.Join(allKinds, ","))
		}
		want[k] = true
	}
	var out []string
	for _, k := range allKinds {
		if want[k] && (!isBefore(k) || before != "") {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-node-runs=%q: no run to make (the before runs need -k3s-like-before)", runs)
	}
	if want[kindB] && !want[kindA] {
		return nil, errors.New("-node-runs: B runs A's runtime files: it needs A")
	}
	return out, nil
}

// The parts of a process's memory, by what its mappings hold
// (/proc/PID/smaps).
const (
	mapText  = iota // its executable's r-x mappings: code, shared by every process that runs the same file
	mapExe          // its executable's other mappings: read-only data, initialised data
	mapHeap         // anonymous mappings where the Go heap's arenas are (goArena): the heap's objects and the goroutines' stacks
	mapAnon         // other anonymous mappings and [heap]: the Go runtime's metadata (spans, GC bitmaps, mmap'd near the libraries), bss, a C heap
	mapStack        // [stack]
	mapOther        // other files, [vdso], [vvar]
	numMaps
)

// mapNames name the parts, for the report.
var mapNames = [numMaps]string{"text (its executable's code)", "its executable's data", "Go heap arenas (objects, goroutine stacks)", "other anonymous (runtime metadata, bss)", "[stack]", "other mappings"}

// goArenaLo and goArenaHi bound where the Go runtime puts its heap arenas
// on 64-bit Linux: from 0x00c0 << 32 up, or, since Go 1.26 randomizes the
// heap's base (runtime/malloc.go, randomizeHeapBase), anywhere below 1 <<
// 46 on amd64 (47 bits on arm64); above 4 GiB, where a non-PIE
// executable's bss is not, and below the kernel's mmap area (near
// 0x7f… << 32 on amd64, 0xffff… << 32 on arm64), where the runtime's
// other mappings are.
const goArenaLo = 1 << 32

// goArenaHi is goArenaLo's upper bound for this machine's architecture
// (the bench measures processes built for it).
func goArenaHi() uint64 {
	if runtime.GOARCH == "amd64" {
		return 1 << 46
	}
	return 1 << 47
}

// memParts are a process's RSS and PSS (KiB) by part.
type memParts [numMaps]struct{ rss, pss int64 }

// readSmaps splits /proc/PID/smaps by part.
func readSmaps(pid int) memParts {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return memParts{}
	}
	return parseSmaps(b, exe)
}

// parseSmaps splits an smaps file by part; exe is the process's
// executable, as smaps names it.
func parseSmaps(b []byte, exe string) memParts {
	var m memParts
	part := mapOther
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) >= 5 && strings.Contains(f[0], "-") && len(f[1]) == 4 { // a mapping's header
			path := ""
			if len(f) >= 6 {
				path = strings.Join(f[5:], " ")
			}
			switch {
			case exe != "" && path == exe && f[1] == "r-xp":
				part = mapText
			case exe != "" && path == exe:
				part = mapExe
			case path == "" && inGoArena(f[0]):
				part = mapHeap
			case path == "" || path == "[heap]" || strings.HasPrefix(path, "[anon"):
				part = mapAnon
			case path == "[stack]":
				part = mapStack
			default:
				part = mapOther
			}
			continue
		}
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			m[part].rss += n
		case "Pss:":
			m[part].pss += n
		}
	}
	return m
}

// inGoArena: the mapping start-end begins where the Go heap's arenas
// are (goArenaLo, goArenaHi).
func inGoArena(span string) bool {
	lo, _, _ := strings.Cut(span, "-")
	a, err := strconv.ParseUint(lo, 16, 64)
	return err == nil && a >= goArenaLo && a < goArenaHi()
}

// shimProc is one shim's figures (the shim alone, not its containers).
type shimProc struct {
	rss, anon, pss int64 // KiB
	parts          memParts
}

// cniExec is one exec of a CNI plugin: its name, the verb (CNI_COMMAND),
// and the CPU it and the children it waited for used (bridge's IPAM,
// host-local, is one of them: bridge runs it).
type cniExec struct {
	plugin, verb string
	cpu          time.Duration
	maxRSS       int64 // KiB, ru_maxrss
}

// key is the plugin and the verb: "bridge ADD".
func (e cniExec) key() string { return e.plugin + " " + e.verb }

// timedExec runs CNI plugins as libcni's RawExec does, but started in
// the run's network namespace and timed: each exec's CPU is user+system
// from the rusage wait4 returns for it (the kernel's accounting of the
// plugin's threads, and of its children it waited for, in microseconds),
// not a difference of samples.
type timedExec struct {
	invoke.RawExec
	version.PluginDecoder
	ns    *netns
	mu    sync.Mutex
	execs []cniExec
}

// ExecPlugin runs the plugin and records its CPU.
func (e *timedExec) ExecPlugin(ctx context.Context, pluginPath string, stdin []byte, environ []string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, pluginPath)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = environ, bytes.NewReader(stdin), &stdout, &stderr
	if err := e.ns.do(cmd.Start); err != nil {
		return nil, fmt.Errorf("%s: %w", pluginPath, err)
	}
	err := cmd.Wait()
	verb := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "CNI_COMMAND="); ok {
			verb = v
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		e.mu.Lock()
		e.execs = append(e.execs, cniExec{plugin: filepath.Base(pluginPath), verb: verb,
			cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), maxRSS: ru.Maxrss})
		e.mu.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s%s", filepath.Base(pluginPath), verb, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// loopbackList is the loopback network containerd adds to every sandbox
// before the node's own (go-cni's WithLoNetwork, ifName lo).
const loopbackList = `{"cniVersion": "0.3.1", "name": "cni-loopback", "plugins": [{"type": "loopback"}]}`

// probeCNI adds and then deletes n sandboxes' networks as containerd does
// for a Pod (the loopback network on lo, then the node's CNI
// configuration on eth0), with the node's own plugins (its bin
// directory) and configuration, in the run's network namespace, each
// sandbox in a network namespace of its own; it returns every plugin
// exec, timed.
func probeCNI(ctx context.Context, st *runState, n int) ([]cniExec, error) {
	agent := filepath.Join(st.data, "agent")
	confs, err := filepath.Glob(filepath.Join(agent, "etc/cni/net.d/*.conflist"))
	if err != nil || len(confs) != 1 {
		return nil, fmt.Errorf("the node's CNI configuration: %v %v", confs, err)
	}
	node, err := libcni.ConfListFromFile(confs[0])
	if err != nil {
		return nil, err
	}
	lo, err := libcni.ConfListFromBytes([]byte(loopbackList))
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(st.runDir, "bench-cni")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ex := &timedExec{ns: st.ns}
	cni := libcni.NewCNIConfigWithCacheDir([]string{filepath.Join(agent, "bin")}, filepath.Join(dir, "cache"), ex)
	for i := range n {
		id := fmt.Sprintf("bench-cni-probe-%d", i)
		nsPath := filepath.Join(dir, id)
		if err := bindNewNetns(nsPath); err != nil {
			return nil, err
		}
		los := &libcni.RuntimeConf{ContainerID: id, NetNS: nsPath, IfName: "lo"}
		eth := &libcni.RuntimeConf{ContainerID: id, NetNS: nsPath, IfName: "eth0"}
		if _, err := cni.AddNetworkList(ctx, lo, los); err != nil {
			return nil, err
		}
		if _, err := cni.AddNetworkList(ctx, node, eth); err != nil {
			return nil, err
		}
		// containerd's teardown: the networks deleted in reverse.
		if err := cni.DelNetworkList(ctx, node, eth); err != nil {
			return nil, err
		}
		if err := cni.DelNetworkList(ctx, lo, los); err != nil {
			return nil, err
		}
		if err := unix.Unmount(nsPath, unix.MNT_DETACH); err != nil {
			return nil, fmt.Errorf("unmounting %s: %w", nsPath, err)
		}
	}
	return ex.execs, nil
}

// copyFile copies an executable to dst (a file of its own: its pages are
// not another file's), making dst's directory.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	return out.Close()
}

// bindNewNetns makes a network namespace and keeps it at path (a bind
// mount of it, as containerd keeps a sandbox's).
func bindNewNetns(path string) error {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return err
	}
	return onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting a network namespace at %s: %w", path, err)
		}
		return nil
	})
}
