package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"
)

// render writes the report: machine, commit, a table of medians and
// min–max for A and B, the A/B ratios pair by pair, the harness overhead,
// the targets, and the go test -bench results.
func render(c config, rs []result) (string, error) {
	var a, b []result
	for _, r := range rs {
		if r.kind == "A" {
			a = append(a, r)
		} else {
			b = append(b, r)
		}
	}
	var sb strings.Builder
	commit, _ := exec.Command("git", "rev-parse", "HEAD").Output()
	// The report itself (rewritten by every run) does not make the tree dirty.
	dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/RESULTS.md").Output()
	fmt.Fprintf(&sb, "# make bench — one process (A) against four (B)\n\n")
	fmt.Fprintf(&sb, "- commit: `%s`%s\n", strings.TrimSpace(string(commit)), map[bool]string{true: " (with uncommitted changes)", false: ""}[len(dirty) > 0])
	fmt.Fprintf(&sb, "- machine: %d CPUs (nproc), %s, %s/%s, %s\n", runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&sb, "- date: %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&sb, "- A: `bin/k3s-like server` (embedded etcd, the three components as goroutines). B: `etcd` + `kube-apiserver` + `kube-scheduler` + `kube-controller-manager` as four processes, built from the same k8s.io/kubernetes and go.etcd.io/etcd versions, with the flags A's `--dry-run` prints, the same PKI layout and the same loopback ports layout. Leader election on in both.\n")
	fmt.Fprintf(&sb, "- runs alternated A B × %d; workload: %d Nodes, %d Deployments × %d replicas, every Pod bound.\n", c.pairs, c.nodes, c.deployments, c.replicas)
	fmt.Fprintf(&sb, "- ready = apiserver `/readyz` 200, scheduler and controller-manager `/healthz` 200, both leases held; time from exec. RSS = VmRSS summed over the processes (KiB → MiB). CPU = utime+stime summed, at the end of the workload. Stop = SIGTERM to each process in reverse start order, each after the previous exited → all exited (A: one process). B starts etcd and kube-apiserver, then kube-scheduler and kube-controller-manager once `/readyz` answers (upstream's exit at once when the apiserver is not up yet), as a supervisor of four processes must; A's harness orders its components the same way inside the process.\n\n")

	fmt.Fprintf(&sb, "| figure | A median (min–max) | B median (min–max) | A/B (median) |\n|---|---|---|---|\n")
	row := func(name string, get func(result) float64, unit string) {
		av, bv := values(a, get), values(b, get)
		fmt.Fprintf(&sb, "| %s | %s | %s | %.2f |\n", name, span(av, unit), span(bv, unit), med(av)/med(bv))
	}
	row("time to ready", func(r result) float64 { return r.toReady.Seconds() }, "s")
	row("RSS at ready", func(r result) float64 { return float64(r.rssReady) / 1024 }, "MiB")
	row("RSS after workload", func(r result) float64 { return float64(r.rssLoaded) / 1024 }, "MiB")
	row("CPU seconds (start + workload)", func(r result) float64 { return r.cpu.Seconds() }, "s")
	row("workload (create → all Pods bound)", func(r result) float64 { return r.workload.Seconds() }, "s")
	row("SIGTERM to exit", func(r result) float64 { return r.stop.Seconds() }, "s")

	fmt.Fprintf(&sb, "\nA/B pair by pair (ready time, RSS at ready, RSS after workload, CPU, stop):\n\n| pair | ready | RSS ready | RSS loaded | CPU | stop |\n|---|---|---|---|---|---|\n")
	for i := range min(len(a), len(b)) {
		fmt.Fprintf(&sb, "| %d | %.2f | %.2f | %.2f | %.2f | %.2f |\n", i+1,
			a[i].toReady.Seconds()/b[i].toReady.Seconds(),
			float64(a[i].rssReady)/float64(b[i].rssReady),
			float64(a[i].rssLoaded)/float64(b[i].rssLoaded),
			a[i].cpu.Seconds()/b[i].cpu.Seconds(),
			a[i].stop.Seconds()/b[i].stop.Seconds())
	}

	fmt.Fprintf(&sb, "\nHarness overhead in A (validate + parse + barrier + apply, from the harness's own phase timings in `/components`):\n\n| run | harness phases | time to ready | fraction |\n|---|---|---|---|\n")
	var fr []float64
	for i, r := range a {
		f := r.harnessPhases.Seconds() / r.toReady.Seconds()
		fr = append(fr, f)
		fmt.Fprintf(&sb, "| A%d | %s | %s | %.3f%% |\n", i+1, r.harnessPhases.Round(time.Microsecond), r.toReady.Round(time.Millisecond), 100*f)
	}

	rssRatio := med(values(a, func(r result) float64 { return float64(r.rssReady) })) / med(values(b, func(r result) float64 { return float64(r.rssReady) }))
	readyRatio := med(values(a, func(r result) float64 { return r.toReady.Seconds() })) / med(values(b, func(r result) float64 { return r.toReady.Seconds() }))
	stopA := med(values(a, func(r result) float64 { return r.stop.Seconds() }))
	fmt.Fprintf(&sb, "\nTargets: RSS at ready ≤ 0.6× of B: **%.2f× — %s**; time to ready ≤ 1.0× of B: **%.2f× — %s**; harness overhead < 1%% of time to ready: **%.3f%% (median) — %s**; SIGTERM to exit ≤ 5 s: **%.2f s (median A) — %s**.\n",
		rssRatio, met(rssRatio <= 0.6), readyRatio, met(readyRatio <= 1.0), 100*med(fr), met(med(fr) < 0.01), stopA, met(stopA <= 5))

	if c.extra != "" {
		b, err := os.ReadFile(c.extra)
		if err != nil {
			return "", err
		}
		sb.WriteString("\n")
		sb.Write(b)
	}
	return sb.String(), nil
}

func values(rs []result, get func(result) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = get(r)
	}
	return out
}

func med(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func span(xs []float64, unit string) string {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return fmt.Sprintf("%.2f %s (%.2f–%.2f)", med(xs), unit, lo, hi)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			return f[1] + " kB memory"
		}
	}
	return "memory unknown"
}
