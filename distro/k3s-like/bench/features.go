package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/scoping"
)

// The features benchmark (-features): the real k3s-like server, N Node
// objects, and N light fake nodes that speak the reporters' protocol
// (featurepub.BuildNodeReport and NodeReport.Send, the code a node runs)
// with the admin credential. 10 % of the nodes run one gate off that the
// others run on; half run a "v1.36.3" kubelet whose profile lacks three
// gates.

// featureRun is one scale's figures.
type featureRun struct {
	nodes                                   int
	featureBytes, reportBytes, profileBytes int // the largest object of each kind, as JSON
	profiles                                int
	firstStart, steady, restart, upgrade    phase
	steadyWindow                            time.Duration
	visible                                 time.Duration // one node's gate change to kubectl get feature
	disagreeing                             string        // the Feature's sample, as kubectl shows it
	nodesEnabled                            string
}

// phase is what one phase cost: its wall time until the Features showed
// it, the writes and reads to the group's resources, the summarizer's
// Feature applies among them, and the process's CPU by component.
type phase struct {
	took          time.Duration
	writes, reads float64
	applies       float64
	byVerb        map[string]float64 // writes by "VERB resource code"
	cpu           map[string]time.Duration
}

func (p phase) writesPerSecond() float64 { return p.writes / p.took.Seconds() }

// fakeFleet are the fake nodes' plans and names.
type fakeFleet struct {
	names   []string
	reports []featurepub.NodeReport
}

// fleetPlans derives the fakes' plans from the server's: gate on in 90 %
// (SET-BY kubelet=true) and off in 10 %, half of each at v1.36.3 without
// the three gates dropped; extra, if not "", is on (SET-BY kubelet=true)
// in every node.
func fleetReports(base *scoping.Plan, n int, gate, extra string, dropped []string) (fakeFleet, error) {
	var fl fakeFleet
	for i := range n {
		name := fmt.Sprintf("fake-node-%05d", i)
		on := i%10 != 9
		old := i%2 == 1
		p := *base
		p.Components = []string{names.Kubelet, names.KubeProxy}
		p.Features = nil
		if old {
			p.BinaryVersion = "v1.36.3"
		}
		for _, f := range base.Features {
			if old && slices.Contains(dropped, f.Name) {
				continue
			}
			f.Requests, f.Source = nil, scoping.SourceDefault
			f.Enabled = f.Default
			switch {
			case f.Name == gate:
				f.Enabled = on
				if on {
					f.Source, f.Requests = scoping.SourceFlag, []scoping.Request{{Component: names.Kubelet, Value: "true", Flag: "--feature-gates=" + gate + "=true"}}
				}
			case f.Name == extra:
				f.Enabled = true
				f.Source, f.Requests = scoping.SourceFlag, []scoping.Request{{Component: names.Kubelet, Value: "true", Flag: "--feature-gates=" + extra + "=true"}}
			}
			p.Features = append(p.Features, f)
		}
		r, err := featurepub.BuildNodeReport(&p, name)
		if err != nil {
			return fl, err
		}
		fl.names = append(fl.names, name)
		fl.reports = append(fl.reports, r)
	}
	return fl, nil
}

// sendAll sends the reports of fl, workers at a time, each with its
// Node's owner reference.
func sendAll(ctx context.Context, dyn dynamic.Interface, fl fakeFleet, uids map[string]string, which []int) error {
	const workers = 64
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		first error
		mu    sync.Mutex
	)
	if which == nil {
		which = make([]int, len(fl.names))
		for i := range which {
			which[i] = i
		}
	}
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(which) {
					return
				}
				i := which[k]
				owner := featurepub.NodeOwner(fl.names[i], types.UID(uids[fl.names[i]]))
				var err error
				for attempt := 0; attempt < 5; attempt++ { // a conflict: read again
					if _, err = fl.reports[i].Send(ctx, dyn, owner); err == nil {
						break
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// createBareNodes creates n Nodes named as the fleet's, workers at a time,
// and returns their UIDs.
func createBareNodes(ctx context.Context, c kubernetes.Interface, fl fakeFleet) (map[string]string, error) {
	uids := make(map[string]string, len(fl.names))
	var mu sync.Mutex
	var next atomic.Int64
	var wg sync.WaitGroup
	var first error
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(fl.names) {
					return
				}
				n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fl.names[i]}}, metav1.CreateOptions{})
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					uids[n.Name] = string(n.UID)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return uids, first
}

// groupRequests sums apiserver_request_total of features.kubeharness.io
// from /metrics: writes (POST, PUT, PATCH, APPLY, DELETE), reads (GET,
// LIST, WATCH) and the applies to features.
func groupRequests(ctx context.Context, c kubernetes.Interface) (writes, reads, applies float64, byVerb map[string]float64, err error) {
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, 0, nil, err
	}
	byVerb = map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `group="`+featuresv1alpha1.GroupName+`"`) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, perr := strconv.ParseFloat(line[i+1:], 64)
		if perr != nil {
			continue
		}
		verb := label(line, "verb")
		switch verb {
		case "POST", "PUT", "PATCH", "APPLY", "DELETE":
			writes += v
			byVerb[verb+" "+label(line, "resource")+" "+label(line, "code")] += v
			if verb == "APPLY" && label(line, "resource") == "features" {
				applies += v
			}
		case "GET", "LIST", "WATCH":
			reads += v
		}
	}
	return writes, reads, applies, byVerb, sc.Err()
}

// label is the value of name in a Prometheus text line's labels.
func label(line, name string) string {
	_, after, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// measurePhase runs f and then waits until done reports true, and returns
// the phase's figures.
func measurePhase(ctx context.Context, c kubernetes.Interface, statusAddr string, f func() error, done func() (bool, error)) (phase, error) {
	var ph phase
	w0, r0, a0, v0, err := groupRequests(ctx, c)
	if err != nil {
		return ph, err
	}
	stopCPU := startComponentCPU(statusAddr)
	start := time.Now()
	err = f()
	for err == nil {
		var ok bool
		if ok, err = done(); ok || err != nil {
			break
		}
		if time.Since(start) > 5*time.Minute {
			err = errors.New("not converged within 5 minutes")
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	ph.took = time.Since(start)
	cpu, _, _, cerr := stopCPU()
	if err == nil {
		err = cerr
	}
	ph.cpu = cpu
	w1, r1, a1, v1, merr := groupRequests(ctx, c)
	if err == nil {
		err = merr
	}
	ph.writes, ph.reads, ph.applies = w1-w0, r1-r0, a1-a0
	ph.byVerb = map[string]float64{}
	for k, v := range v1 {
		if d := v - v0[k]; d > 0 {
			ph.byVerb[k] = d
		}
	}
	return ph, err
}

// featureStatus is the summarizer's fields of the Feature of gate.
func featureStatus(ctx context.Context, dyn dynamic.Interface, gate string) (nodesEnabled, disagreeing string, err error) {
	u, err := dyn.Resource(featuresv1alpha1.Resource).Get(ctx, featurepub.ObjectName(gate), metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	nodesEnabled, _, _ = unstructured.NestedString(u.Object, "status", "nodesEnabled")
	disagreeing, _, _ = unstructured.NestedString(u.Object, "status", "disagreeing")
	return nodesEnabled, disagreeing, nil
}

// largest is the size of the largest object of res, as JSON.
func largest(ctx context.Context, dyn dynamic.Interface, res schema.GroupVersionResource) (size, count int, err error) {
	list, err := dyn.Resource(res).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, 0, err
	}
	for _, item := range list.Items {
		b, err := json.Marshal(item.Object)
		if err != nil {
			return 0, 0, err
		}
		size = max(size, len(b))
	}
	return size, len(list.Items), nil
}

// measureFeatures runs one scale: the server, n Nodes and their fakes,
// phase by phase.
func measureFeatures(c config, n int) (featureRun, error) {
	f := &featureScale{c: c, n: n, r: featureRun{nodes: n, steadyWindow: 60 * time.Second}, logs: &procLogs{}}
	dir, err := os.MkdirTemp("", "kubeharness-bench-features-")
	if err != nil {
		return f.r, err
	}
	defer os.RemoveAll(dir)
	p, err := freePorts()
	if err != nil {
		return f.r, err
	}
	f.statusAddr = "127.0.0.1:" + strconv.Itoa(p.status)
	f.cmd = exec.Command(c.k3sLike, serverArgs(dir, p)...)
	f.cmd.Stdout, f.cmd.Stderr = f.logs.for_("k3s-like"), f.logs.for_("k3s-like")
	if err := f.cmd.Start(); err != nil {
		return f.r, err
	}
	defer killAll([]*exec.Cmd{f.cmd})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := f.ready(ctx, dir, p); err != nil {
		return f.r, err
	}
	for _, phase := range []func(context.Context) error{f.startAndRestart, f.oneNodeChanges, f.upgrade, f.sizes, f.stop} {
		if err := phase(ctx); err != nil {
			return f.r, err
		}
	}
	return f.r, nil
}

// featureScale is one run of measureFeatures, its result filled phase by
// phase.
type featureScale struct {
	c          config
	n          int
	r          featureRun
	cmd        *exec.Cmd // the server
	logs       *procLogs
	statusAddr string
	client     *kubernetes.Clientset
	dyn        dynamic.Interface
	plan       *scoping.Plan
	// gate is the kubelet gate the fleet reports, on in 9 nodes of 10;
	// extra the one an upgrade turns on; dropped the plan's gates a fake
	// node leaves out.
	gate, extra string
	dropped     []string
	fl          fakeFleet
	uids        map[string]string // the Nodes' UIDs, by name
}

// failed is err, after what, with the last lines of the server's log.
func (f *featureScale) failed(what string, err error) error {
	return fmt.Errorf("%d nodes: %s: %w\n--- last log lines ---\n%s", f.n, what, err, f.logs.tails(20))
}

// converged reports whether the gate's Feature says want nodes enabled.
func (f *featureScale) converged(ctx context.Context, want string) func() (bool, error) {
	return func() (bool, error) {
		ne, _, err := featureStatus(ctx, f.dyn, f.gate)
		return err == nil && ne == want, nil
	}
}

// wantOn is NODES of the gate's Feature once every node reported: on of n.
func (f *featureScale) wantOn(on int) string { return fmt.Sprintf("%d/%d", on, f.n) }

// ready waits for the server and its Features, picks the gates, and
// creates the n Nodes.
func (f *featureScale) ready(ctx context.Context, dir string, p ports) error {
	kubeconfig := datadir.PKI(dir).AdminKubeconfig()
	procs := []*exec.Cmd{f.cmd}
	if err := waitFile(ctx, kubeconfig, procs); err != nil {
		return f.failed("start", err)
	}
	client, cfg, err := adminClient(kubeconfig)
	if err != nil {
		return err
	}
	f.client = client
	if err := waitReady(ctx, client, cfg, p, procs); err != nil {
		return f.failed("ready", err)
	}
	cfg.QPS, cfg.Burst = 2000, 4000 // n nodes, each its own client: no client-side throttling
	if f.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	if f.plan, err = serverPlan(f.statusAddr); err != nil {
		return f.failed("plan", err)
	}
	if f.gate, f.extra, f.dropped, err = pickGates(f.plan); err != nil {
		return err
	}
	// The Features published and summarized before the nodes come.
	if err := waitUntil(ctx, 2*time.Minute, func() (bool, error) {
		ne, _, err := featureStatus(ctx, f.dyn, f.gate)
		return err == nil && ne == "" && summarized(ctx, f.dyn, f.gate), nil
	}); err != nil {
		return f.failed("Features summarized", err)
	}
	if f.fl, err = fleetReports(f.plan, f.n, f.gate, "", f.dropped); err != nil {
		return err
	}
	if f.uids, err = createBareNodes(ctx, f.client, f.fl); err != nil {
		return f.failed("Nodes", err)
	}
	return nil
}

// startAndRestart measures every node's first start at once, the steady
// state, and every node's restart at once with the same gates.
func (f *featureScale) startAndRestart(ctx context.Context) error {
	want := f.wantOn(f.n - f.n/10)
	everyNode := func() error { return sendAll(ctx, f.dyn, f.fl, f.uids, nil) }
	var err error
	if f.r.firstStart, err = measurePhase(ctx, f.client, f.statusAddr, everyNode, f.converged(ctx, want)); err != nil {
		return f.failed("first start", err)
	}
	// Let the last summarizer rounds of the start finish: steady state
	// begins after 5 s without a write (at most a minute).
	if err := quiet(ctx, f.client, 5*time.Second, time.Minute); err != nil {
		return f.failed("settling", err)
	}
	// Steady state: every node reads its report again every 10 minutes
	// (±50 %); over the window, a window/10 min share of them.
	share := int(float64(f.n) * f.r.steadyWindow.Seconds() / 600)
	if f.r.steady, err = measurePhase(ctx, f.client, f.statusAddr, func() error {
		tick := f.r.steadyWindow / time.Duration(max(share, 1))
		for i := range share {
			if err := sendAll(ctx, f.dyn, f.fl, f.uids, []int{(i * 7919) % f.n}); err != nil {
				return err
			}
			time.Sleep(tick)
		}
		return nil
	}, func() (bool, error) { return true, nil }); err != nil {
		return f.failed("steady state", err)
	}
	if f.r.restart, err = measurePhase(ctx, f.client, f.statusAddr, everyNode, f.converged(ctx, want)); err != nil {
		return f.failed("restart", err)
	}
	return nil
}

// flip is the node whose gate changes (i%10 == 9: off until then).
func (f *featureScale) flip() int { return f.n - 1 }

// oneNodeChanges turns the gate on in one node: how long until kubectl get
// feature shows it.
func (f *featureScale) oneNodeChanges(ctx context.Context) error {
	flip := f.flip()
	oneOn, err := onePlanOn(f.plan, f.gate, "", f.fl.names[flip], flip%2 == 1, f.dropped)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := sendAll(ctx, f.dyn, fakeFleet{names: f.fl.names[flip : flip+1], reports: []featurepub.NodeReport{oneOn}}, f.uids, nil); err != nil {
		return f.failed("one node's change", err)
	}
	if err := waitUntil(ctx, 5*time.Minute, f.converged(ctx, f.wantOn(f.n-f.n/10+1))); err != nil {
		return f.failed("one node's change visible", err)
	}
	f.r.visible = time.Since(t0)
	return nil
}

// upgrade restarts every node at once with one more gate on.
func (f *featureScale) upgrade(ctx context.Context) error {
	up, err := fleetReports(f.plan, f.n, f.gate, f.extra, f.dropped)
	if err != nil {
		return err
	}
	flip := f.flip()
	if up.reports[flip], err = onePlanOn(f.plan, f.gate, f.extra, f.fl.names[flip], flip%2 == 1, f.dropped); err != nil { // its gate stays on
		return err
	}
	wantExtra := f.wantOn(f.n)
	if f.r.upgrade, err = measurePhase(ctx, f.client, f.statusAddr, func() error { return sendAll(ctx, f.dyn, up, f.uids, nil) }, func() (bool, error) {
		ne, _, err := featureStatus(ctx, f.dyn, f.extra)
		return err == nil && ne == wantExtra, nil
	}); err != nil {
		return f.failed("upgrade", err)
	}
	return nil
}

// sizes reads the gate's Feature at the end, and the largest object of
// each kind.
func (f *featureScale) sizes(ctx context.Context) error {
	var err error
	if f.r.nodesEnabled, f.r.disagreeing, err = featureStatus(ctx, f.dyn, f.gate); err != nil {
		return err
	}
	if f.r.featureBytes, _, err = largest(ctx, f.dyn, featuresv1alpha1.Resource); err != nil {
		return err
	}
	if f.r.reportBytes, _, err = largest(ctx, f.dyn, featuresv1alpha1.NodeFeatureReportResource); err != nil {
		return err
	}
	f.r.profileBytes, f.r.profiles, err = largest(ctx, f.dyn, featuresv1alpha1.FeatureProfileResource)
	return err
}

// stop stops the server: SIGTERM, at most 60 s.
func (f *featureScale) stop(context.Context) error {
	_ = f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- f.cmd.Wait() }()
	select {
	case <-done:
		return nil
	case <-time.After(60 * time.Second):
		return f.failed("stop", errors.New("did not exit within 60 s of SIGTERM"))
	}
}

// onePlanOn is the report of the node named name with gate on (and extra,
// if not "").
func onePlanOn(base *scoping.Plan, gate, extra, name string, old bool, dropped []string) (featurepub.NodeReport, error) {
	fl, err := fleetReports(base, 2, gate, extra, dropped) // fake-node-00000: on, fake-node-00001: on and old
	if err != nil {
		return featurepub.NodeReport{}, err
	}
	r := fl.reports[0]
	if old {
		r = fl.reports[1]
	}
	r.Report = r.Report.DeepCopy()
	r.Report.Name = name
	return r, nil
}

// summarized reports whether the Feature of gate has the summarizer's
// fields.
func summarized(ctx context.Context, dyn dynamic.Interface, gate string) bool {
	u, err := dyn.Resource(featuresv1alpha1.Resource).Get(ctx, featurepub.ObjectName(gate), metav1.GetOptions{})
	if err != nil {
		return false
	}
	v, _, _ := unstructured.NestedString(u.Object, "status", "clusterEnabled")
	return v != ""
}

func waitUntil(ctx context.Context, timeout time.Duration, ok func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		done, err := ok()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// serverPlan is the server's plan from its status endpoint.
func serverPlan(statusAddr string) (*scoping.Plan, error) {
	resp, err := http.Get("http://" + statusAddr + "/features")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var plan scoping.Plan
	if err := json.NewDecoder(resp.Body).Decode(&plan); err != nil {
		return nil, err
	}
	return &plan, nil
}

// pickGates: the disagreeing gate is testenv.KubeletGate (alpha, off by
// default); the upgrade's is the first other alpha gate off by default;
// the three "v1.36.3 lacks" are the last three alpha gates by name.
func pickGates(plan *scoping.Plan) (gate, extra string, dropped []string, err error) {
	gate = testenv.KubeletGate
	var alpha []string
	for _, f := range plan.Features {
		if f.Stage == "Alpha" && !f.Default && !f.LockedToDefault && f.Name != gate && !strings.HasPrefix(f.Name, "All") {
			alpha = append(alpha, f.Name)
		}
	}
	slices.Sort(alpha)
	if len(alpha) < 4 {
		return "", "", nil, fmt.Errorf("the plan has %d alpha gates off by default; 4 needed", len(alpha))
	}
	return gate, alpha[0], alpha[len(alpha)-3:], nil
}

// runFeatures runs every scale of c.featureScales and writes the report to
// c.featuresOut.
func runFeatures(c config) error {
	built := provenance(c.k3sLike)
	load0 := loadAverage()
	var runs []featureRun
	t0 := time.Now()
	for _, n := range c.featureScales {
		fmt.Fprintf(os.Stderr, "bench: features at %d nodes (%s into the bench)\n", n, time.Since(t0).Round(time.Second))
		r, err := measureFeatures(c, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: %d nodes: largest Feature %d B, steady %.2f writes/s, first start %s (%.0f writes), restart %s (%.0f writes), visible in %s\n",
			n, r.featureBytes, r.steady.writesPerSecond(), r.firstStart.took.Round(time.Millisecond), r.firstStart.writes,
			r.restart.took.Round(time.Millisecond), r.restart.writes, r.visible.Round(time.Millisecond))
		runs = append(runs, r)
	}
	report := renderFeatures(runs, time.Since(t0), load0, built)
	return os.WriteFile(c.featuresOut, []byte(report), 0o644)
}

// renderFeatures is the Markdown report of the runs.
func renderFeatures(runs []featureRun, took time.Duration, load0, built string) string {
	var sb strings.Builder
	sb.WriteString("# Feature discovery at scale: node reports against the real k3s-like server\n\n")
	fmt.Fprintf(&sb, "`make bench-features` (%s), %s, %s; load average before: %s. One run per scale, %s in all.\n\n",
		"distro/k3s-like/bench -features", built, memTotal(), load0, took.Round(time.Second))
	sb.WriteString("Each scale starts `k3s-like server --disable-agent` on loopback, creates N Node objects, and runs N fake nodes that speak the reporters' protocol (`featurepub.BuildNodeReport`, `NodeReport.Send`: the code each node runs) with the admin credential. " +
		"10 % of the nodes run `" + testenv.KubeletGate + "` off, the others on (SET-BY kubelet=true); half run a \"v1.36.3\" kubelet whose profile lacks three gates. " +
		"Writes and reads are the apiserver's `apiserver_request_total` of group features.kubeharness.io over each phase; CPU is the process's, by component (pprof labels), over the phase. " +
		"A phase lasts until `kubectl get feature` shows its outcome.\n\n")
	sb.WriteString("| | " + joinRuns(runs, func(r featureRun) string { return strconv.Itoa(r.nodes) + " nodes" }) + "\n")
	sb.WriteString("|---|" + strings.Repeat("---|", len(runs)) + "\n")
	row := func(name string, f func(featureRun) string) {
		sb.WriteString("| " + name + " | " + joinRuns(runs, f) + "\n")
	}
	kib := func(b int) string { return fmt.Sprintf("%.1f KiB", float64(b)/1024) }
	row("largest Feature object (limit 64 KiB; etcd's request limit 1.5 MiB)", func(r featureRun) string {
		return kib(r.featureBytes) + " " + met(r.featureBytes <= 64<<10)
	})
	row("largest NodeFeatureReport", func(r featureRun) string { return kib(r.reportBytes) })
	row("FeatureProfiles (largest)", func(r featureRun) string { return fmt.Sprintf("%d (%s)", r.profiles, kib(r.profileBytes)) })
	row("the disagreeing gate: NODES, DISAGREEING", func(r featureRun) string { return "`" + r.nodesEnabled + "`, `" + r.disagreeing + "`" })
	steady := func(r featureRun) string {
		w := r.steady.writes / r.steady.took.Seconds()
		return fmt.Sprintf("%.2f writes/s (%.0f), %.1f reads/s over %s %s", w, r.steady.writes, r.steady.reads/r.steady.took.Seconds(), r.steady.took.Round(time.Second), met(w <= 1))
	}
	row("steady state (each node re-reads every 10 min)", steady)
	ph := func(p phase) string {
		var verbs []string
		for _, k := range slices.Sorted(maps.Keys(p.byVerb)) {
			verbs = append(verbs, fmt.Sprintf("%s %.0f", k, p.byVerb[k]))
		}
		return fmt.Sprintf("%s: %.0f writes (%s), %.0f/s; %.0f reads; apiserver CPU %s, summarizer %s",
			p.took.Round(100*time.Millisecond), p.writes, strings.Join(verbs, ", "), p.writes/p.took.Seconds(), p.reads,
			p.cpu[names.APIServer].Round(10*time.Millisecond), p.cpu[featurepub.SummarizerName].Round(10*time.Millisecond))
	}
	row("every node starts for the first time, at once", func(r featureRun) string { return ph(r.firstStart) })
	row("every node restarts at once, same gates", func(r featureRun) string { return ph(r.restart) })
	row("every node restarts at once with one more gate on", func(r featureRun) string { return ph(r.upgrade) })
	row("one node's gate change until `kubectl get feature` shows it (limit 60 s)", func(r featureRun) string {
		return r.visible.Round(10*time.Millisecond).String() + " " + met(r.visible <= 60*time.Second)
	})
	return sb.String()
}

func joinRuns(runs []featureRun, f func(featureRun) string) string {
	var parts []string
	for _, r := range runs {
		parts = append(parts, f(r)+" |")
	}
	return strings.Join(parts, " ")
}

// parseNodeCounts parses -features: positive node counts, comma-separated.
func parseNodeCounts(spec string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 10 {
			return nil, fmt.Errorf("-features %q: %q is not a node count of at least 10", spec, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// quiet waits until the group saw no write for calm, at most limit.
func quiet(ctx context.Context, c kubernetes.Interface, calm, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last, _, _, _, err := groupRequests(ctx, c)
	if err != nil {
		return err
	}
	since := time.Now()
	for time.Since(since) < calm {
		if time.Now().After(deadline) {
			return fmt.Errorf("writes still going on after %s", limit)
		}
		time.Sleep(500 * time.Millisecond)
		w, _, _, _, err := groupRequests(ctx, c)
		if err != nil {
			return err
		}
		if w != last {
			last, since = w, time.Now()
		}
	}
	return nil
}
