package main

import (
	"debug/buildinfo"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
)

// figure is one measured quantity of a run, with how the report prints it.
type figure struct {
	name string
	unit string
	get  func(result) float64
}

// figures are the per-run quantities of the tables, in their order.
var figures = []figure{
	{"time to ready", "s", func(r result) float64 { return r.toReady.Seconds() }},
	{"RSS at ready", "MiB", func(r result) float64 { return float64(r.rssReady) / 1024 }},
	{"RSS anon at ready", "MiB", func(r result) float64 { return float64(r.anonReady) / 1024 }},
	{"RSS after workload", "MiB", func(r result) float64 { return float64(r.rssLoaded) / 1024 }},
	{"RSS anon after workload", "MiB", func(r result) float64 { return float64(r.anonLoaded) / 1024 }},
	{"CPU exec → ready", "s", func(r result) float64 { return r.cpuReady.Seconds() }},
	{"CPU workload", "s", func(r result) float64 { return (r.cpuLoaded - r.cpuStart).Seconds() }},
	{"CPU total (exec → all bound)", "s", func(r result) float64 { return r.cpuLoaded.Seconds() }},
	{"ready → workload start (settled)", "s", func(r result) float64 { return r.settle.Seconds() }},
	{"feature discovery requests before the workload", "", func(r result) float64 { return r.featureRequests }},
	{"workload (first Node → all Pods bound)", "s", func(r result) float64 { return r.workload.Seconds() }},
	{p99All, "ms", func(r result) float64 { return 1000 * r.p99() }},
	{"SIGTERM → exit", "s", func(r result) float64 { return r.stop.Seconds() }},
}

// The apiserver p99 figures: over every request, and over the request
// kinds both A and B made (scaleRuns.figures).
const (
	p99All  = "apiserver p99 (non-long-running)"
	p99Same = "apiserver p99 (request kinds both make)"
	// p99Audit is p99Same from the audit logs, in 1 ms buckets
	// (auditLatency) instead of latencyMetric's 50 ms ones.
	p99Audit = "apiserver p99, audit log (request kinds both make)"
)

// mix is the request kinds of the scale's pairs (requestMix of A's and B's
// workload windows).
func (s scaleRuns) mix() (both map[string]bool, onlyA, onlyB []string) {
	return s.mixOf(func(r result) histogram { return r.latency })
}

// mixOf is mix over the histogram of each run that get picks.
func (s scaleRuns) mixOf(get func(result) histogram) (both map[string]bool, onlyA, onlyB []string) {
	of := func(rs []result) []histogram {
		out := make([]histogram, len(rs))
		for i, r := range rs {
			out[i] = get(r)
		}
		return out
	}
	return requestMix(of(s.a), of(s.b))
}

// figures are the package's figures with, after the p99 over every
// request, the p99 over the request kinds both sides of this scale made:
// the same set of kinds in every run of A and B.
func (s scaleRuns) figures() []figure {
	both, _, _ := s.mix()
	same := figure{p99Same, "ms", func(r result) float64 { return 1000 * r.latency.only(both).quantile(0.99) }}
	bothAudit, _, _ := s.mixOf(func(r result) histogram { return r.audit })
	audit := figure{p99Audit, "ms", func(r result) float64 { return 1000 * r.audit.only(bothAudit).quantile(0.99) }}
	out := make([]figure, 0, len(figures)+2)
	for _, f := range figures {
		out = append(out, f)
		if f.name == p99All {
			out = append(out, same, audit)
		}
	}
	return out
}

// scaleRuns are one scale's runs, A's and B's in pair order.
type scaleRuns struct {
	scale      scale
	a, b, prof []result // prof: A under the CPU profiler, not in the pairs
}

// byScale groups the results by scale, in the order they ran.
func byScale(rs []result) []scaleRuns {
	var out []scaleRuns
	for _, r := range rs {
		i := slices.IndexFunc(out, func(s scaleRuns) bool { return s.scale == r.scale })
		if i < 0 {
			out = append(out, scaleRuns{scale: r.scale})
			i = len(out) - 1
		}
		if r.profiled {
			out[i].prof = append(out[i].prof, r)
		} else if r.kind == "A" {
			out[i].a = append(out[i].a, r)
		} else {
			out[i].b = append(out[i].b, r)
		}
	}
	return out
}

// pairRatios are A/B of one figure, pair by pair.
func (s scaleRuns) pairRatios(f figure) []float64 {
	var out []float64
	for i := range min(len(s.a), len(s.b)) {
		out = append(out, f.get(s.a[i])/f.get(s.b[i]))
	}
	return out
}

// render writes the report: machine, commit, the charts, a summary of the
// A/B ratios by scale, then per scale a table of medians and min–max for A
// and B, the ratios pair by pair, the CPU per process (and per component
// of A, when the hook gives it), the targets; then the harness overhead
// and the go test -bench results.
func render(c config, rs []result, charts []string, took time.Duration, load0, built string) (string, error) {
	scales := byScale(rs)
	var sb strings.Builder
	fmt.Fprintf(&sb, "# make bench — one process (A) against four (B), by scale\n\n")
	fmt.Fprintf(&sb, "- commit: %s\n", built)
	fmt.Fprintf(&sb, "- machine: %d CPUs (nproc), %s, %s/%s, %s\n", runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(&sb, "- date: %s; the runs took %s\n", time.Now().UTC().Format(time.RFC3339), took.Round(time.Second))
	fmt.Fprintf(&sb, "- A: `bin/k3s-like server` (embedded etcd, the three components as goroutines). B: `etcd` + `kube-apiserver` + `kube-scheduler` + `kube-controller-manager` as four processes, built from the same k8s.io/kubernetes and go.etcd.io/etcd versions, and, once B is ready (when A's harness starts its feature publisher), a fifth, `%s`: A's feature discovery (the publisher and the summarizer of package featurepub, with A's plan from its `--dry-run` and A's field managers, as A's own feature publisher user, bound to the same ClusterRole) against B's apiserver, so that both publish the same Features; with the flags A's `--dry-run` prints (taken before B's clock starts), the same PKI layout and the same loopback ports layout. Leader election on in both; the scheduler's and the controller-manager's client QPS/burst raised to %s/%s in both (`--kube-api-qps`, `--kube-api-burst`; the defaults, 50/100 and 20/30, throttle the larger scales for minutes).\n", discoveryProcess, componentQPS, componentBurst)
	var names []string
	for _, s := range scales {
		names = append(names, s.scale.String())
	}
	fmt.Fprintf(&sb, "- scales: %s; at each, A B alternated × %d. The workload: the Nodes (Ready; no kubelet: the driver renews each Node's Lease in `kube-node-lease` every %s, as a kubelet does, so that the node lifecycle controller never marks one NotReady), then the Deployments, until every Pod is bound. It starts once the run has settled: after ready, the driver waits, in A and B alike, until the apiserver has served no request on the feature discovery's objects (Features, NodeFeatureReports, FeatureProfiles) for %s, so that the first publication (A's, and B's feature discovery's) stays out of the workload window; the tables give that wait and those requests.\n", strings.Join(names, "; "), c.pairs, leaseRenew, settleQuiet)
	fmt.Fprintf(&sb, "- ready = apiserver `/readyz` 200, scheduler and controller-manager `/healthz` 200, both leases held; time from exec. RSS = VmRSS summed over the processes, anon = RssAnon of it (`/proc/PID/status`, KiB → MiB). CPU = utime+stime summed over the processes: exec → ready, the workload (first Node created → every Pod bound), and exec → every Pod bound. apiserver p99 = the 99th percentile of `apiserver_request_duration_seconds` from the apiserver's own `/metrics`, WATCH, WATCHLIST and CONNECT left out, from the cumulative buckets scraped before and after the workload (the difference), interpolated as `histogram_quantile` does; the p99 of the request kinds both make, the same over only the kinds of request (verb, resource/subresource) that A and B both made in the window, so that both sides' p99 covers the same requests (each scale lists the mix side by side and what it leaves out). Its buckets are 50 ms wide around the p99 (0.05–0.1 s), so the interpolation cannot tell two p99s 10 %% apart there; the audit log's p99 is the same over the kinds both make in the audit logs (every request at Metadata level on both sides): each request's time from its RequestReceived timestamp to its ResponseComplete one, received in the workload window, watches and exec/attach/port-forward/proxy left out, in 1 ms buckets. Stop = SIGTERM to each process in reverse start order, each after the previous exited → all exited (A: one process). B starts etcd and kube-apiserver at once, then kube-scheduler and kube-controller-manager once `/readyz` answers, as a supervisor of four processes does best: the controller-manager exits at once (status 1) when its authentication lookup finds no apiserver, and a scheduler started with the apiserver survives but takes its lease a retry period (2 s) later. A's harness starts the scheduler and the controller-manager while the apiserver starts too, holding each of their requests until it is ready. etcd runs with the embedded etcd's election timing in both (`--heartbeat-interval=%d --election-timeout=%d`, package components/etcd).\n", etcd.TickMs, etcd.ElectionMs)
	fmt.Fprintf(&sb, "- A/B: pair by pair, and the median of the pairs' ratios. The driver's flags: `-scales %s -pairs %d` (make bench's BENCH_SCALES, BENCH_PAIRS).\n", c.scalesFlag, c.pairs)
	if len(c.aEnv) > 0 {
		fmt.Fprintf(&sb, "- **A's environment adds `%s`** (`-a-env`: a runtime setting a distro may choose, README \"Memory\"); B's processes run with Go's defaults.\n", c.aEnv.String())
	}
	sb.WriteString(sharedNote(rs, load0))
	sb.WriteString("\n")

	for _, ch := range charts {
		fmt.Fprintf(&sb, "![%s](%s)\n", strings.TrimSuffix(ch, ".svg"), ch)
	}
	fmt.Fprintf(&sb, "\nThe charts: medians of each scale's runs, whiskers from the lowest to the highest run; RSS after the workload (total solid, anonymous dashed); CPU from exec until every Pod is bound.\n\n")

	// Summary: A/B by scale.
	fmt.Fprintf(&sb, "## A/B by scale (median of the pairs)\n\n| figure |")
	for _, s := range scales {
		fmt.Fprintf(&sb, " %d Pods |", s.scale.pods())
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(scales)) + "\n")
	if len(scales) > 0 {
		for i, f := range scales[0].figures() {
			fmt.Fprintf(&sb, "| %s |", f.name)
			for _, s := range scales {
				fmt.Fprintf(&sb, " %s |", ratio(med(s.pairRatios(s.figures()[i]))))
			}
			sb.WriteString("\n")
		}
	}

	for _, s := range scales {
		renderScale(&sb, s)
	}

	renderStartPhases(&sb, scales)

	fmt.Fprintf(&sb, "\n## Harness overhead in A\n\nvalidate + parse + barrier, from the harness's own phase timings in `/components`, against the time to ready; the barrier's AfterBarrier hooks, the server's own work on a fresh data dir (logging the plan, the PKI, the CIS files, the status listener), are left out and given apart:\n\n| run | harness phases | the server's barrier hooks | time to ready | fraction |\n|---|---|---|---|---|\n")
	var fr []float64
	for _, r := range rs {
		if r.kind != "A" || r.profiled {
			continue
		}
		f := r.harnessPhases.Seconds() / r.toReady.Seconds()
		fr = append(fr, f)
		fmt.Fprintf(&sb, "| %d Pods, A%d | %s | %s | %s | %.3f%% |\n", r.scale.pods(), r.pair, r.harnessPhases.Round(time.Microsecond), r.barrierHooks.Round(time.Microsecond), r.toReady.Round(time.Millisecond), 100*f)
	}
	fmt.Fprintf(&sb, "\nHarness overhead < 1%% of time to ready: **%.3f%% (median) — %s**.\n", 100*med(fr), met(med(fr) < 0.01))

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

// renderDiscoveryShare writes what B's feature discovery process holds once
// every Pod is bound, and the memory ratios with it left out of B.
func renderDiscoveryShare(sb *strings.Builder, s scaleRuns) {
	of := func(i int) func(r result) float64 {
		return func(r result) float64 { return float64(r.procRSSLoaded[discoveryProcess][i]) / 1024 }
	}
	if len(s.b) == 0 || med(values(s.b, of(0))) == 0 {
		return
	}
	without := func(name string, all func(result) float64, i int) figure {
		return figure{name: name, get: func(r result) float64 {
			if r.kind == "B" {
				return all(r) - of(i)(r)
			}
			return all(r)
		}}
	}
	rss := without("RSS", func(r result) float64 { return float64(r.rssLoaded) / 1024 }, 0)
	anon := without("anon", func(r result) float64 { return float64(r.anonLoaded) / 1024 }, 1)
	fmt.Fprintf(sb, "\nB's `%s` process once every Pod is bound, median (min–max): RSS %s, anon %s. A/B with it left out of B (the four upstream processes only), median of the pairs: RSS after the workload %s, RSS anon after the workload %s.\n",
		discoveryProcess, span(values(s.b, of(0)), "MiB"), span(values(s.b, of(1)), "MiB"), ratio(med(s.pairRatios(rss))), ratio(med(s.pairRatios(anon))))
}

// renderScale writes one scale's section.
func renderScale(sb *strings.Builder, s scaleRuns) {
	fmt.Fprintf(sb, "\n## %s\n\n", s.scale)
	figures := s.figures()
	fmt.Fprintf(sb, "| figure | A median (min–max) | B median (min–max) | A/B |\n|---|---|---|---|\n")
	for _, f := range figures {
		fmt.Fprintf(sb, "| %s | %s | %s | %s |\n", f.name, span(values(s.a, f.get), f.unit), span(values(s.b, f.get), f.unit), ratio(med(s.pairRatios(f))))
	}
	other := func(r result) float64 { return r.otherCPU.Seconds() }
	fmt.Fprintf(sb, "\nThe machine's other processes used, exec → all bound, median (min–max): during A's runs %s, during B's %s of CPU.\n", span(values(s.a, other), "s"), span(values(s.b, other), "s"))
	count := func(r result) float64 { return r.latency.count() }
	fmt.Fprintf(sb, "\napiserver requests in the workload window (non-long-running), median (min–max): A %s, B %s.\n", span(values(s.a, count), ""), span(values(s.b, count), ""))
	renderDiscoveryShare(sb, s)
	renderRequestKinds(sb, s)
	renderAuditTail(sb, s)

	fmt.Fprintf(sb, "\nA/B pair by pair:\n\n| pair |")
	for _, f := range figures {
		fmt.Fprintf(sb, " %s |", f.name)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(figures)) + "\n")
	for i := range min(len(s.a), len(s.b)) {
		fmt.Fprintf(sb, "| %d |", i+1)
		for _, f := range figures {
			fmt.Fprintf(sb, " %s |", ratio(f.get(s.a[i])/f.get(s.b[i])))
		}
		sb.WriteString("\n")
	}
	sb.WriteString("| **median** |")
	for _, f := range figures {
		fmt.Fprintf(sb, " **%s** |", ratio(med(s.pairRatios(f))))
	}
	sb.WriteString("\n")

	renderCPUSplit(sb, s)
	renderMemory(sb, s)
	renderGC(sb, s)

	renderTargets(sb, s)
}

// targets are issue 47's, A/B medians of the pairs at every scale.
var targets = []struct {
	figure string
	limit  float64
}{
	{"time to ready", 0.90},
	{"RSS after workload", 1.00},
	{"RSS anon after workload", 1.00},
	{"CPU workload", 1.00},
	{"CPU total (exec → all bound)", 1.00},
	{p99Same, 1.10},
}

// renderTargets writes each target with the scale's median ratio and
// whether it is met.
func renderTargets(sb *strings.Builder, s scaleRuns) {
	byName := map[string]figure{}
	for _, f := range s.figures() {
		byName[f.name] = f
	}
	var parts []string
	for _, t := range targets {
		r := med(s.pairRatios(byName[t.figure]))
		parts = append(parts, fmt.Sprintf("%s ≤ %.2f×: **%s× — %s**", t.figure, t.limit, ratio(r), met(r <= t.limit)))
	}
	fmt.Fprintf(sb, "\nTargets (issue 47, medians of the pairs): %s.\n", strings.Join(parts, "; "))
}

// renderRequestKinds writes the request mix of the workload window side
// by side, every kind with A's and B's median count, the most made first,
// and which kinds the p99 of the kinds both make leaves out.
func renderRequestKinds(sb *strings.Builder, s scaleRuns) {
	both, onlyA, onlyB := s.mix()
	type row struct {
		kind string
		a, b float64
	}
	var rows []row
	for _, kinds := range [][]string{slices.Collect(maps.Keys(both)), onlyA, onlyB} {
		for _, k := range kinds {
			get := func(r result) float64 { return r.latency.kinds[k] }
			rows = append(rows, row{k, med(values(s.a, get)), med(values(s.b, get))})
		}
	}
	if len(rows) == 0 {
		return
	}
	sort.Slice(rows, func(i, j int) bool {
		if si, sj := rows[i].a+rows[i].b, rows[j].a+rows[j].b; si != sj {
			return si > sj
		}
		return rows[i].kind < rows[j].kind
	})
	side := func(k string) string {
		switch {
		case slices.Contains(onlyA, k):
			return "A only"
		case slices.Contains(onlyB, k):
			return "B only"
		}
		return ""
	}
	sum := func(runs []result, kinds []string) float64 {
		return med(values(runs, func(r result) float64 {
			n := 0.0
			for _, k := range kinds {
				n += r.latency.kinds[k]
			}
			return n
		}))
	}
	fmt.Fprintf(sb, "\nThe request mix in the workload window, side by side (verb, resource/subresource; medians of the runs). %s = the p99 over the kinds both A and B made (in at least one run each), the same kinds on both sides; it leaves out %d kinds only A made (%.0f requests, median), %d only B made (%.0f):\n\n| request | A | B | |\n|---|---|---|---|\n",
		p99Same, len(onlyA), sum(s.a, onlyA), len(onlyB), sum(s.b, onlyB))
	for _, r := range rows {
		fmt.Fprintf(sb, "| `%s` | %.0f | %.0f | %s |\n", r.kind, r.a, r.b, side(r.kind))
	}
}

// renderCPUSplit writes the workload window's CPU by process of B, beside
// A's whole process and, when the scale has a profiled A run (s.prof), A's
// CPU by component from it, with its unlabelled share by what ran.
func renderCPUSplit(sb *strings.Builder, s scaleRuns) {
	window := func(r result, name string) float64 { return (r.procCPULoaded[name] - r.procCPUStart[name]).Seconds() }
	workload := func(r result) float64 { return (r.cpuLoaded - r.cpuStart).Seconds() }
	procs := bProcesses
	comps := map[string]bool{}
	for _, r := range s.prof {
		for name := range r.componentCPU {
			comps[name] = true
		}
	}
	split := len(comps) > 0
	bTotal := med(values(s.b, workload))
	aTotal := med(values(s.a, workload))
	fmt.Fprintf(sb, "\nCPU seconds of the workload (first Node → every Pod bound): B by process (medians of the pairs)")
	if split {
		fmt.Fprintf(sb, ", A by component (pprof label `component` of the status endpoint's CPU profiles, taken in %d more run(s) of A, not in the pairs: profiling costs CPU and memory)", len(s.prof))
	}
	fmt.Fprintf(sb, ".\n\n| process / component | B | B share |")
	if split {
		sb.WriteString(" A | A share |")
	}
	sb.WriteString("\n|---|---|---|" + map[bool]string{true: "---|---|", false: ""}[split] + "\n")
	names := slices.Clone(procs)
	for name := range comps {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	sort.SliceStable(names[len(procs):], func(i, j int) bool { return names[len(procs)+i] < names[len(procs)+j] })
	var aSplitTotal float64
	if split {
		aSplitTotal = med(values(s.prof, func(r result) float64 { return sum(r.componentCPU).Seconds() }))
	}
	for _, name := range names {
		label := name
		if label == "" {
			label = "(unlabelled)"
		}
		fmt.Fprintf(sb, "| %s |", label)
		if slices.Contains(procs, name) {
			b := med(values(s.b, func(r result) float64 { return window(r, name) }))
			fmt.Fprintf(sb, " %.2f s | %.0f%% |", b, 100*b/bTotal)
		} else {
			sb.WriteString(" – | – |")
		}
		if split {
			a := med(values(s.prof, func(r result) float64 { return r.componentCPU[name].Seconds() }))
			fmt.Fprintf(sb, " %.2f s | %.0f%% |", a, 100*a/aSplitTotal)
		}
		sb.WriteString("\n")
	}
	fmt.Fprintf(sb, "| **all** | **%.2f s** | 100%% |", bTotal)
	if split {
		fmt.Fprintf(sb, " **%.2f s** | 100%% |", aSplitTotal)
	}
	fmt.Fprintf(sb, "\n\nA, the whole process over the same window: %.2f s in the pairs (%s× B)", aTotal, ratio(aTotal/bTotal))
	if !split {
		sb.WriteString(".\n")
		return
	}
	fmt.Fprintf(sb, ", %.2f s in the profiled run(s).\n", med(values(s.prof, workload)))
	kinds := map[string]bool{}
	for _, r := range s.prof {
		for k := range r.unlabelledCPU {
			kinds[k] = true
		}
	}
	var ks []string
	for k := range kinds {
		ks = append(ks, k)
	}
	get := func(k string) float64 {
		return med(values(s.prof, func(r result) float64 { return r.unlabelledCPU[k].Seconds() }))
	}
	sort.Slice(ks, func(i, j int) bool { return get(ks[i]) > get(ks[j]) })
	fmt.Fprintf(sb, "\nA's unlabelled CPU by what ran (the root frame of each sample: the GC's and the runtime's own work, which B's processes pay inside their own figures, or the package whose goroutine, started outside every component, ran):\n\n| unlabelled | A | share of A |\n|---|---|---|\n")
	for _, k := range ks {
		fmt.Fprintf(sb, "| %s | %.2f s | %.1f%% |\n", k, get(k), 100*get(k)/aSplitTotal)
	}
	renderWorkSplit(sb, s.prof, aSplitTotal)
}

// renderWorkSplit writes the profiled A runs' CPU by kind of work
// (profshare.Work), the transport's (TLS, HTTP/2, other HTTP, socket I/O)
// added up: what in-process connections could spare (issue 47).
func renderWorkSplit(sb *strings.Builder, prof []result, total float64) {
	get := func(k string) float64 {
		return med(values(prof, func(r result) float64 { return r.workCPU[k].Seconds() }))
	}
	kinds := []string{profshare.WorkTLS, profshare.WorkHTTP2, profshare.WorkHTTP, profshare.WorkSocket, profshare.WorkEncoding, profshare.WorkGC, profshare.WorkOther}
	var transport float64
	for _, k := range kinds[:4] {
		transport += get(k)
	}
	fmt.Fprintf(sb, "\nA's CPU by kind of work, every sample (the innermost frame of its stack that names a kind: crypto/, net/http's HTTP/2, other net/http, socket reads and writes, encoding and decoding, the GC's workers and assists):\n\n| kind of work | A | share of A |\n|---|---|---|\n")
	for _, k := range kinds {
		fmt.Fprintf(sb, "| %s | %.2f s | %.1f%% |\n", k, get(k), 100*get(k)/total)
	}
	fmt.Fprintf(sb, "| **transport (the first four)** | **%.2f s** | **%.1f%%** |\n", transport, 100*transport/total)
}

// sharedNote says how much CPU the machine's other processes used during
// the runs (the machine's busy time less the measured processes' and the
// driver's), so that a run on a shared machine says so.
func sharedNote(rs []result, load0 string) string {
	var total, span time.Duration
	var worst float64
	for _, r := range rs {
		if r.profiled {
			continue
		}
		total += max(0, r.otherCPU)
		d := r.toReady + r.workload
		span += d
		worst = max(worst, r.otherCPU.Seconds()/d.Seconds())
	}
	avg := total.Seconds() / span.Seconds() // CPUs busy with others, on average
	load := fmt.Sprintf("; load average (1, 5, 15 min) before the runs %s, after %s", load0, loadAverage())
	if avg < 0.1 && worst < 0.25 {
		return fmt.Sprintf("- the machine: other processes used %.2f CPUs on average during the runs (exec → all bound; at most %.2f in one run): not shared to speak of%s.\n", avg, worst, load)
	}
	return fmt.Sprintf("- **the machine was shared**: other processes (other engineers' builds and tests) used %.2f of the %d CPUs on average during the runs (exec → all bound), %.2f in the busiest run%s. A and B alternate, so both met it, but not equally (each scale's table gives the other processes' CPU during A's and B's runs): absolute figures (times, CPU, p99) are noisier than the ratios. Under contention the kernel shares the CPUs by thread: A runs Go code on at most GOMAXPROCS (%d) threads in one process, B on up to 4 × %d in four, so B likely gets the larger share, and A's times (ready, workload, p99) suffer more than B's.\n", avg, runtime.NumCPU(), worst, load, runtime.NumCPU(), runtime.NumCPU())
}

// provenance says which kubeharness commit the k3s-like binary was built
// from (its Go build info: vcs.revision, vcs.modified), and when the tree
// was modified, which files `git status` lists now (before the runs); git
// rev-parse HEAD when the binary carries no VCS information.
func provenance(k3sLike string) string {
	var rev string
	modified := false
	if bi, err := buildinfo.ReadFile(k3sLike); err == nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	// The report and charts themselves (rewritten by every run) do not make the tree dirty.
	dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=normal", "--", ".", ":!bench/RESULTS.md", ":!bench/*.svg").Output()
	if rev == "" {
		head, _ := exec.Command("git", "rev-parse", "HEAD").Output()
		return fmt.Sprintf("`%s` (HEAD; k3s-like carries no VCS information)%s", strings.TrimSpace(string(head)), uncommitted(string(dirty)))
	}
	if !modified {
		return fmt.Sprintf("`%s` (k3s-like's build info: built from a clean tree)", rev)
	}
	return fmt.Sprintf("`%s` (k3s-like's build info)%s", rev, uncommitted(string(dirty)))
}

// uncommitted names the files `git status --porcelain` lists, if any: the
// binaries were built from the working tree.
func uncommitted(porcelain string) string {
	var files []string
	for line := range strings.Lines(porcelain) {
		if len(line) > 3 {
			files = append(files, "`"+strings.TrimSpace(line[3:])+"`")
		}
	}
	if len(files) == 0 {
		return ""
	}
	if len(files) > 12 {
		files = append(files[:12], fmt.Sprintf("and %d more", len(files)-12))
	}
	return " with uncommitted changes in the working tree: " + strings.Join(files, ", ")
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
		return math.NaN()
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func span(xs []float64, unit string) string {
	if len(xs) == 0 {
		return "–"
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if unit == "" {
		return fmt.Sprintf("%.0f (%.0f–%.0f)", med(xs), lo, hi)
	}
	return fmt.Sprintf("%.2f %s (%.2f–%.2f)", med(xs), unit, lo, hi)
}

func ratio(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
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

// renderStartPhases writes A's time to ready by phase, from exec, over
// every A run of every scale (the start does not depend on the scale).
func renderStartPhases(sb *strings.Builder, scales []scaleRuns) {
	var as []result
	for _, s := range scales {
		as = append(as, s.a...)
	}
	if len(as) == 0 || as[0].startAt == nil {
		return
	}
	fmt.Fprintf(sb, "\n## A's time to ready by phase\n\nFrom exec, every A run of every scale (%d runs), from the harness's phase timings and each component's ready time in `/components`; the last row is the bench's ready (both leases held):\n\n| moment | from exec, median (min–max) |\n|---|---|\n", len(as))
	for _, name := range startPhases {
		fmt.Fprintf(sb, "| %s | %s |\n", name, span(values(as, func(r result) float64 { return r.startAt[name].Seconds() }), "s"))
	}
	fmt.Fprintf(sb, "| ready (the bench's: both leases held) | %s |\n", span(values(as, func(r result) float64 { return r.toReady.Seconds() }), "s"))
}

// renderAuditTail writes, from the audit logs, the request kinds both
// sides made that hold the p99 tail: for each, the median count of its
// requests slower than the run's own p99Audit, its own p99, on A and B;
// the kinds with most of the tail first, up to auditTailKinds.
func renderAuditTail(sb *strings.Builder, s scaleRuns) {
	both, _, _ := s.mixOf(func(r result) histogram { return r.audit })
	if len(both) == 0 {
		return
	}
	// Each run's p99 over those kinds, once: every kind's count is above it.
	p99s := func(rs []result) []float64 {
		return values(rs, func(r result) float64 { return r.audit.only(both).quantile(0.99) })
	}
	p99A, p99B := p99s(s.a), p99s(s.b)
	slower := func(rs []result, p99 []float64, kind string) float64 {
		n := make([]float64, len(rs))
		for i, r := range rs {
			n[i] = r.audit.above(kind, p99[i])
		}
		return med(n)
	}
	type row struct {
		kind                     string
		tailA, tailB, p99A, p99B float64
	}
	var rows []row
	for k := range both {
		p99 := func(r result) float64 { return 1000 * r.audit.only(map[string]bool{k: true}).quantile(0.99) }
		rows = append(rows, row{k, slower(s.a, p99A, k), slower(s.b, p99B, k), med(values(s.a, p99)), med(values(s.b, p99))})
	}
	sort.Slice(rows, func(i, j int) bool {
		if si, sj := rows[i].tailA+rows[i].tailB, rows[j].tailA+rows[j].tailB; si != sj {
			return si > sj
		}
		return rows[i].kind < rows[j].kind
	})
	fmt.Fprintf(sb, "\nWhat holds the tail of %s: the kinds with the most requests slower than their run's p99 (medians of the runs), with each kind's own p99 from the audit log:\n\n| request (audit log) | A slower than p99 | B slower than p99 | A p99 (ms) | B p99 (ms) |\n|---|---|---|---|---|\n", p99Audit)
	for _, r := range rows[:min(len(rows), auditTailKinds)] {
		fmt.Fprintf(sb, "| `%s` | %.0f | %.0f | %.1f | %.1f |\n", r.kind, r.tailA, r.tailB, r.p99A, r.p99B)
	}
}

// auditTailKinds bounds renderAuditTail's table.
const auditTailKinds = 12
