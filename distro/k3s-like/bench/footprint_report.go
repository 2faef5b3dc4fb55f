package main

// The node report's footprint tables (issue 46): the release binary's
// node (after) against the previous layout's (before), run by run in the
// same pairs on the same machine, as ratios.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// fpRow is one row of a footprint table: a figure of a run, its Pods,
// and the target for it, if any (limit in unit, 0 none).
type fpRow struct {
	name, pods, unit string
	target           string
	limit            float64
	get              func(nodeResult) (float64, bool)
}

// fpSection is one table: after's kind against before's.
type fpSection struct {
	title, after, before string
	rows                 []fpRow
}

// nodeProcName is the process that runs the node in a kind's runs ("" for
// B, whose node is three processes).
func nodeProcName(kind string) string {
	switch {
	case isAgent(kind):
		return "k3s-like agent"
	case kind == kindB:
		return ""
	}
	return "k3s-like server"
}

// loaded are a run's processes and shims with its Pods running: once
// they settled, if the run waited for that.
func loaded(r nodeResult) ([]procFigures, []shimProc) {
	if len(r.settled) > 0 {
		return r.settled, r.settledEach
	}
	return r.procs, r.each
}

// procIn is the figures of the process named name among procs.
func procIn(procs []procFigures, name string) (procFigures, bool) {
	for _, p := range procs {
		if p.name == name {
			return p, true
		}
	}
	return procFigures{}, false
}

// shimStat is the mean (or, with biggest, the max) over a run's shims of
// one of their figures (KiB), in MiB; no shims, no figure.
func shimStat(each []shimProc, f func(shimProc) int64, biggest bool) (float64, bool) {
	if len(each) == 0 {
		return 0, false
	}
	var total, top int64
	for _, s := range each {
		total, top = total+f(s), max(top, f(s))
	}
	if biggest {
		return mib(top), true
	}
	return mib(total) / float64(len(each)), true
}

// nodeMem is the node's memory in MiB, PSS or VmRSS, idle or loaded: its
// process, its containerd and its shims (the shims alone: not the
// containers under them).
func nodeMem(r nodeResult, idle, pssNotRSS bool) (float64, bool) {
	procs, each := loaded(r)
	if idle {
		procs, each = r.idle, r.idleEach
	}
	n, ok1 := procIn(procs, nodeProcName(r.kind))
	c, ok2 := procIn(procs, "containerd")
	if !ok1 || !ok2 {
		return 0, false
	}
	v := n.rss + c.rss
	if pssNotRSS {
		v = n.pss + c.pss
	}
	for _, s := range each {
		if pssNotRSS {
			v += s.pss
		} else {
			v += s.rss
		}
	}
	return mib(v), true
}

// procRow is a row of one process's figure, idle (0 Pods) or loaded.
func procRow(name, proc string, idle bool, n int, f func(procFigures) int64) fpRow {
	pods := fmt.Sprint(n)
	if idle {
		pods = "0"
	}
	return fpRow{name: name, pods: pods, unit: "MiB", get: func(r nodeResult) (float64, bool) {
		procs, _ := loaded(r)
		if idle {
			procs = r.idle
		}
		p, ok := procIn(procs, proc)
		return mib(f(p)), ok
	}}
}

// cniKeys are the plugin execs the runs timed ("bridge ADD", …), sorted.
func cniKeys(rs []nodeResult) []string {
	var keys []string
	for _, r := range rs {
		for _, e := range r.cni {
			if !slices.Contains(keys, e.key()) {
				keys = append(keys, e.key())
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// cniStat is the mean (or max) CPU, in ms, of a run's execs of key.
func cniStat(r nodeResult, key string, biggest bool) (float64, bool) {
	var total, top time.Duration
	n := 0
	for _, e := range r.cni {
		if e.key() == key {
			total, top, n = total+e.cpu, max(top, e.cpu), n+1
		}
	}
	if n == 0 {
		return 0, false
	}
	if biggest {
		return float64(top) / 1e6, true
	}
	return float64(total) / float64(n) / 1e6, true
}

// agentTargetMiB is the agent target, 275 MB (k3s's resource
// profile), in MiB.
const agentTargetMiB = 275e6 / (1 << 20)

// footprintSections are the footprint tables: the server with its node,
// and the agent alone, after against before, at 0 and n Pods.
func footprintSections(rs []nodeResult, n int) []fpSection {
	N := fmt.Sprint(n)
	shim := func(name, target string, limit float64, f func(shimProc) int64, biggest bool) fpRow {
		return fpRow{name: name, pods: N, unit: "MiB", target: target, limit: limit,
			get: func(r nodeResult) (float64, bool) { _, each := loaded(r); return shimStat(each, f, biggest) }}
	}
	rssOf := func(p procFigures) int64 { return p.rss }
	pssOf := func(p procFigures) int64 { return p.pss }
	server := []fpRow{
		shim("RSS per shim, mean", "≤ 12 MiB", 12, func(s shimProc) int64 { return s.rss }, false),
		shim("RSS per shim, max", "≤ 12 MiB", 12, func(s shimProc) int64 { return s.rss }, true),
		shim("PSS per shim, mean", "≤ 2 MiB", 2, func(s shimProc) int64 { return s.pss }, false),
		shim("PSS per shim, max", "≤ 2 MiB", 2, func(s shimProc) int64 { return s.pss }, true),
		shim("RSS anon per shim, mean", "", 0, func(s shimProc) int64 { return s.anon }, false),
	}
	for part := range numMaps {
		server = append(server, shim("PSS per shim, mean: "+mapNames[part], "", 0, func(s shimProc) int64 { return s.parts[part].pss }, false))
	}
	for _, idle := range []bool{true, false} {
		server = append(server, procRow("containerd RSS", "containerd", idle, n, rssOf), procRow("containerd PSS", "containerd", idle, n, pssOf))
	}
	for _, idle := range []bool{true, false} {
		pods := N
		if idle {
			pods = "0"
		}
		server = append(server,
			fpRow{name: "the node's PSS: server + containerd + shims", pods: pods, unit: "MiB", get: func(r nodeResult) (float64, bool) { return nodeMem(r, idle, true) }},
			fpRow{name: "the node's RSS (VmRSS summed): server + containerd + shims", pods: pods, unit: "MiB", get: func(r nodeResult) (float64, bool) { return nodeMem(r, idle, false) }})
	}
	server = append(server, fpRow{name: "containerd's reaped children's CPU per Pod (the Pods' CNI plugin execs and `shim start`)", pods: N, unit: "ms",
		get: func(r nodeResult) (float64, bool) {
			idle, ok1 := procIn(r.idle, "containerd")
			loaded, ok2 := procIn(r.procs, "containerd")
			if !ok1 || !ok2 || n == 0 {
				return 0, false
			}
			return float64(loaded.reaped-idle.reaped) / float64(n) / 1e6, true
		}})
	for _, key := range cniKeys(rs) {
		for _, biggest := range []bool{false, true} {
			name := "CPU per CNI exec, mean: " + key
			if biggest {
				name = "CPU per CNI exec, max: " + key
			}
			server = append(server, fpRow{name: name, pods: "probe", unit: "ms", target: "≤ 10 ms", limit: 10,
				get: func(r nodeResult) (float64, bool) { return cniStat(r, key, biggest) }})
		}
	}
	agent := []fpRow{}
	for _, idle := range []bool{true, false} {
		pods := N
		target, limit := "", 0.0
		if idle {
			pods, target, limit = "0", "≤ 275 MB (262.3 MiB)", agentTargetMiB
		}
		agent = append(agent,
			procRow("agent RSS", "k3s-like agent", idle, n, rssOf), procRow("agent PSS", "k3s-like agent", idle, n, pssOf),
			procRow("containerd RSS", "containerd", idle, n, rssOf), procRow("containerd PSS", "containerd", idle, n, pssOf),
			fpRow{name: "the agent alone, PSS: agent + containerd + shims", pods: pods, unit: "MiB", target: target, limit: limit,
				get: func(r nodeResult) (float64, bool) { return nodeMem(r, idle, true) }},
			fpRow{name: "the agent alone, RSS (VmRSS summed: the binary's pages counted in the agent and in containerd)", pods: pods, unit: "MiB",
				get: func(r nodeResult) (float64, bool) { return nodeMem(r, idle, false) }})
	}
	return []fpSection{
		{"The server with its node", kindA, kindABefore, server},
		{"The agent alone (kubelet, kube-proxy, flannel; containerd its child), against a `server --disable-agent`", kindAgent, kindAgentBefore, agent},
	}
}

// renderFootprint writes the footprint tables: for each row, after's
// median and range, before's, and the median of the pairs' after/before
// ratios, and where after's median stands against the target.
func renderFootprint(sb *strings.Builder, b *nodeBench, rs []nodeResult, n int) {
	fmt.Fprintf(sb, "\n## Footprint: after (the release build: helpers embedded) against before (no helpers: the node runs the binary itself as shim and CNI plugins) — issue 46\n\n")
	fmt.Fprintf(sb, "Each pair runs after and before one after the other on this machine; the ratio is after/before pair by pair, its median given. 0 Pods: once the Node is Ready and idled %s; %d Pods: once they all run and ran %s more (figures at once with 0 s). Per shim: the `containerd-shim-runc-v2` processes alone (not the pause containers under them), VmRSS, RssAnon, and `Pss` of smaps_rollup; by part, `/proc/PID/smaps` summed by what each mapping holds. The node: its process, containerd and the shims (no containers). The agent's target is on its PSS: the agent runs' server runs from a copy of the binary, so that no process outside the agent, containerd and the shims maps their binaries, and the sum of their PSS is the memory those processes map, each page once, which is what a cgroup of them charges (k3s's profile) but for kernel memory and page cache nobody maps; VmRSS summed counts the binary's pages shared by the agent and containerd twice. ", b.c.idle, n, b.c.settle)
	fmt.Fprintf(sb, "CPU per CNI exec: once the Pods run, the driver adds and deletes the networks of %d sandboxes as containerd does for a Pod (the loopback network on lo, then the node's conflist on eth0; deleted in reverse), with libcni, the node's own bin directory and configuration, in the run's network namespace; each plugin is started by the driver and its CPU is user+system of the rusage wait4 returns for it: the kernel's own accounting of that process (all its threads) and of the children it waited for (bridge's IPAM, host-local), in microseconds — not a difference of /proc samples in 10 ms ticks, and no other process's. The row from containerd's reaped children during the workload checks it against the real Pods' execs (it also holds the shims' `start` processes, two per Pod).\n", b.c.cniProbes)
	for _, sec := range footprintSections(rs, n) {
		as, bs := runsOf(rs, sec.after), runsOf(rs, sec.before)
		if len(as) == 0 {
			continue
		}
		fmt.Fprintf(sb, "\n### %s (after: %s runs, before: %s runs)\n\n| figure | Pods | after median (min–max) | before median (min–max) | after/before | target (after) |\n|---|---|---|---|---|---|\n", sec.title, sec.after, sec.before)
		for _, row := range sec.rows {
			va, vb := figureValues(as, row.get), figureValues(bs, row.get)
			var rr []float64
			for _, a := range as {
				for _, bb := range bs {
					if a.pair != bb.pair {
						continue
					}
					x, ok1 := row.get(a)
					y, ok2 := row.get(bb)
					if ok1 && ok2 && y != 0 {
						rr = append(rr, x/y)
					}
				}
			}
			target := ""
			if row.limit > 0 && len(va) > 0 {
				target = fmt.Sprintf("%s: %s", row.target, met(med(va) <= row.limit))
			}
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %s | %s |\n", row.name, row.pods, span(va, row.unit), span(vb, row.unit), ratio(med(rr)), target)
		}
	}
}

// footprintLine is a run's footprint in one line, for the progress log.
func footprintLine(r nodeResult) string {
	var parts []string
	_, each := loaded(r)
	if v, ok := shimStat(each, func(s shimProc) int64 { return s.rss }, false); ok {
		p, _ := shimStat(each, func(s shimProc) int64 { return s.pss }, false)
		parts = append(parts, fmt.Sprintf("%d shims, mean RSS %.1f MiB, PSS %.1f MiB", len(each), v, p))
	}
	if nodeProcName(r.kind) != "" {
		i, _ := nodeMem(r, true, true)
		l, _ := nodeMem(r, false, true)
		parts = append(parts, fmt.Sprintf("node PSS %.0f MiB idle, %.0f MiB loaded", i, l))
	}
	for _, key := range cniKeys([]nodeResult{r}) {
		v, _ := cniStat(r, key, false)
		parts = append(parts, fmt.Sprintf("%s %.1f ms", key, v))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, "; ")
}
