// Command bench measures, side by side on one machine, the k3s-like single
// process (A) against the upstream way (B): etcd and the real
// kube-apiserver, kube-scheduler and kube-controller-manager binaries as
// four processes with the same flags, certificates and port layout. At
// each scale of the workload (-scales: Pods over fake Nodes whose Leases
// the driver keeps fresh) it alternates A B A B … (-pairs), then writes a
// Markdown report with a table per scale and two SVG charts, RSS and CPU
// against Pods. Any run that does not reach ready or leaves a Pod unbound
// fails the whole benchmark, naming the scale and the run.
//
// Run it with `make bench` (BENCH_SCALES, BENCH_PAIRS), which builds the
// binaries first.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/node/proctree"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cisfiles"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/harness"
)

// config is the command line.
type config struct {
	k3sLike, etcd, apiserver, scheduler, kcm string
	pairs                                    int
	scales                                   []scale
	scalesFlag                               string // -scales as given
	out                                      string
	extra                                    string // appended verbatim to the report (go test -bench results)
	featureScales                            []int  // -features: the features benchmark instead, at these node counts
	featuresOut                              string
	profiles                                 string  // keep the heap profiles here
	cpuSplit                                 bool    // a profiled A run per scale, for A's CPU by component
	gctrace                                  bool    // GODEBUG=gctrace=1 in every process of A and B
	aEnv                                     envList // -a-env: more environment for A's process only

	node nodeFlags // -node: the node benchmark instead (node.go)
}

func main() {
	var c config
	flag.StringVar(&c.k3sLike, "k3s-like", "bin/k3s-like", "the k3s-like binary")
	flag.StringVar(&c.etcd, "etcd", "distro/k3s-like/bench/out/etcd", "the etcd binary")
	flag.StringVar(&c.apiserver, "kube-apiserver", "distro/k3s-like/bench/out/kube-apiserver", "")
	flag.StringVar(&c.scheduler, "kube-scheduler", "distro/k3s-like/bench/out/kube-scheduler", "")
	flag.StringVar(&c.kcm, "kube-controller-manager", "distro/k3s-like/bench/out/kube-controller-manager", "")
	flag.IntVar(&c.pairs, "pairs", 3, "A/B pairs per scale, alternated")
	flag.StringVar(&c.scalesFlag, "scales", "150,1500,5000", "the workload's scales, by Pods (comma-separated): 150, 1500 and 5000 are 10, 50 and 100 Nodes; another count N gets max(3, N/50) Nodes")
	flag.StringVar(&c.out, "out", "distro/k3s-like/bench/results/RESULTS.md", "the report; the charts (rss.svg, cpu.svg) are written next to it")
	flag.StringVar(&c.profiles, "profiles", "", "keep every run's heap profiles (after the workload) in this directory")
	flag.BoolVar(&c.cpuSplit, "cpu-split", true, "after each scale's pairs, one more A run under the CPU profiler, for A's CPU by component (not in the A/B figures)")
	flag.BoolVar(&c.gctrace, "gctrace", false, "run every process of A and B with GODEBUG=gctrace=1 (with -profiles, their logs are kept there)")
	flag.StringVar(&c.extra, "extra", "", "a file whose content is appended to the report")
	flag.Var(&c.aEnv, "a-env", "NAME=VALUE added to A's environment only (repeatable; e.g. GOGC=70, a distro's documented option, README \"Memory\"): named in the report, B keeps Go's defaults")
	discoveryDir := flag.String("feature-discovery", "", "run B's feature discovery against the apiserver of this data dir (the driver starts it), instead of a benchmark")
	discoveryAddr := flag.String("feature-discovery-addr", "127.0.0.1:0", "with -feature-discovery: where it serves /metrics and /debug/pprof/heap")
	features := flag.String("features", "", "run the feature discovery benchmark instead, at these node counts (comma-separated, e.g. 500,5000)")
	flag.StringVar(&c.featuresOut, "features-out", "distro/k3s-like/bench/results/FEATURES.md", "the feature discovery benchmark's report")
	addNodeFlags(&c.node)
	flag.Parse()
	var err error
	if c.scales, err = parseScales(c.scalesFlag); err == nil && c.pairs < 1 {
		err = errors.New("-pairs must be at least 1")
	}
	if err == nil && *discoveryDir != "" {
		err = runDiscovery(*discoveryDir, *discoveryAddr)
	} else if err == nil && c.node.pods > 0 {
		err = runNode(c)
	} else if err == nil && *features != "" {
		if c.featureScales, err = parseNodeCounts(*features); err == nil {
			err = runFeatures(c)
		}
	} else if err == nil {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}

// result is one measured run.
type result struct {
	kind     string // A or B
	scale    scale
	pair     int // from 1
	toReady  time.Duration
	workload time.Duration // first Node created → every Pod bound
	// settle: ready → the workload's start (settle); featureRequests: the
	// requests on the feature discovery's objects until then.
	settle          time.Duration
	featureRequests float64
	stop            time.Duration
	// KiB summed over the processes: VmRSS, and RssAnon of it, at ready
	// and once every Pod is bound.
	rssReady, anonReady, rssLoaded, anonLoaded int64
	// utime+stime summed over the processes at ready, when the workload
	// starts and once every Pod is bound; and per process (by binary name)
	// at the last two.
	cpuReady, cpuStart, cpuLoaded time.Duration
	procCPUStart, procCPULoaded   map[string]time.Duration
	procRSSLoaded                 map[string][2]int64      // KiB by process once every Pod is bound: VmRSS, RssAnon
	latency                       histogram                // the workload window's non-long-running requests
	audit                         histogram                // the same from the audit log, 1 ms buckets (auditLatency)
	auditSpans                    []auditSpan              // its requests (read by keepLogs, then dropped)
	mem                           memView                  // once every Pod is bound, read after RSS
	gc                            *gcView                  // the garbage collectors during the workload, under -gctrace
	harnessPhases                 time.Duration            // A: validate + parse + barrier, its hooks left out
	barrierHooks                  time.Duration            // A: the server's barrier hooks
	startAt                       map[string]time.Duration // A: startPhases, from exec
	componentCPU                  map[string]time.Duration // A: the hook's split of the workload's CPU, nil without
	unlabelledCPU                 map[string]time.Duration // A: componentCPU's unlabelled share, by what ran
	workCPU                       map[string]time.Duration // A: componentCPU's samples by kind of work (profshare.Work)
	profiled                      bool                     // an A run under the CPU profiler: not one of the pairs
	otherCPU                      time.Duration            // CPU of the machine's other processes, exec → every Pod bound
}

// p99 is the apiserver's request latency p99 over the workload window, s.
func (r result) p99() float64 { return r.latency.quantile(0.99) }

// env is the environment of A's and B's processes: the driver's, with
// GODEBUG=gctrace=1 under -gctrace.
func (c config) env() []string {
	env := os.Environ()
	if c.gctrace {
		env = append(env, "GODEBUG=gctrace=1")
	}
	return env
}

// envA is A's environment: env and -a-env's.
func (c config) envA() []string { return append(c.env(), c.aEnv...) }

// envList is a repeatable NAME=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	*l = append(*l, v)
	return nil
}

// run measures every scale's pairs, then writes the charts and the report.
func run(c config) error {
	built := provenance(c.k3sLike) // before the runs: the tree may change while they last
	load0 := loadAverage()
	if w := loadWarning(load0); w != "" {
		fmt.Fprintln(os.Stderr, "bench: warning:", w)
	}
	var results []result
	t0 := time.Now()
	for _, s := range c.scales {
		for i := range c.pairs {
			for _, kind := range []string{"A", "B"} {
				fmt.Fprintf(os.Stderr, "bench: %s, pair %d, run %s (%s into the bench)\n", s, i+1, kind, time.Since(t0).Round(time.Second))
				r, err := measure(c, kind, s, false)
				if err != nil {
					return fmt.Errorf("scale %d Pods, pair %d, run %s: %w", s.pods(), i+1, kind, err)
				}
				r.pair = i + 1
				fmt.Fprintf(os.Stderr, "bench: %s ready %s, RSS %d/%d MiB (anon %d/%d), CPU %s/%s, all bound in %s, p99 %.0f ms over %.0f requests, stop %s, other processes %s\n",
					kind, r.toReady.Round(time.Millisecond), r.rssReady/1024, r.rssLoaded/1024, r.anonReady/1024, r.anonLoaded/1024,
					r.cpuReady.Round(10*time.Millisecond), r.cpuLoaded.Round(10*time.Millisecond), r.workload.Round(time.Millisecond),
					1000*r.p99(), r.latency.count(), r.stop.Round(time.Millisecond), r.otherCPU.Round(10*time.Millisecond))
				results = append(results, r)
			}
		}
		if c.cpuSplit {
			// A's CPU by component, from its CPU profiles: a run of its own,
			// since profiling costs CPU and memory the pairs must not carry.
			fmt.Fprintf(os.Stderr, "bench: %s, run A under the CPU profiler (%s into the bench)\n", s, time.Since(t0).Round(time.Second))
			r, err := measure(c, "A", s, true)
			if err != nil {
				return fmt.Errorf("scale %d Pods, the profiled run of A: %w", s.pods(), err)
			}
			r.profiled = true
			results = append(results, r)
		}
	}
	dir := filepath.Dir(c.out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	charts, err := drawCharts(dir, results)
	if err != nil {
		return fmt.Errorf("charts: %w", err)
	}
	report, err := render(c, results, charts, time.Since(t0), load0, built)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Print(report)
	return nil
}

// loadAverage is /proc/loadavg's 1, 5 and 15-minute load averages.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// loadWarning says when the machine is busy before the bench starts (the
// 1-minute load average above half the CPUs); "" otherwise.
func loadWarning(load string) string {
	first, _, _ := strings.Cut(load, " ")
	if l, err := strconv.ParseFloat(first, 64); err == nil && l > float64(runtime.NumCPU())/2 {
		return fmt.Sprintf("load average %.2f on %d CPUs before the bench: the figures will include other processes' contention", l, runtime.NumCPU())
	}
	return ""
}

// ports of one run, all loopback.
type ports struct{ https, etcdClient, etcdPeer, scheduler, kcm, status int }

func freePorts() (ports, error) {
	p, err := testenv.FreePorts(6) // below the ephemeral range
	if err != nil {
		return ports{}, err
	}
	return ports{p[0], p[1], p[2], p[3], p[4], p[5]}, nil
}

// Client QPS and burst of the scheduler and the controller-manager, the
// same in A and B: the defaults (scheduler 50/100, controller-manager
// 20/30) would make the 5,000-Pod scale take minutes of client-side
// throttling (one Pod creation and one binding per Pod, and their events).
const componentQPS, componentBurst = "200", "400"

// serverArgs are the k3s-like flags of a run; B takes its components' flags
// from `--dry-run` of the same, so both run exactly the same flags.
func serverArgs(dir string, p ports) []string {
	return []string{"server",
		"--disable-agent", // the control plane against the upstream binaries: no node in either
		"--data-dir=" + dir,
		"--https-listen-port=" + strconv.Itoa(p.https),
		"--etcd-client-port=" + strconv.Itoa(p.etcdClient),
		"--etcd-peer-port=" + strconv.Itoa(p.etcdPeer),
		"--status-address=127.0.0.1:" + strconv.Itoa(p.status),
		"--enable-pprof", // the per-component CPU split reads its profiles
		"--kube-scheduler-arg=secure-port=" + strconv.Itoa(p.scheduler),
		"--kube-controller-manager-arg=secure-port=" + strconv.Itoa(p.kcm),
		// Leader election on in both, so that "ready" includes both leases.
		"--kube-scheduler-arg=leader-elect=true",
		"--kube-controller-manager-arg=leader-elect=true",
		"--kube-scheduler-arg=kube-api-qps=" + componentQPS,
		"--kube-scheduler-arg=kube-api-burst=" + componentBurst,
		"--kube-controller-manager-arg=kube-api-qps=" + componentQPS,
		"--kube-controller-manager-arg=kube-api-burst=" + componentBurst,
		// Each component's /debug/pprof on, in both (k3s-like turns it off
		// by default): the heap profiles after the workload read them.
		"--kube-apiserver-arg=profiling=true",
		"--kube-scheduler-arg=profiling=true",
		"--kube-controller-manager-arg=profiling=true",
	}
}

// measure runs A or B once at scale s: start, ready, the workload, stop;
// with profile (A only), under the CPU profiler for the workload's CPU by
// component.
func measure(c config, kind string, s scale, profile bool) (result, error) {
	m := &measurement{c: c, r: result{kind: kind, scale: s}, logs: &procLogs{}}
	var err error
	if m.dir, err = os.MkdirTemp("", "kubeharness-bench-"+kind+"-"); err != nil {
		return m.r, err
	}
	defer os.RemoveAll(m.dir)
	if m.p, err = freePorts(); err != nil {
		return m.r, err
	}
	if err := m.launch(); err != nil {
		return m.r, err
	}
	defer killAll(m.procs)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+s.boundTimeout())
	defer cancel()
	if err := m.ready(ctx); err != nil {
		return m.r, err
	}
	if err := m.workload(ctx, profile); err != nil {
		return m.r, err
	}
	if err := m.stop(); err != nil {
		return m.r, err
	}
	err = m.keepLogs() // sets m.r.gc: called before m.r is read
	return m.r, err
}

// measurement is one run of measure, its result filled phase by phase.
type measurement struct {
	c     config
	r     result
	dir   string // the data dir, A's and B's
	p     ports
	procs []*exec.Cmd // in the order they started
	logs  *procLogs
	// start is the exec of the first process; w0 the workload's start.
	start, w0 time.Time
	// machine0 and self0 are the machine's busy CPU time and the
	// driver's own just before the start (r.otherCPU).
	machine0, self0 time.Duration
	client          *kubernetes.Clientset
	restCfg         *rest.Config
}

// runName names the -profiles files of this run.
func (m *measurement) runName() string {
	return fmt.Sprintf("%d-%d-%s", m.r.scale.pods(), m.start.Unix(), m.r.kind)
}

// failed is err, after what, with the last lines of every process's log.
func (m *measurement) failed(what string, err error) error {
	return fmt.Errorf("%s: %w\n--- last log lines ---\n%s", what, err, m.logs.tails(20))
}

// launch starts A's process or B's four, the clock with them.
func (m *measurement) launch() error {
	var args map[string][]string
	if m.r.kind == "B" {
		// B's flags, before the clock starts: a supervisor of B has them
		// in its configuration.
		var err error
		if args, err = upstreamArgs(m.c, m.dir, m.p); err != nil {
			return err
		}
	}
	m.machine0, m.self0 = machineBusy(), selfCPU()
	m.start = time.Now()
	if m.r.kind == "B" {
		procs, err := startUpstream(m.c, args, m.dir, m.p, m.logs)
		if err != nil {
			killAll(procs)
			return fmt.Errorf("%w\n--- last log lines ---\n%s", err, m.logs.tails(20))
		}
		m.procs = procs
		return nil
	}
	cmd := diesWithDriver(exec.Command(m.c.k3sLike, serverArgs(m.dir, m.p)...))
	cmd.Env = m.c.envA()
	cmd.Stdout, cmd.Stderr = m.logs.for_("k3s-like"), m.logs.for_("k3s-like")
	if err := cmd.Start(); err != nil {
		return err
	}
	m.procs = append(m.procs, cmd)
	return nil
}

// diesWithDriver returns cmd, a server process of a run, made to get
// SIGKILL when the driver dies, so that an interrupted or killed bench
// leaves no process to skew the next run or test.
func diesWithDriver(cmd *exec.Cmd) *exec.Cmd {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// ready waits until the control plane is ready (at most 5 minutes), then
// reads RSS and CPU, and A's harness phases.
func (m *measurement) ready(ctx context.Context) error {
	kubeconfig := datadir.PKI(m.dir).AdminKubeconfig() // the server's layout, in A and B
	readyCtx, readyCancel := context.WithTimeout(ctx, 5*time.Minute)
	defer readyCancel()
	err := waitFile(readyCtx, kubeconfig, m.procs)
	if err == nil {
		m.client, m.restCfg, err = adminClient(kubeconfig)
	}
	if err == nil {
		err = waitReady(readyCtx, m.client, m.restCfg, m.p, m.procs)
	}
	if err != nil {
		return m.failed("not ready", err)
	}
	m.r.toReady = time.Since(m.start)
	m.r.rssReady, m.r.anonReady = rss(m.procs)
	m.r.cpuReady = sum(procCPU(m.procs))
	if m.r.kind == "B" { // once ready, as A's harness starts its publisher
		if err := m.startDiscovery(ctx); err != nil {
			return m.failed("B's feature discovery", err)
		}
	}
	if m.r.kind == "A" {
		phCtx, phCancel := context.WithTimeout(ctx, 10*time.Second)
		defer phCancel()
		var err error
		if m.r.harnessPhases, m.r.barrierHooks, m.r.startAt, err = harnessPhases(phCtx, m.p, m.start); err != nil {
			return err
		}
	}
	return nil
}

// workload creates Nodes with fresh Leases and Deployments, waits until
// every Pod is bound, and reads what it cost: RSS, CPU (by component, with
// profile), the apiserver's latency, the memory view.
func (m *measurement) workload(ctx context.Context, profile bool) error {
	before, err := m.settle(ctx)
	if err != nil {
		return m.failed("before the workload", err)
	}
	auditFrom := time.Now()
	pods := watchPods(m.client)
	defer pods.stop()
	var splitCPU func() (components, unlabelled, work map[string]time.Duration, err error)
	if m.r.kind == "A" && profile {
		splitCPU = startComponentCPU("127.0.0.1:" + strconv.Itoa(m.p.status))
	}
	m.r.procCPUStart = procCPU(m.procs)
	m.r.cpuStart = sum(m.r.procCPUStart)
	m.w0 = time.Now()
	s := m.r.scale
	hb, err := createNodes(ctx, m.client, s)
	defer hb.stop()
	if err == nil {
		err = createDeployments(ctx, m.client, s)
	}
	if err == nil {
		err = pods.waitBound(ctx, s, m.procs)
	}
	if err != nil {
		return m.failed("workload", err)
	}
	m.r.workload = time.Since(m.w0)
	m.r.procRSSLoaded = procRSS(m.procs)
	for _, v := range m.r.procRSSLoaded {
		m.r.rssLoaded, m.r.anonLoaded = m.r.rssLoaded+v[0], m.r.anonLoaded+v[1]
	}
	m.r.procCPULoaded = procCPU(m.procs)
	m.r.cpuLoaded = sum(m.r.procCPULoaded)
	m.r.otherCPU = machineBusy() - (selfCPU() - m.self0) - m.r.cpuLoaded - m.machine0
	if splitCPU != nil {
		if m.r.componentCPU, m.r.unlabelledCPU, m.r.workCPU, err = splitCPU(); err != nil {
			return fmt.Errorf("A's CPU per component: %w", err)
		}
	}
	auditTo := time.Now()
	after, err := scrapeLatency(ctx, m.client)
	if err != nil {
		return m.failed("after the workload", err)
	}
	m.r.latency = after.since(before)
	eps, err := memEndpoints(m.r.kind, m.dir, m.p, m.restCfg)
	if err == nil {
		m.r.mem, err = readMemory(eps, m.c.profiles, m.runName())
	}
	if err != nil {
		return m.failed("memory after the workload", err)
	}
	// Read after the memory view: the log backend writes a request's
	// ResponseComplete event just after its response.
	if m.r.audit, m.r.auditSpans, err = auditLatency(datadir.AuditLog(m.dir), auditFrom, auditTo); err != nil {
		return m.failed("the audit log after the workload", err)
	}
	pods.stop()
	if err := hb.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: warning: %s %s: %v\n", s, m.r.kind, err)
	}
	if err := verifyBound(ctx, m.client, s); err != nil {
		return m.failed("after the workload", err)
	}
	return nil
}

// The settling before the workload: no request on the feature discovery's
// objects for settleQuiet, within settleMax.
const (
	settleQuiet = 2 * time.Second
	settleMax   = 2 * time.Minute
)

// settle waits, in A and B alike, until the apiserver has served no
// request on the feature discovery's objects for settleQuiet, so that A's
// first publication, which B has no counterpart of, stays out of the
// workload window. It records how long that took and how many such
// requests there were since exec, and returns the last scrape.
func (m *measurement) settle(ctx context.Context) (histogram, error) {
	start := time.Now()
	last, quiet := -1.0, start
	for {
		h, err := scrapeLatency(ctx, m.client)
		if err != nil {
			return histogram{}, err
		}
		n, now := h.featureRequests(), time.Now()
		if n != last {
			last, quiet = n, now
		}
		if now.Sub(quiet) >= settleQuiet {
			m.r.settle, m.r.featureRequests = now.Sub(start), n
			return h, nil
		}
		if now.Sub(start) > settleMax {
			return histogram{}, fmt.Errorf("requests on Feature objects still coming %s after ready (%.0f so far)", settleMax, n)
		}
		select {
		case <-ctx.Done():
			return histogram{}, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stop stops the processes in reverse order of start, each after the
// previous exited, as a supervisor of B must (an apiserver whose etcd went
// first hangs) and as A's harness does inside the process.
func (m *measurement) stop() error {
	s0 := time.Now()
	for i := len(m.procs) - 1; i >= 0; i-- {
		cmd := m.procs[i]
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return m.failed("stop", fmt.Errorf("%s did not exit within 30 s of SIGTERM", cmd.Path))
		}
	}
	m.r.stop = time.Since(s0)
	return nil
}

// keepLogs reads the garbage collectors' traces of the workload window
// (-gctrace) and keeps every process's log (-profiles).
func (m *measurement) keepLogs() error {
	defer func() { m.r.auditSpans = nil }()
	if m.c.gctrace {
		traces := map[string][]gcCycle{}
		for _, name := range m.logs.names {
			traces[name] = parseGCTrace(m.logs.bufs[name].Bytes())
		}
		v := gcWindow(traces, m.logs.started, m.w0, m.w0.Add(m.r.workload))
		v.marked = markedRequests(m.r.auditSpans, traces, m.logs.started, requestPath[m.r.kind])
		m.r.gc = &v
	}
	if m.c.profiles == "" {
		return nil
	}
	for _, name := range m.logs.names {
		path := filepath.Join(m.c.profiles, m.runName()+"-"+name+".log")
		if err := os.WriteFile(path, m.logs.bufs[name].Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// upstreamArgs are B's components' arguments: k3s-like's --dry-run of the
// same server flags.
func upstreamArgs(c config, dir string, p ports) (map[string][]string, error) {
	out, err := exec.Command(c.k3sLike, append(serverArgs(dir, p), "--dry-run", "--output", "json")...).Output()
	if err != nil {
		return nil, fmt.Errorf("k3s-like --dry-run: %w", err)
	}
	args, err := dryRunArgs(out)
	if err != nil {
		return nil, err
	}
	if err := writePlan(dir, out); err != nil {
		return nil, err
	}
	for _, name := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if len(args[name]) == 0 {
			return nil, fmt.Errorf("no %s arguments in the dry-run output", name)
		}
	}
	return args, nil
}

// startUpstream runs B: the same flags as A's components (args, from
// k3s-like's --dry-run), the same PKI layout (components/pki, as k3s-like
// makes it), etcd with the same ports and certificates.
func startUpstream(c config, args map[string][]string, dir string, p ports, logs *procLogs) ([]*exec.Cmd, error) {
	// The PKI as k3s-like makes it: its layout, and the service IP of the
	// service CIDR its apiserver is given.
	layout := datadir.PKI(dir)
	cidr, _ := kubeargs.Value(args["kube-apiserver"], "service-cluster-ip-range")
	if _, err := controlplane.EnsurePKI(layout, controlplane.Settings{APIServerPort: p.https, ServiceClusterIPRange: cidr}, datadir.AdminKubeconfig(dir)); err != nil {
		return nil, err
	}
	if err := upstreamFiles(dir, args["kube-apiserver"]); err != nil {
		return nil, err
	}
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(p.etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	etcdArgs := []string{
		"--name=default", "--data-dir=" + datadir.Etcd(dir),
		"--listen-client-urls=" + etcdURL, "--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=default=" + peer,
		"--cert-file=" + layout.EtcdServer().CertFile,
		"--key-file=" + layout.EtcdServer().KeyFile,
		"--trusted-ca-file=" + layout.EtcdCA().CertFile,
		"--client-cert-auth", "--log-level=warn",
		// The embedded etcd's election timing (package components/etcd).
		"--heartbeat-interval=" + strconv.Itoa(etcd.TickMs), "--election-timeout=" + strconv.Itoa(etcd.ElectionMs),
		"--enable-pprof", // the heap profile after the workload (A's is its status endpoint's)
	}
	// As a supervisor of four processes does best: etcd and kube-apiserver
	// at once, then kube-scheduler and kube-controller-manager once
	// /readyz answers. The controller-manager exits at once (status 1) when
	// its authentication lookup finds no apiserver; the scheduler survives
	// it, but then takes its lease a retry period (2 s) later than when
	// started after /readyz, which made B's ready 5.2–5.5 s instead of
	// about 3 s.
	var procs []*exec.Cmd
	start := func(bin string, args []string) error {
		cmd := diesWithDriver(exec.Command(bin, args...))
		cmd.Env = c.env()
		w := logs.for_(filepath.Base(bin))
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		return nil
	}
	if err := start(c.etcd, etcdArgs); err != nil {
		return procs, err
	}
	if err := start(c.apiserver, args["kube-apiserver"]); err != nil {
		return procs, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, _, err := adminClient(layout.AdminKubeconfig())
	if err != nil {
		return procs, err
	}
	for {
		if err := exitedEarly(procs); err != nil {
			return procs, err
		}
		var code int
		client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if code == http.StatusOK {
			break
		}
		select {
		case <-ctx.Done():
			return procs, errors.New("kube-apiserver not ready within 2 minutes")
		case <-time.After(25 * time.Millisecond): // as often as A's harness asks (components' readyPoll)
		}
	}
	if err := start(c.scheduler, args["kube-scheduler"]); err != nil {
		return procs, err
	}
	return procs, start(c.kcm, args["kube-controller-manager"])
}

// upstreamFiles writes what A's server writes before its apiserver starts
// and its flags name: the CIS defaults (package cisfiles: the audit policy,
// the Pod Security configuration, the audit log's directory), and for
// --token-auth-file a token file of one random token (A's holds the join
// credentials, which no request of the bench uses).
func upstreamFiles(dir string, apiserverArgs []string) error {
	if err := cisfiles.Write(dir, true); err != nil {
		return err
	}
	path, ok := kubeargs.Value(apiserverArgs, "token-auth-file")
	if !ok {
		return nil
	}
	token := make([]byte, 16)
	if _, err := rand.Read(token); err != nil {
		return err
	}
	line := hex.EncodeToString(token) + ",bench-unused,bench-unused\n" // token,user,uid
	return os.WriteFile(path, []byte(line), 0o600)
}

// dryRunArgs reads each component's arguments from `server --dry-run -o
// json` (the k3s-like DryRunOutput: components with name and args, and the
// plan).
func dryRunArgs(out []byte) (map[string][]string, error) {
	var dry struct {
		Components []struct {
			Name string   `json:"name"`
			Args []string `json:"args"`
		} `json:"components"`
	}
	if err := json.Unmarshal(out, &dry); err != nil {
		return nil, fmt.Errorf("k3s-like --dry-run -o json: %w", err)
	}
	args := map[string][]string{}
	for _, c := range dry.Components {
		args[c.Name] = c.Args
	}
	return args, nil
}

func adminClient(kubeconfig string) (*kubernetes.Clientset, *rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	c, err := kubernetes.NewForConfig(cfg)
	return c, cfg, err
}

func waitFile(ctx context.Context, path string, procs []*exec.Cmd) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if err := exitedEarly(procs); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never appeared", path)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func exitedEarly(procs []*exec.Cmd) error {
	for _, cmd := range procs {
		if cmd.ProcessState != nil {
			return fmt.Errorf("%s exited early: %s", cmd.Path, cmd.ProcessState)
		}
		if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
			return fmt.Errorf("%s is gone: %w", cmd.Path, err)
		}
		if f := proctree.Stat(cmd.Process.Pid); len(f) > 0 && f[0] == "Z" {
			return fmt.Errorf("%s exited early", cmd.Path)
		}
	}
	return nil
}

// waitReady: apiserver /readyz, scheduler and controller-manager /healthz
// (with the admin client certificate), both leases held.
func waitReady(ctx context.Context, c *kubernetes.Clientset, cfg *rest.Config, p ports, procs []*exec.Cmd) error {
	health, err := componentsTLS(cfg)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: health}}
	ok := func(url string) bool {
		resp, err := hc.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	for {
		if err := exitedEarly(procs); err != nil {
			return err
		}
		var code int
		c.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if code == http.StatusOK &&
			ok("https://127.0.0.1:"+strconv.Itoa(p.scheduler)+"/healthz") &&
			ok("https://127.0.0.1:"+strconv.Itoa(p.kcm)+"/healthz") &&
			leaseHeld(ctx, c, "kube-scheduler") && leaseHeld(ctx, c, "kube-controller-manager") {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("not ready within 5 minutes")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func leaseHeld(ctx context.Context, c kubernetes.Interface, name string) bool {
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
}

// startPhases are the moments of A's start the report gives, in order:
// each is the time from exec until it.
var startPhases = []string{"harness starts (process init, PKI, files)", "parse done", "barrier done", "etcd ready", "kube-apiserver ready", "kube-controller-manager ready", "kube-scheduler ready"}

// harnessPhases reads A's status from its /components once every
// component of startPhases is ready there (the bench may see a component
// ready — its /healthz, its lease — a moment before the harness does): the
// validate + parse + barrier time with the barrier's hooks (the server's
// own work: PKI, files, the status listener) left out, the hooks' time,
// and the startPhases as times since exec (start).
func harnessPhases(ctx context.Context, p ports, start time.Time) (d, hooks time.Duration, at map[string]time.Duration, err error) {
	var last error
	if werr := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		d, hooks, at, last = readPhases(p, start)
		return last == nil, nil
	}); werr != nil {
		return 0, 0, nil, errors.Join(werr, last)
	}
	return d, hooks, at, nil
}

func readPhases(p ports, start time.Time) (d, hooks time.Duration, at map[string]time.Duration, err error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.status) + "/components")
	if err != nil {
		return 0, 0, nil, err
	}
	defer resp.Body.Close()
	var st harness.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, 0, nil, err
	}
	at = map[string]time.Duration{}
	for _, ph := range st.Phases {
		switch ph.Phase {
		case harness.PhaseValidate:
			at[startPhases[0]] = ph.Start.Sub(start)
			d += ph.Duration
		case harness.PhaseParse:
			at[startPhases[1]] = ph.Start.Add(ph.Duration).Sub(start)
			d += ph.Duration
		case harness.PhaseBarrier:
			at[startPhases[2]] = ph.Start.Add(ph.Duration).Sub(start)
			d += ph.Duration - ph.Hooks
			hooks += ph.Hooks
		}
	}
	for _, c := range st.Components {
		if c.State == harness.Ready {
			at[c.Name+" ready"] = c.Since.Sub(start)
		}
	}
	if d == 0 {
		return 0, 0, nil, errors.New("no phase timings in /components")
	}
	for _, name := range startPhases {
		if _, ok := at[name]; !ok {
			return 0, 0, nil, fmt.Errorf("/components at ready has no %q", name)
		}
	}
	return d, hooks, at, nil
}

// rss sums VmRSS and RssAnon (KiB) over the processes.
func rss(procs []*exec.Cmd) (total, anon int64) {
	for _, cmd := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			n, _ := strconv.ParseInt(f[1], 10, 64)
			switch f[0] {
			case "VmRSS:":
				total += n
			case "RssAnon:":
				anon += n
			}
		}
	}
	return total, anon
}

// bProcesses are B's processes in the tables, in the order they start.
var bProcesses = []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", discoveryProcess}

// procName names a process in the tables: its binary's name, k3s-like for
// every build of it, discoveryProcess for B's feature discovery.
func procName(cmd *exec.Cmd) string {
	name := filepath.Base(cmd.Path)
	switch {
	case strings.HasPrefix(name, "k3s-like"):
		return "k3s-like"
	case slices.Contains(cmd.Args, "-feature-discovery"):
		return discoveryProcess
	}
	return name
}

// procCPU is each process's user+system time, by procName.
func procCPU(procs []*exec.Cmd) map[string]time.Duration {
	m := map[string]time.Duration{}
	for _, cmd := range procs {
		m[procName(cmd)] += statCPU(proctree.Stat(cmd.Process.Pid))
	}
	return m
}

// procRSS is each process's VmRSS and RssAnon (KiB), by procName.
func procRSS(procs []*exec.Cmd) map[string][2]int64 {
	m := map[string][2]int64{}
	for _, cmd := range procs {
		total, anon := rss([]*exec.Cmd{cmd})
		name := procName(cmd)
		m[name] = [2]int64{m[name][0] + total, m[name][1] + anon}
	}
	return m
}

// sum adds up procCPU's figures.
func sum(m map[string]time.Duration) time.Duration {
	var d time.Duration
	for _, v := range m {
		d += v
	}
	return d
}

// statCPU is utime+stime from a /proc/PID/stat's fields (proctree.Stat).
func statCPU(f []string) time.Duration {
	if len(f) <= 12 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // USER_HZ
}

// selfCPU is the driver's own user+system time.
func selfCPU() time.Duration { return statCPU(proctree.Stat(os.Getpid())) }

// machineBusy is the CPU time the whole machine spent busy since boot
// (/proc/stat: user, nice, system, irq, softirq, steal).
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

func killAll(procs []*exec.Cmd) {
	for _, cmd := range procs {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

// procLogs keeps each process's output apart, for the failure message.
type procLogs struct {
	names   []string
	bufs    map[string]*bytes.Buffer
	started map[string]time.Time // when for_ was first called: right before the process started
}

func (l *procLogs) for_(name string) io.Writer {
	if l.bufs == nil {
		l.bufs = map[string]*bytes.Buffer{}
	}
	if l.bufs[name] == nil {
		l.bufs[name] = &bytes.Buffer{}
		l.names = append(l.names, name)
		if l.started == nil {
			l.started = map[string]time.Time{}
		}
		l.started[name] = time.Now()
	}
	return l.bufs[name]
}

func (l *procLogs) tails(n int) string {
	var sb strings.Builder
	for _, name := range l.names {
		fmt.Fprintf(&sb, "--- %s ---\n%s\n", name, testenv.Tail(l.bufs[name].String(), n))
	}
	return sb.String()
}
