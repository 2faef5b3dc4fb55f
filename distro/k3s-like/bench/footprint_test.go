package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeKinds: the runs come in allKinds' order, the before runs only
// with a before binary, B only with A, an unknown run is an error.
func TestNodeKinds(t *testing.T) {
	got, err := nodeKinds("agent-before,agent,B,A,A-before", "/before")
	if err != nil || strings.Join(got, ",") != "A,B,A-before,agent,agent-before" {
		t.Errorf("all: %q, %v", got, err)
	}
	got, err = nodeKinds("A,A-before,agent,agent-before", "")
	if err != nil || strings.Join(got, ",") != "A,agent" {
		t.Errorf("no before binary: %q, %v", got, err)
	}
	if _, err := nodeKinds("A-before", ""); err == nil {
		t.Error("only before runs, no before binary: no error")
	}
	if _, err := nodeKinds("B", "/before"); err == nil || !strings.Contains(err.Error(), "needs A") {
		t.Errorf("B without A: %v", err)
	}
	if _, err := nodeKinds("A,C", ""); err == nil || !strings.Contains(err.Error(), `"C"`) {
		t.Errorf("an unknown run: %v", err)
	}
}

// TestParseSmaps: each mapping's Rss and Pss go to its part: the
// executable's r-x mapping is text, its other mappings data, unnamed
// mappings where Go's heap arenas are (at 0xc0 << 32, or randomized as
// Go 1.26 does) the heap, the bss and the mmap area's the other
// anonymous; Pss_Dirty and the like are not Pss.
func TestParseSmaps(t *testing.T) {
	const smaps = `00400000-00a00000 r-xp 00000000 fd:00 123 /data/h/bin/containerd-shim-runc-v2
Size:               6144 kB
Rss:                3000 kB
Pss:                  30 kB
Pss_Dirty:             0 kB
00a00000-00f00000 r--p 00600000 fd:00 123 /data/h/bin/containerd-shim-runc-v2
Rss:                1000 kB
Pss:                  10 kB
00f00000-00f20000 rw-p 00b00000 fd:00 123 /data/h/bin/containerd-shim-runc-v2
Rss:                 100 kB
Pss:                 100 kB
00f20000-00f40000 rw-p 00000000 00:00 0 
Rss:                  50 kB
Pss:                  50 kB
c000000000-c000400000 rw-p 00000000 00:00 0
Rss:                1500 kB
Pss:                1500 kB
Pss_Anon:           1500 kB
d539cc00000-d539d000000 rw-p 00000000 00:00 0
Rss:                 500 kB
Pss:                 500 kB
7fa096000000-7fa096012000 rw-p 00000000 00:00 0
Rss:                  20 kB
Pss:                  20 kB
7ffd0000-7ffd2000 rw-p 00000000 00:00 0                                  [stack]
Rss:                   8 kB
Pss:                   8 kB
7ffd3000-7ffd4000 r-xp 00000000 00:00 0                                  [vdso]
Rss:                   4 kB
Pss:                   0 kB
`
	m := parseSmaps([]byte(smaps), "/data/h/bin/containerd-shim-runc-v2")
	want := memParts{}
	want[mapText].rss, want[mapText].pss = 3000, 30
	want[mapExe].rss, want[mapExe].pss = 1100, 110
	want[mapHeap].rss, want[mapHeap].pss = 2000, 2000
	want[mapAnon].rss, want[mapAnon].pss = 70, 70
	want[mapStack].rss, want[mapStack].pss = 8, 8
	want[mapOther].rss, want[mapOther].pss = 4, 0
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	// Another executable's code is not this one's text.
	if m := parseSmaps([]byte(smaps), "/bin/k3s-like"); m[mapText].rss != 0 || m[mapOther].rss != 4104 || m[mapHeap].rss != 2000 {
		t.Errorf("another executable: %+v", m)
	}
}

// TestTimedExec: a plugin's exec is recorded with its name, its verb and
// the CPU it and its children used; a failing plugin's error says so.
func TestTimedExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a network namespace needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip")
	}
	ns, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.close()
	dir := t.TempDir()
	// The work is in a child the plugin waits for, as bridge waits for
	// host-local.
	plugin := filepath.Join(dir, "busy")
	script := "#!/bin/sh\nsh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'\n[ \"$CNI_COMMAND\" = DEL ] && exit 3\necho '{}'\n"
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e := &timedExec{ns: ns}
	out, err := e.ExecPlugin(context.Background(), plugin, []byte("{}"), []string{"CNI_COMMAND=ADD", "PATH=/usr/bin:/bin"})
	if err != nil || strings.TrimSpace(string(out)) != "{}" {
		t.Fatalf("ADD: %q, %v", out, err)
	}
	if _, err := e.ExecPlugin(context.Background(), plugin, nil, []string{"CNI_COMMAND=DEL", "PATH=/usr/bin:/bin"}); err == nil || !strings.Contains(err.Error(), "busy DEL") {
		t.Errorf("a failing DEL: %v", err)
	}
	if len(e.execs) != 2 || e.execs[0].key() != "busy ADD" || e.execs[1].key() != "busy DEL" {
		t.Fatalf("execs %+v", e.execs)
	}
	for _, x := range e.execs {
		// 100,000 iterations of sh take tens of milliseconds here; the
		// child's CPU is in its parent's rusage once waited for.
		if x.cpu < 5*time.Millisecond || x.maxRSS == 0 {
			t.Errorf("%s: CPU %s, max RSS %d KiB", x.key(), x.cpu, x.maxRSS)
		}
	}
}

// footprintRuns are two pairs of A, A-before, agent and agent-before
// runs: A's shims are small (1 and 2 MiB PSS, one of them over the
// target at its max in pair 2), A-before's 16 MiB.
func footprintRuns() []nodeResult {
	p := func(name string, rssMiB, pssMiB int64) procFigures {
		return procFigures{name: name, rss: rssMiB << 10, pss: pssMiB << 10}
	}
	shims := func(pss ...int64) []shimProc {
		var out []shimProc
		for _, v := range pss {
			s := shimProc{rss: 10 << 10, pss: v << 10}
			s.parts[mapHeap].pss = v << 10
			out = append(out, s)
		}
		return out
	}
	execs := func(ms ...int) []cniExec {
		var out []cniExec
		for _, v := range ms {
			out = append(out, cniExec{plugin: "bridge", verb: "ADD", cpu: time.Duration(v) * time.Millisecond})
		}
		return out
	}
	var rs []nodeResult
	for pair := 1; pair <= 2; pair++ {
		a := nodeResult{kind: kindA, pair: pair, idle: []procFigures{p("k3s-like server", 600, 500), p("containerd", 100, 50)},
			procs: []procFigures{p("k3s-like server", 700, 600), p("containerd", 150, 60)}, each: shims(1, int64(pair)), cni: execs(4, 6)}
		a.idle[1].reaped, a.procs[1].reaped = time.Second, 3*time.Second // 2 s over 2 Pods
		before := nodeResult{kind: kindABefore, pair: pair, idle: []procFigures{p("k3s-like server", 600, 500), p("containerd", 200, 100)},
			procs: []procFigures{p("k3s-like server", 700, 600), p("containerd", 250, 120)}, each: shims(16, 16), cni: execs(40, 60)}
		agent := nodeResult{kind: kindAgent, pair: pair, idle: []procFigures{p("k3s-like server --disable-agent", 500, 400), p("k3s-like agent", 150, 100), p("containerd", 90, 40)},
			procs: []procFigures{p("k3s-like server --disable-agent", 500, 400), p("k3s-like agent", 170, 110), p("containerd", 100, 45)}, each: shims(1, 1)}
		agentBefore := nodeResult{kind: kindAgentBefore, pair: pair, idle: []procFigures{p("k3s-like server --disable-agent", 500, 400), p("k3s-like agent", 200, 150), p("containerd", 100, 50)},
			procs: []procFigures{p("k3s-like server --disable-agent", 500, 400), p("k3s-like agent", 220, 160), p("containerd", 110, 55)}, each: shims(16, 16)}
		rs = append(rs, a, before, agent, agentBefore)
	}
	return rs
}

// TestRenderFootprint: after against before, pair by pair, at 0 and n
// Pods, with where after stands against each target.
func TestRenderFootprint(t *testing.T) {
	var sb strings.Builder
	b := &nodeBench{c: nodeFlags{idle: 20 * time.Second, cniProbes: 10}}
	renderFootprint(&sb, b, footprintRuns(), 2)
	out := sb.String()
	reportHas(t, out,
		"### The server with its node (after: A runs, before: A-before runs)",
		// pair 1: mean (1+1)/2 = 1 against 16; pair 2: 1.5 against 16.
		"| PSS per shim, mean | 2 | 1.25 MiB (1.00–1.50) | 16.00 MiB (16.00–16.00) | 0.08 | ≤ 2 MiB: met |",
		"| PSS per shim, max | 2 | 1.50 MiB (1.00–2.00) | 16.00 MiB (16.00–16.00) | 0.09 | ≤ 2 MiB: met |",
		"| RSS per shim, mean | 2 | 10.00 MiB (10.00–10.00) | 10.00 MiB (10.00–10.00) | 1.00 | ≤ 12 MiB: met |",
		"| PSS per shim, mean: Go heap arenas (objects, goroutine stacks) | 2 | 1.25 MiB",
		"| containerd RSS | 0 | 100.00 MiB (100.00–100.00) | 200.00 MiB (200.00–200.00) | 0.50 |  |",
		// 600 + 60 + 1 + 1 (pair 1), 600 + 60 + 1 + 2 (pair 2).
		"| the node's PSS: server + containerd + shims | 2 | 662.50 MiB (662.00–663.00) | 752.00 MiB (752.00–752.00) | 0.88 |",
		"| the node's PSS: server + containerd + shims | 0 | 550.00 MiB (550.00–550.00) | 600.00 MiB (600.00–600.00) | 0.92 |",
		"| containerd's reaped children's CPU per Pod (the Pods' CNI plugin execs and `shim start`) | 2 | 1000.00 ms (1000.00–1000.00) | 0.00 ms (0.00–0.00) | – |",
		"| CPU per CNI exec, mean: bridge ADD | probe | 5.00 ms (5.00–5.00) | 50.00 ms (50.00–50.00) | 0.10 | ≤ 10 ms: met |",
		"| CPU per CNI exec, max: bridge ADD | probe | 6.00 ms (6.00–6.00) | 60.00 ms (60.00–60.00) | 0.10 | ≤ 10 ms: met |",
		"### The agent alone",
		// 100 + 40 PSS, idle, no shims, against 150 + 50.
		"| the agent alone, PSS: agent + containerd + shims | 0 | 140.00 MiB (140.00–140.00) | 200.00 MiB (200.00–200.00) | 0.70 | ≤ 275 MB (262.3 MiB): met |",
		"| the agent alone, RSS (VmRSS summed: the binary's pages counted in the agent and in containerd) | 0 | 240.00 MiB (240.00–240.00) | 300.00 MiB (300.00–300.00) | 0.80 |  |",
		"| agent PSS | 2 | 110.00 MiB (110.00–110.00) | 160.00 MiB (160.00–160.00) | 0.69 |  |",
	)

	// A target missed; no before runs: no before figures, no ratio.
	var only []nodeResult
	for _, r := range footprintRuns() {
		if r.kind == kindA {
			r.each = append(r.each, shimProc{rss: 30 << 10, pss: 5 << 10})
			only = append(only, r)
		}
	}
	sb.Reset()
	renderFootprint(&sb, b, only, 2)
	out = sb.String()
	reportHas(t, out,
		"| RSS per shim, max | 2 | 30.00 MiB (30.00–30.00) | – | – | ≤ 12 MiB: missed |",
		"| PSS per shim, max | 2 | 5.00 MiB (5.00–5.00) | – | – | ≤ 2 MiB: missed |",
	)
	if strings.Contains(out, "### The agent alone") {
		t.Errorf("an agent table without agent runs:\n%s", out)
	}
}

// TestLoaded: the footprint's loaded figures are the settled ones when
// the run waited for its Pods to settle, else those at all Running.
func TestLoaded(t *testing.T) {
	r := footprintRuns()[0]
	procs, each := loaded(r)
	if procs[0].pss != 600<<10 || len(each) != 2 {
		t.Errorf("no settling: %v %v", procs, each)
	}
	r.settled = []procFigures{{name: "k3s-like server", pss: 650 << 10}, {name: "containerd", pss: 70 << 10}}
	r.settledEach = []shimProc{{pss: 1 << 10}}
	if v, _ := nodeMem(r, false, true); v != 721 {
		t.Errorf("settled node PSS %v MiB, want 650 + 70 + 1", v)
	}
	if v, _ := nodeMem(r, true, true); v != 550 {
		t.Errorf("idle node PSS %v MiB, want 500 + 50", v)
	}
}
