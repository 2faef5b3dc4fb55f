package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// gcCycle is one line of GODEBUG=gctrace=1: when it started (since the
// process started), how long its concurrent mark took, the heap when it
// started, when it ended and what it found live, and the goal it set.
type gcCycle struct {
	at                     time.Duration
	mark                   time.Duration
	start, end, live, goal float64 // MB as gctrace prints them (10^6 bytes)
	forced                 bool
}

// gcLine is gctrace's line: "gc N @Ts P%: a+b+c ms clock, … , X->Y->Z MB,
// G MB goal, …" (b is the concurrent mark's wall time).
var gcLine = regexp.MustCompile(`^gc \d+ @([0-9.]+)s \d+%: [0-9.]+\+([0-9.]+)\+[0-9.]+ ms clock, .* ([0-9]+)->([0-9]+)->([0-9]+) MB, ([0-9]+) MB goal`)

// parseGCTrace reads the gctrace lines of a process's output; other lines
// are skipped.
func parseGCTrace(out []byte) []gcCycle {
	var cycles []gcCycle
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := gcLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		cycles = append(cycles, gcCycle{
			at:     time.Duration(f(1) * float64(time.Second)),
			mark:   time.Duration(f(2) * float64(time.Millisecond)),
			start:  f(3),
			end:    f(4),
			live:   f(5),
			goal:   f(6),
			forced: strings.HasSuffix(line, "(forced)"),
		})
	}
	return cycles
}

// gcView is what a run's processes' garbage collectors did during the
// workload (first Node → every Pod bound), summed over the processes.
type gcView struct {
	cycles int           // GC cycles that started in the window, forced ones left out
	mark   time.Duration // their concurrent marks' wall time, added up
	// grown is how much the heaps grew while those cycles ran (end − start,
	// added up): what was allocated during the marks, all of it counted
	// live by the cycle that was marking.
	grown float64
	// live and goal are the last cycle's before the window ended, added up
	// over the processes: the heap it found live and the goal it set.
	live, goal float64
	// marked is the audit log's requests by whether a concurrent mark of
	// a process on their path (requestPath) overlapped them.
	marked markedView
}

// markedView splits a run's audit-log requests by whether a GC mark of a
// process on their path ran while they did: how many did, and the p99 (s)
// of those that did and of those that did not.
type markedView struct {
	share, p99In, p99Out float64
}

// requestPath is, by side, the processes a request to the apiserver runs
// in: A's one, B's apiserver and etcd.
var requestPath = map[string][]string{"A": {"k3s-like"}, "B": {"kube-apiserver", "etcd"}}

// markedRequests is markedView of spans, from the traces of the processes
// in path and when each started. A mark spans from its cycle's start
// (gctrace's @, from the process's start) for its concurrent mark's wall
// time; the first stop-the-world phase, under a millisecond, is left out.
func markedRequests(spans []auditSpan, traces map[string][]gcCycle, started map[string]time.Time, path []string) markedView {
	type mark struct{ from, to time.Time }
	var marks []mark
	for _, name := range path {
		for _, c := range traces[name] {
			from := started[name].Add(c.at)
			marks = append(marks, mark{from, from.Add(c.mark)})
		}
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].from.Before(marks[j].from) })
	var in, out []float64
	for _, sp := range spans {
		// The marks that started before sp ended: does one end after it began?
		n := sort.Search(len(marks), func(i int) bool { return !marks[i].from.Before(sp.to) })
		overlap := false
		for _, mk := range marks[:n] {
			if mk.to.After(sp.from) {
				overlap = true
				break
			}
		}
		took := sp.to.Sub(sp.from).Seconds()
		if overlap {
			in = append(in, took)
		} else {
			out = append(out, took)
		}
	}
	v := markedView{share: math.NaN(), p99In: exactQuantile(in, 0.99), p99Out: exactQuantile(out, 0.99)}
	if n := len(in) + len(out); n > 0 {
		v.share = float64(len(in)) / float64(n)
	}
	return v
}

// exactQuantile is the q-th of xs (nearest rank), NaN for none; it sorts xs.
func exactQuantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	return xs[min(len(xs)-1, int(math.Ceil(q*float64(len(xs))))-1)]
}

// gcWindow sums the cycles of each process (its gctrace and when it was
// started) that started within [from, to].
func gcWindow(procs map[string][]gcCycle, started map[string]time.Time, from, to time.Time) gcView {
	var v gcView
	for name, cycles := range procs {
		var last *gcCycle
		for i := range cycles {
			c := &cycles[i]
			at := started[name].Add(c.at)
			if at.After(to) {
				break
			}
			if c.forced {
				continue
			}
			last = c
			if at.Before(from) {
				continue
			}
			v.cycles++
			v.mark += c.mark
			v.grown += c.end - c.start
		}
		if last != nil {
			v.live += last.live
			v.goal += last.goal
		}
	}
	return v
}

// renderGC writes a scale's garbage-collector section, when the runs
// traced it.
func renderGC(sb *strings.Builder, s scaleRuns) {
	if len(s.a) == 0 || s.a[0].gc == nil || len(s.b) == 0 || s.b[0].gc == nil {
		return
	}
	rows := []struct {
		name, unit string
		get        func(gcView) float64
	}{
		{"GC cycles", "", func(v gcView) float64 { return float64(v.cycles) }},
		{"concurrent mark, wall time added up", "s", func(v gcView) float64 { return v.mark.Seconds() }},
		{"concurrent mark, mean per cycle", "ms", func(v gcView) float64 {
			if v.cycles == 0 {
				return 0
			}
			return 1000 * v.mark.Seconds() / float64(v.cycles)
		}},
		{"heap growth during the marks, added up", "MB", func(v gcView) float64 { return v.grown }},
		{"live heap found by the last cycle before the end", "MB", func(v gcView) float64 { return v.live }},
		{"heap goal it set", "MB", func(v gcView) float64 { return v.goal }},
		{"requests (audit log) a mark of a process on their path overlapped", "%", func(v gcView) float64 { return 100 * v.marked.share }},
		{"their p99", "ms", func(v gcView) float64 { return 1000 * v.marked.p99In }},
		{"p99 of the others", "ms", func(v gcView) float64 { return 1000 * v.marked.p99Out }},
	}
	fmt.Fprintf(sb, "\nThe garbage collectors during the workload (`GODEBUG=gctrace=1` in every process of both; forced cycles left out; B summed over its processes; medians). The requests the marks overlapped: each of the audit log's requests (every kind) whose time from received to complete overlapped a concurrent mark of A's process, or of B's apiserver or etcd:\n\n| | A | B | A/B |\n|---|---|---|---|\n")
	for _, row := range rows {
		get := func(r result) float64 {
			if r.gc == nil {
				return math.NaN()
			}
			return row.get(*r.gc)
		}
		f := figure{row.name, row.unit, get}
		fmt.Fprintf(sb, "| %s | %s | %s | %s |\n", row.name, span(values(s.a, get), row.unit), span(values(s.b, get), row.unit), ratio(med(s.pairRatios(f))))
	}
}
