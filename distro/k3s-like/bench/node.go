package main

// The node benchmark (-node N, issue 31): the time from exec to N Pods
// Running and Ready on k3s-like's in-process node (A: `k3s-like server`,
// its kubelet and kube-proxy goroutines of the server, containerd its
// child) against the same node as processes (B: `k3s-like server
// --disable-agent` as the control plane, `k3s-like containerd` with the
// configuration A's server writes, and the upstream kubelet and kube-proxy
// binaries of the same k8s.io/kubernetes with the arguments A's --dry-run
// prints), RSS and CPU at that moment, in alternated pairs A B A B. The
// same pairs run the footprint's runs of issue 46 (footprint.go): A with
// the previous layout's binary (A-before), and `k3s-like agent` against
// a `server --disable-agent` (agent, agent-before), each measured idle
// (0 Pods) and with the Pods settled. Each run has a network namespace of
// its own, set up as the node e2e tests set theirs up; nothing it runs
// can reach beyond it.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	watchtools "k8s.io/client-go/tools/watch"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/node/proctree"
	noderuntime "github.com/kubeharness/kubeharness/components/node/runtime"
	"github.com/kubeharness/kubeharness/components/node/sandboxes"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/images"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/mounts"
	"github.com/kubeharness/kubeharness/harness"
)

// nodeFlags are the node benchmark's flags.
type nodeFlags struct {
	pods               int    // -node: the benchmark's Pods; 0: not this benchmark
	kubelet, kubeProxy string // B's upstream binaries
	containerd         string // B's containerd: upstream's binary; "": `k3s-like containerd`
	images, out        string // make images' archives; the report
	before             string // -k3s-like-before: the previous layout's binary; "" none
	runs               string // -node-runs: the kinds of run of each pair
	idle, settle       time.Duration
	cniProbes          int
}

// addNodeFlags adds the node benchmark's flags to the command line.
func addNodeFlags(n *nodeFlags) {
	flag.IntVar(&n.pods, "node", 0, "run the node benchmark instead: exec → this many Pods Running on the in-process node (A) against the node as processes (B); the issue's target is 100 (the kubelet's maxPods is 110)")
	flag.StringVar(&n.kubelet, "kubelet", "distro/k3s-like/bench/out/kubelet", "B's kubelet binary (-node)")
	flag.StringVar(&n.kubeProxy, "kube-proxy", "distro/k3s-like/bench/out/kube-proxy", "B's kube-proxy binary (-node)")
	flag.StringVar(&n.containerd, "containerd", "distro/k3s-like/bench/out/containerd", "B's containerd binary (-node): upstream's cmd/containerd at the k3s-like module's containerd version (make bench-node builds it); empty: B runs `k3s-like containerd`, as A does")
	flag.StringVar(&n.images, "node-images", "distro/k3s-like/bench/out/images", "the directory of make images' archives: pause.tar (-node)")
	flag.StringVar(&n.out, "node-out", "distro/k3s-like/bench/results/NODE.md", "the node benchmark's report")
	flag.StringVar(&n.before, "k3s-like-before", "", "the before of the footprint figures (issue 46): k3s-like built without the embedhelpers tag, whose node runs the binary itself as its shim and CNI plugins (-node; make bench-node builds it); empty: no before runs")
	flag.StringVar(&n.runs, "node-runs", strings.Join(allKinds, ","), "the runs of each pair, in this order (-node): A (the server with its node), B (the node as processes; needs A), A-before (A with -k3s-like-before), agent (`k3s-like agent` against a `server --disable-agent`), agent-before")
	flag.DurationVar(&n.idle, "node-idle", 20*time.Second, "how long each run's node idles once its Node is Ready, before the 0-Pod figures and the workload (-node)")
	flag.DurationVar(&n.settle, "node-settle", 35*time.Second, "how long each run waits once all its Pods run before the footprint's figures at that count (-node): longer than the shim's 30 s between returning its free memory to the kernel (containerd's pkg/shim, debug.FreeOSMemory), so that every shim is measured as it runs, not as it started; 0: at once")
	flag.IntVar(&n.cniProbes, "node-cni-probes", 10, "sandboxes whose networks each run adds and deletes with the node's CNI plugins once its Pods run, each plugin exec timed (-node)")
}

// The node's network, as the node e2e tests have it (node_e2e_test.go,
// netnsScript): loopback, a veth pair whose peer stays in the namespace,
// nodeIP on eth0 and the default route through it.
const (
	nodeIP          = "192.0.2.10"
	nodeNetnsScript = `set -e
ip link set lo up
ip link add eth0 type veth peer name eth0p
ip addr add ` + nodeIP + `/24 dev eth0
ip link set eth0 up
ip link set eth0p up
ip route add default via 192.0.2.1 dev eth0`
)

// The benchmark's node, workload and the node's well-known places.
const (
	// benchNodeName is the node's name in both.
	benchNodeName = "bench-node"
	// benchNamespace holds the benchmark's Deployment.
	benchNamespace = "bench-node"
	// pauseImage is make images' pause image, k3s-like's sandbox image
	// (images.PauseName): the benchmark's Pods run it, never pulled.
	pauseImage = "registry.k8s.io/pause:3.10.2"
	// kubeletHealthz is the kubelet's default healthz address.
	kubeletHealthz = "127.0.0.1:10248"
	// proxierBinding is an older release's node-join binding of
	// system:node-proxier to system:nodes, which that release's kube-proxy
	// (with the kubelet's kubeconfig) needed; kube-proxy now has its own
	// identity, which upstream's binding grants from the apiserver's start.
	proxierBinding = "k3s-like-node-proxier"
	// imagesDir is where the node imports its images from, under the data dir.
	imagesDir = "agent/images"
)

// nodeBench is the node benchmark's setup, the same for every run.
type nodeBench struct {
	c nodeFlags
	// k3sLike is the binary of A and of B's control plane and containerd;
	// before is the previous layout's (the before kinds').
	k3sLike, before string
	// kinds are the runs of each pair, in order.
	kinds []string
	// agentData is the agent's data dir in the agent runs (the server's
	// is data).
	agentData string
	// serverCopies are copies of the binaries, by binary, that the agent
	// runs' server runs from: no page of the agent's binary is shared with
	// it, so the agent's PSS is the agent's alone, as on a machine of its
	// own.
	serverCopies map[string]string
	// root holds the runs' data dir (root/data: every run uses the same
	// path, so that B runs exactly the files A's server writes, whose
	// paths name it) and the kubelet's configuration file.
	root, data string
	// cgroupRoot is the kubelet's --cgroup-root (a kubelet removes the
	// pod cgroups it does not know under its root: not the host's "/").
	cgroupRoot    string
	kubeletConfig string
	// serverA and serverB are the server's arguments in A and B.
	serverA, serverB []string
	// kubeletArgs and proxyArgs are B's, from A's --dry-run.
	kubeletArgs, proxyArgs []string
	// socket is containerd's CRI socket; runDir its directory (the
	// runtime's state, under /run).
	socket, runDir string
	// tmpl is the node's runtime files as A's server wrote them, taken
	// from the first A run, for B.
	tmpl *runtimeFiles
	// versions are the binaries' --version lines.
	versions []string
}

// nodeResult is one run of the node benchmark.
type nodeResult struct {
	kind string // one of allKinds
	pair int    // from 1
	// nodeReady: exec → the Node Ready; running: the workload created
	// (after the idle figures) → every Pod Running and Ready; window:
	// exec → every Pod Running and Ready.
	nodeReady, running, window time.Duration
	// procs are the measured processes at running, in start order.
	procs []procFigures
	// shims are containerd's shims and everything under them (the
	// containers, runc's children), counted in no total.
	shims shimFigures
	// each are the shims one by one (not their containers), at running.
	each []shimProc
	// idle are the processes and shims once the Node was Ready and had
	// idled, before the workload (0 Pods).
	idle      []procFigures
	idleShims shimFigures
	idleEach  []shimProc
	// settled and settledEach are the processes and the shims once the
	// Pods ran -node-settle (none with 0).
	settled     []procFigures
	settledEach []shimProc
	// cni are the plugin execs of the CNI probe (probeCNI), timed.
	cni []cniExec
	// otherCPU is the CPU of the machine's other processes, exec → running.
	otherCPU time.Duration
	// stop is SIGTERM → every process exited (B: in reverse start order,
	// the pod sandboxes removed through the CRI before containerd).
	stop time.Duration
	// stopSteps are the stop's steps, with how long each took.
	stopSteps []string
	// leftover is what the driver had to clean after the stop ("" none).
	leftover string
}

// procFigures are one process's figures when every Pod runs.
type procFigures struct {
	name           string
	rss, anon, pss int64 // KiB; pss: shared pages divided among their sharers
	cpu            time.Duration
	// reaped is the CPU of its children that exited (cutime+cstime):
	// containerd's CNI plugins and `shim start`; in no total.
	reaped time.Duration
}

// shimFigures sum the shims and their descendants.
type shimFigures struct {
	shims, procs   int
	rss, anon, pss int64 // KiB
	cpu            time.Duration
	reaped         time.Duration // runc and the other children the shims reaped
}

// proc returns the figures of the process named name, if it ran.
func (r nodeResult) proc(name string) (procFigures, bool) { return procIn(r.procs, name) }

// total sums the processes' figures (the shims not counted).
func (r nodeResult) total() (rss, anon, pss int64, cpu time.Duration) {
	for _, p := range r.procs {
		rss, anon, pss, cpu = rss+p.rss, anon+p.anon, pss+p.pss, cpu+p.cpu
	}
	return
}

// allCPU is the CPU of the processes, their reaped children, the shims,
// their containers and their reaped children (runc).
func (r nodeResult) allCPU() time.Duration {
	d := r.shims.cpu + r.shims.reaped
	for _, p := range r.procs {
		d += p.cpu + p.reaped
	}
	return d
}

// runNode runs the node benchmark's pairs and writes its report.
func runNode(c config) error {
	if os.Geteuid() != 0 {
		return errors.New("-node: the node needs root")
	}
	for _, tool := range []string{"runc", "iptables", "ip", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("-node: %s: %w", tool, err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := newNodeBench(c)
	if err != nil {
		return err
	}
	defer os.RemoveAll(b.root)
	defer removeCgroupTree(b.cgroupRoot, true)
	built := provenance(c.k3sLike)
	load0 := loadAverage()
	if w := loadWarning(load0); w != "" {
		fmt.Fprintln(os.Stderr, "bench: warning:", w)
	}
	var results []nodeResult
	t0 := time.Now()
	for i := range c.pairs {
		for _, kind := range b.kinds {
			fmt.Fprintf(os.Stderr, "bench: node, %d Pods, pair %d, run %s (%s into the bench)\n", c.node.pods, i+1, kind, time.Since(t0).Round(time.Second))
			r, err := b.measure(ctx, kind)
			if err != nil {
				return fmt.Errorf("node, %d Pods, pair %d, run %s: %w", c.node.pods, i+1, kind, err)
			}
			r.pair = i + 1
			rss, anon, pss, cpu := r.total()
			fmt.Fprintf(os.Stderr, "bench: %s Node Ready %s, %d Pods Running %s after the workload, RSS %d MiB (anon %d, PSS %d), CPU %s; shims %d (%d processes, RSS %d MiB, anon %d, PSS %d, CPU %s); stop %s (%s); other processes %s%s\n",
				kind, r.nodeReady.Round(time.Millisecond), c.node.pods, r.running.Round(time.Millisecond), rss/1024, anon/1024, pss/1024, cpu.Round(10*time.Millisecond),
				r.shims.shims, r.shims.procs, r.shims.rss/1024, r.shims.anon/1024, r.shims.pss/1024, r.shims.cpu.Round(10*time.Millisecond),
				r.stop.Round(time.Millisecond), strings.Join(r.stopSteps, ", "), r.otherCPU.Round(10*time.Millisecond), leftoverNote(r.leftover))
			fmt.Fprintf(os.Stderr, "bench: %s footprint: %s\n", kind, footprintLine(r))
			results = append(results, r)
		}
	}
	report := renderNode(b, c, results, time.Since(t0), load0, built)
	if err := os.WriteFile(c.node.out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Print(report)
	return nil
}

// leftoverNote is ", left after the stop: …" or "".
func leftoverNote(s string) string {
	if s == "" {
		return ""
	}
	return "; the driver cleaned after the stop: " + s
}

// newNodeBench checks the binaries and images, writes the kubelet's
// configuration file, makes the kubelet's cgroup root, and takes B's
// node arguments from A's --dry-run (checking that B's control plane
// runs with A's arguments).
func newNodeBench(c config) (*nodeBench, error) {
	kinds, err := nodeKinds(c.node.runs, c.node.before)
	if err != nil {
		return nil, err
	}
	need := []string{c.k3sLike, c.node.kubelet, c.node.kubeProxy, filepath.Join(c.node.images, "pause.tar")}
	if c.node.before != "" {
		need = append(need, c.node.before)
	}
	if c.node.containerd != "" {
		need = append(need, c.node.containerd)
	}
	for _, f := range need {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("-node: %w (make bench-node builds it)", err)
		}
	}
	root, err := os.MkdirTemp("", "kubeharness-bench-node-")
	if err != nil {
		return nil, err
	}
	b := &nodeBench{c: c.node, k3sLike: c.k3sLike, before: c.node.before, kinds: kinds, root: root, data: filepath.Join(root, "data"), agentData: filepath.Join(root, "agent-data"),
		cgroupRoot: fmt.Sprintf("/kubeharness-bench-node-%d", os.Getpid()), kubeletConfig: filepath.Join(root, "kubelet.yaml")}
	fail := func(err error) (*nodeBench, error) {
		os.RemoveAll(root)
		return nil, err
	}
	// podLogsDir is a configuration field, no flag: a kubelet removes the
	// pod log directories of the pods it does not know, so not the
	// host's /var/log/pods (the e2e tests' agents do the same).
	conf := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: " + filepath.Join(b.data, "pod-logs") + "\n"
	if err := os.WriteFile(b.kubeletConfig, []byte(conf), 0o600); err != nil {
		return fail(err)
	}
	b.serverA = []string{"server", "--data-dir=" + b.data, "--node-name=" + benchNodeName, "--node-ip=" + nodeIP,
		"--disable=coredns", // the node runs the benchmark's Pods and nothing else
		"--kubelet-arg=cgroup-root=" + b.cgroupRoot, "--kubelet-arg=config=" + b.kubeletConfig}
	// B's control plane: no node, but listening and advertising as A's
	// does with one (its defaults without a node are loopback).
	b.serverB = append(slices.Clone(b.serverA), "--disable-agent", "--bind-address=0.0.0.0", "--advertise-address="+nodeIP)
	dry := func(args []string) ([]byte, error) {
		var stderr bytes.Buffer
		cmd := exec.Command(c.k3sLike, append(slices.Clone(args), "--dry-run", "--output", "json")...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("k3s-like %s --dry-run: %w\n%s", strings.Join(args, " "), err, testenv.Tail(stderr.String(), 20))
		}
		return out, nil
	}
	outA, err := dry(b.serverA)
	if err != nil {
		return fail(err)
	}
	outB, err := dry(b.serverB)
	if err != nil {
		return fail(err)
	}
	if b.kubeletArgs, b.proxyArgs, err = nodeArgs(outA, outB); err != nil {
		return fail(err)
	}
	endpoint, _ := kubeargs.Value(b.kubeletArgs, "container-runtime-endpoint")
	b.socket = strings.TrimPrefix(endpoint, "unix://")
	if b.socket == "" || b.socket == endpoint {
		return fail(fmt.Errorf("the kubelet's --container-runtime-endpoint %q is not a unix socket", endpoint))
	}
	b.runDir = filepath.Dir(b.socket)
	if slices.ContainsFunc(kinds, isAgent) {
		b.serverCopies = map[string]string{}
		for _, bin := range []string{c.k3sLike, c.node.before} {
			if bin == "" {
				continue
			}
			dst := filepath.Join(root, "server-bin", filepath.Base(bin))
			if err := copyFile(bin, dst); err != nil {
				return fail(err)
			}
			b.serverCopies[bin] = dst
		}
	}
	bins := []string{c.k3sLike, c.node.kubelet, c.node.kubeProxy}
	if c.node.before != "" {
		bins = append(bins, c.node.before)
	}
	if c.node.containerd != "" {
		bins = append(bins, c.node.containerd)
	}
	for _, bin := range bins {
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			return fail(fmt.Errorf("%s --version: %w: %s", bin, err, out))
		}
		line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		b.versions = append(b.versions, fmt.Sprintf("`%s`: %s", filepath.Base(bin), line))
	}
	return b, nil
}

// nodeArgs reads the kubelet's and kube-proxy's arguments from A's
// `server --dry-run --output json` (outA), after checking that B's
// control plane (outB, with --disable-agent) runs each control-plane
// component with exactly A's arguments; redacted values cannot be run.
func nodeArgs(outA, outB []byte) (kubelet, proxy []string, err error) {
	a, err := dryRunArgs(outA)
	if err != nil {
		return nil, nil, err
	}
	b, err := dryRunArgs(outB)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if len(a[name]) == 0 || !slices.Equal(a[name], b[name]) {
			return nil, nil, fmt.Errorf("%s runs with other arguments in B's control plane (--disable-agent):\nA: %q\nB: %q", name, a[name], b[name])
		}
	}
	if _, ok := b["kubelet"]; ok {
		return nil, nil, errors.New("B's server (--disable-agent) runs a kubelet")
	}
	kubelet, proxy = a["kubelet"], a["kube-proxy"]
	if len(kubelet) == 0 || len(proxy) == 0 {
		return nil, nil, errors.New("no kubelet or kube-proxy arguments in A's dry-run output")
	}
	for _, arg := range append(slices.Clone(kubelet), proxy...) {
		if strings.Contains(arg, harness.Redacted) {
			return nil, nil, fmt.Errorf("the dry-run redacted %s: B cannot run it", arg)
		}
	}
	return kubelet, proxy, nil
}

// procSet are a run's processes, in start order (B's supervisor adds to
// it while the driver reads it).
type procSet struct {
	mu    sync.Mutex
	cmds  []*exec.Cmd
	names []string
}

// add records a started process.
func (s *procSet) add(name string, cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cmds, s.names = append(s.cmds, cmd), append(s.names, name)
}

// list returns the processes and their names.
func (s *procSet) list() ([]*exec.Cmd, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cmds), slices.Clone(s.names)
}

// runState is what one run started, for its cleanup.
type runState struct {
	kind string
	// bin is the run's k3s-like binary; data the node's data dir (the
	// agent's in the agent runs), socket its containerd's CRI and runDir
	// the runtime's directory under /run.
	bin, data, socket, runDir string
	ns                        *netns
	procs                     procSet
	logs                      *procLogs
	// logMu guards logs (the supervisor adds writers).
	logMu sync.Mutex
	// containerdPID is A's containerd child, once found.
	containerdPID int
	// stopSteps are the stop's steps and how long each took.
	stopSteps []string
	// stopLog are the last log lines, when the stop left something.
	stopLog string
}

// start runs bin with args in the run's network namespace, its output
// kept under name.
func (st *runState) start(name, bin string, args ...string) error {
	cmd := exec.Command(bin, args...)
	st.logMu.Lock()
	w := st.logs.for_(name)
	st.logMu.Unlock()
	cmd.Stdout, cmd.Stderr = w, w
	if err := st.ns.start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	st.procs.add(name, cmd)
	return nil
}

// tails are the last log lines of every process of the run.
func (st *runState) tails() string {
	st.logMu.Lock()
	defer st.logMu.Unlock()
	return st.logs.tails(25)
}

// measure runs A or B once: from exec until every Pod runs, the figures
// then, the stop, and the cleanup (always, also on failure).
func (b *nodeBench) measure(ctx context.Context, kind string) (r nodeResult, err error) {
	r.kind = kind
	st := &runState{kind: kind, logs: &procLogs{}, bin: b.k3sLike, data: b.data, socket: b.socket, runDir: b.runDir}
	if isBefore(kind) {
		st.bin = b.before
	}
	if isAgent(kind) {
		st.data = b.agentData
		st.socket, st.runDir = datadir.ContainerdSocket(st.data), datadir.NodeRun(st.data)
	}
	defer func() {
		stop, leftover, cerr := b.cleanup(st)
		r.stop, r.leftover, r.stopSteps = stop, leftover, st.stopSteps
		if st.stopLog != "" {
			fmt.Fprintf(os.Stderr, "bench: %s's stop left %s; the last log lines:\n%s\n", kind, leftover, st.stopLog)
		}
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()
	failed := func(what string, err error) error {
		return fmt.Errorf("%s: %w\n--- last log lines ---\n%s", what, err, st.tails())
	}
	if err := b.prepare(st); err != nil {
		return r, err
	}
	if st.ns, err = newNetns(); err != nil {
		return r, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeout(runCtx, 8*time.Minute)
	defer cancelTimeout()

	machine0, self0 := machineBusy(), selfCPU()
	start := time.Now()
	if err := b.launch(runCtx, cancel, st); err != nil {
		return r, err
	}
	// cause adds why the run ended early, if it did.
	cause := func(err error) error {
		if c := context.Cause(runCtx); c != nil && !errors.Is(err, c) {
			return fmt.Errorf("%w (the run ended: %v)", err, c)
		}
		return err
	}

	client, err := b.apiClient(runCtx, st)
	if err != nil {
		return r, failed("the apiserver", cause(err))
	}
	if r.nodeReady = waitNodeReady(runCtx, client, start); r.nodeReady == 0 {
		return r, failed("Node Ready", cause(errors.New("the Node's Ready condition was never seen")))
	}
	select {
	case <-runCtx.Done():
		return r, failed("the idle node", cause(runCtx.Err()))
	case <-time.After(b.c.idle):
	}
	r.idle, r.idleShims, r.idleEach = b.figures(st)
	deployed := time.Now()
	workload := make(chan error, 1)
	go func() { workload <- createPauseDeployment(runCtx, client, b.c.pods) }()
	running, err := waitPodsRunning(runCtx, client, b.c.pods, deployed)
	if err == nil {
		err = <-workload
	}
	if err != nil {
		return r, failed(fmt.Sprintf("%d Pods Running", b.c.pods), cause(fmt.Errorf("%w; %s", err, podSummary(client))))
	}
	r.running, r.window = running, time.Since(start)
	r.procs, r.shims, r.each = b.figures(st)
	r.otherCPU = machineBusy() - machine0 - (selfCPU() - self0) - r.allCPU()
	if kind == kindA && b.tmpl == nil {
		if err := b.keepRuntimeFiles(runCtx, client); err != nil {
			return r, failed("A's runtime files", err)
		}
	}
	if b.c.settle > 0 {
		select {
		case <-runCtx.Done():
			return r, failed("the Pods settling", cause(runCtx.Err()))
		case <-time.After(b.c.settle):
		}
		r.settled, _, r.settledEach = b.figures(st)
	}
	if b.c.cniProbes > 0 {
		if r.cni, err = probeCNI(runCtx, st, b.c.cniProbes); err != nil {
			return r, failed("the CNI probe", cause(err))
		}
	}
	return r, nil
}

// launch starts A's server, or B's server and containerd and the driver's
// supervision of B's kubelet and kube-proxy. A process that exits, or B's
// supervisor failing, ends the run at once: cancel, with why.
func (b *nodeBench) launch(runCtx context.Context, cancel context.CancelCauseFunc, st *runState) error {
	superviseErr := make(chan error, 1)
	switch st.kind {
	case kindA, kindABefore:
		if err := st.start("k3s-like server", st.bin, b.serverA...); err != nil {
			return err
		}
	case kindB:
		if err := st.start("k3s-like server --disable-agent", st.bin, b.serverB...); err != nil {
			return err
		}
		bin, args := st.bin, []string{"containerd"}
		if b.c.containerd != "" {
			bin, args = b.c.containerd, nil
		}
		if err := st.start("containerd", bin, append(args, "--config", filepath.Join(b.data, "agent/etc/containerd/config.toml"))...); err != nil {
			return err
		}
		go func() { superviseErr <- b.superviseB(runCtx, st) }()
	case kindAgent, kindAgentBefore:
		if err := st.start("k3s-like server --disable-agent", b.serverCopies[st.bin], b.serverB...); err != nil {
			return err
		}
		go func() { superviseErr <- b.superviseAgent(runCtx, st) }()
	}
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case err := <-superviseErr:
				if err != nil {
					cancel(fmt.Errorf("B's supervisor: %w", err))
					return
				}
			case <-t.C:
				cmds, _ := st.procs.list()
				if err := exitedEarly(cmds); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return nil
}

// keepRuntimeFiles keeps the runtime files A's server wrote, with its pod
// CIDR, for B's runs (b.tmpl).
func (b *nodeBench) keepRuntimeFiles(ctx context.Context, client kubernetes.Interface) error {
	cidr, err := podCIDR(ctx, client)
	if err == nil {
		b.tmpl, err = readRuntimeFiles(b.data, cidr)
	}
	return err
}

// prepare makes a run's data dirs (the pause image where the node
// imports it from; B: the runtime files A's server wrote) and the
// kubelet's cgroup root, before the clock starts.
func (b *nodeBench) prepare(st *runState) error {
	for _, d := range []string{b.data, b.agentData} {
		if _, err := os.Stat(d); err == nil {
			return fmt.Errorf("%s exists: an earlier run was not cleaned up", d)
		}
	}
	if err := os.MkdirAll(filepath.Join(st.data, imagesDir), 0o700); err != nil {
		return err
	}
	img, err := os.ReadFile(filepath.Join(b.c.images, "pause.tar"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(st.data, imagesDir, "pause.tar"), img, 0o600); err != nil {
		return err
	}
	if err := makeCgroupRoot(b.cgroupRoot); err != nil {
		return err
	}
	if st.kind == kindB {
		if b.tmpl == nil {
			return errors.New("B needs the runtime files of an A run before it")
		}
		if err := b.tmpl.write(b.data); err != nil {
			return err
		}
		if err := os.MkdirAll(b.runDir, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// apiClient waits for the admin kubeconfig and the apiserver's /readyz,
// and returns the admin's client through the run's network namespace.
func (b *nodeBench) apiClient(ctx context.Context, st *runState) (*kubernetes.Clientset, error) {
	kubeconfig := datadir.AdminKubeconfig(b.data)
	cmds, _ := st.procs.list()
	if err := waitFile(ctx, kubeconfig, cmds); err != nil {
		return nil, err
	}
	_, cfg, err := adminClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Dial = st.ns.dial
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return client, waitReadyz(ctx, client)
}

// waitReadyz polls the apiserver's /readyz until it answers 200.
func waitReadyz(ctx context.Context, client kubernetes.Interface) error {
	for {
		var code int
		client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver /readyz: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// superviseB starts B's node as A's harness orders it inside the
// process: containerd's CRI answering, then the images imported (A's
// runtime is ready only then); the node's PKI from the cluster's CAs
// (A's prepareNode, after the barrier); the kubelet once the apiserver is
// ready; kube-proxy and the CNI configuration's writer once the kubelet's
// /healthz answers (an older A's kube-proxy, which used the kubelet's
// kubeconfig, also waits for node-join, whose binding it needed).
func (b *nodeBench) superviseB(ctx context.Context, st *runState) error {
	if err := waitCRI(ctx, st.socket); err != nil {
		return err
	}
	if err := importImages(ctx, st.socket, filepath.Join(b.data, imagesDir)); err != nil {
		return err
	}
	client, err := b.apiClient(ctx, st)
	if err != nil {
		return err
	}
	if err := ensureNodePKI(b.data); err != nil {
		return fmt.Errorf("the node's PKI: %w", err)
	}
	if err := st.start("kubelet", b.c.kubelet, b.kubeletArgs...); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: st.ns.dial}}
	for {
		resp, err := hc.Get("http://" + kubeletHealthz + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the kubelet's /healthz: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	go func() {
		if err := b.writeCNIConfig(ctx, client); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "bench: warning: B's CNI configuration: %v\n", err)
		}
	}()
	for usesKubeletCredential(b.proxyArgs) {
		_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, proxierBinding, metav1.GetOptions{})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node-join's %s binding: %w (last: %v)", proxierBinding, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return st.start("kube-proxy", b.c.kubeProxy, b.proxyArgs...)
}

// usesKubeletCredential reports whether kube-proxy's arguments give it the
// kubelet's kubeconfig (an older release's layout).
func usesKubeletCredential(proxyArgs []string) bool {
	for _, a := range proxyArgs {
		if v, ok := strings.CutPrefix(a, "--kubeconfig="); ok {
			return filepath.Base(v) == "kubelet.kubeconfig"
		}
	}
	return false
}

// superviseAgent starts `k3s-like agent` once the server's apiserver is
// ready and its token file written, as a second machine joins: with the
// token file, A's node flags and its own data dir, in the run's network
// namespace (the server listens on the node's IP).
func (b *nodeBench) superviseAgent(ctx context.Context, st *runState) error {
	if _, err := b.apiClient(ctx, st); err != nil {
		return err
	}
	token := filepath.Join(b.data, "token")
	cmds, _ := st.procs.list()
	if err := waitFile(ctx, token, cmds); err != nil {
		return err
	}
	return st.start("k3s-like agent", st.bin, "agent", "--server=https://"+nodeIP+":6443", "--token-file="+token, "--data-dir="+st.data,
		"--node-name="+benchNodeName, "--node-ip="+nodeIP, "--kubelet-arg=cgroup-root="+b.cgroupRoot, "--kubelet-arg=config="+b.kubeletConfig)
}

// waitCRI waits until containerd's CRI answers Version, as A's runtime
// component does.
func waitCRI(ctx context.Context, socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	cri := runtimeapi.NewRuntimeServiceClient(conn)
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cri.Version(callCtx, &runtimeapi.VersionRequest{})
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd's CRI at %s: %w (last: %v)", socket, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// importImages imports every archive of dir as k3s-like's runtime does
// before it is ready (package internal/images: pinned, unpacked for
// overlayfs), and checks that the pause image is among them.
func importImages(ctx context.Context, socket, dir string) error {
	names, err := images.Import(ctx, socket, dir, "overlayfs", logr.Discard())
	if err != nil {
		return err
	}
	if !slices.Contains(names, pauseImage) {
		return fmt.Errorf("images: %s not among the imported %q (from %s)", pauseImage, names, dir)
	}
	return nil
}

// ensureNodePKI writes the node's certificates and kubeconfig from the
// cluster's CAs, as A's server does for its own node (node.go,
// prepareNode): once the admin kubeconfig exists, the server wrote them.
func ensureNodePKI(data string) error {
	l := datadir.PKI(data)
	var cas []*pki.CA
	for _, p := range []pki.CertKey{l.ServerCA(), l.ClientCA(), l.KubeletServingCA()} {
		ca, err := pki.LoadOrCreateCA(p.CertFile, p.KeyFile, "")
		if err != nil {
			return err
		}
		cas = append(cas, ca)
	}
	kc, err := clientcmd.LoadFromFile(datadir.AdminKubeconfig(data))
	if err != nil {
		return err
	}
	var server string
	if ctx := kc.Contexts[kc.CurrentContext]; ctx != nil && kc.Clusters[ctx.Cluster] != nil {
		server = kc.Clusters[ctx.Cluster].Server // the advertised address, as A's node's
	}
	if server == "" {
		return errors.New("no server in the admin kubeconfig")
	}
	files := &pki.Files{Dir: l.Dir, ServerCA: cas[0], ClientCA: cas[1], KubeletServingCA: cas[2]}
	_, err = files.EnsureNode(pki.Node{Name: benchNodeName, IPs: []net.IP{net.ParseIP(nodeIP)}}, server)
	return err
}

// writeCNIConfig is B's cni-config: as A's component, it polls every
// second until the Node has its pod CIDR, then writes the configuration
// A's server wrote, for that CIDR.
func (b *nodeBench) writeCNIConfig(ctx context.Context, client kubernetes.Interface) error {
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, benchNodeName, metav1.GetOptions{})
		if err == nil && n.Spec.PodCIDR != "" {
			return b.tmpl.writeCNI(b.data, n.Spec.PodCIDR)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// podCIDR is the node's pod CIDR.
func podCIDR(ctx context.Context, client kubernetes.Interface) (string, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, benchNodeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if n.Spec.PodCIDR == "" {
		return "", errors.New("the node has no pod CIDR")
	}
	return n.Spec.PodCIDR, nil
}

// runtimeFile is one file (or link, or directory) of the node's runtime
// configuration, relative to DATA_DIR.
type runtimeFile struct {
	rel  string
	mode fs.FileMode
	data []byte // a file's content, a link's target
}

// runtimeFiles are the node's runtime files as A's server wrote them
// (prepareRuntime: agent/etc/containerd, agent/bin and the helper
// programs it links to, unpacked under data/HASH/bin, or the binary's
// links in agent/bin when it has no helpers embedded; cni-config:
// agent/etc/cni/net.d, for cidr).
type runtimeFiles struct {
	files []runtimeFile
	cidr  string
}

// readRuntimeFiles reads agent/etc, agent/bin and data (the unpacked
// helpers, if any) of A's data dir, links as links: B's node runs A's
// helper programs, byte for byte, from the same paths.
func readRuntimeFiles(data, cidr string) (*runtimeFiles, error) {
	t := &runtimeFiles{cidr: cidr}
	for _, top := range []string{"agent/etc", "agent/bin", "data"} {
		if _, err := os.Lstat(filepath.Join(data, top)); top == "data" && errors.Is(err, fs.ErrNotExist) {
			continue // no helpers embedded: agent/bin links to the binary
		}
		err := filepath.WalkDir(filepath.Join(data, top), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(data, p)
			info, err := d.Info()
			if err != nil {
				return err
			}
			f := runtimeFile{rel: rel, mode: info.Mode()}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return err
				}
				f.data = []byte(target)
			case d.Type().IsRegular():
				if f.data, err = os.ReadFile(p); err != nil {
					return err
				}
			}
			t.files = append(t.files, f)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if !slices.ContainsFunc(t.files, func(f runtimeFile) bool { return f.rel == "agent/etc/containerd/config.toml" }) ||
		!slices.ContainsFunc(t.files, func(f runtimeFile) bool { return t.isCNI(f) && f.mode.IsRegular() }) {
		return nil, fmt.Errorf("no containerd configuration or CNI configuration under %s", data)
	}
	return t, nil
}

// isCNI: f is a file of the CNI configuration, which the node writes once
// it has its pod CIDR.
func (t *runtimeFiles) isCNI(f runtimeFile) bool {
	return strings.HasPrefix(f.rel, "agent/etc/cni/net.d/") && !f.mode.IsDir()
}

// write writes every file under the data dir but the CNI
// configuration's.
func (t *runtimeFiles) write(data string) error {
	for _, f := range t.files {
		p := filepath.Join(data, f.rel)
		var err error
		switch {
		case t.isCNI(f):
			continue
		case f.mode.IsDir():
			err = os.MkdirAll(p, f.mode.Perm())
		case f.mode&fs.ModeSymlink != 0:
			err = os.Symlink(string(f.data), p)
		default:
			err = os.WriteFile(p, f.data, f.mode.Perm())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// writeCNI writes the CNI configuration for cidr (A's, with A's pod CIDR
// replaced), each file renamed into place as k3s-like's atomicfile does.
func (t *runtimeFiles) writeCNI(data, cidr string) error {
	for _, f := range t.files {
		if !t.isCNI(f) {
			continue
		}
		p := filepath.Join(data, f.rel)
		data := bytes.ReplaceAll(f.data, []byte(strconv.Quote(t.cidr)), []byte(strconv.Quote(cidr)))
		if err := os.WriteFile(p+".tmp", data, f.mode.Perm()); err != nil {
			return err
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return err
		}
	}
	return nil
}

// createPauseDeployment creates the benchmark's namespace, waits for its
// default ServiceAccount (the Pods' admission needs it), and creates a
// Deployment of n pause Pods (never pulled: the node imported the image).
func createPauseDeployment(ctx context.Context, c kubernetes.Interface, n int) error {
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	for {
		_, err := c.CoreV1().ServiceAccounts(benchNamespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	replicas, grace := int32(n), int64(1)
	labels := map[string]string{"app": "bench-pause"}
	_, err = c.AppsV1().Deployments(benchNamespace).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "pause"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "pause", Image: pauseImage, ImagePullPolicy: corev1.PullNever,
					}},
				},
			},
		},
	}, metav1.CreateOptions{})
	return err
}

// running reports whether a Pod is Running and Ready.
func running(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPodsRunning watches the benchmark's namespace until n Pods are
// Running and Ready, and returns the time since start then; a Pod that
// cannot run (its image never pulled) fails it at once.
func waitPodsRunning(ctx context.Context, c kubernetes.Interface, n int, start time.Time) (time.Duration, error) {
	ready := map[string]bool{}
	var at time.Duration
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", benchNamespace, fields.Everything())
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted || !running(p) {
			delete(ready, p.Name)
		} else {
			ready[p.Name] = true
		}
		for _, s := range p.Status.ContainerStatuses {
			if w := s.State.Waiting; w != nil && (w.Reason == "ErrImageNeverPull" || w.Reason == "CreateContainerConfigError") {
				return false, fmt.Errorf("pod %s: %s: %s", p.Name, w.Reason, w.Message)
			}
		}
		if len(ready) >= n {
			at = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	return at, err
}

// waitNodeReady watches the node until it is Ready and returns the time
// since start then (0 if ctx ended first).
func waitNodeReady(ctx context.Context, c kubernetes.Interface, start time.Time) time.Duration {
	var at time.Duration
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", benchNodeName))
	_, _ = watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		n, ok := ev.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				at = time.Since(start)
				return true, nil
			}
		}
		return false, nil
	})
	return at
}

// podSummary counts the benchmark's Pods by phase and waiting reason, and
// gives the node's conditions, for a failure's message.
func podSummary(c kubernetes.Interface) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pods, err := c.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "the Pods: " + err.Error()
	}
	count := map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		k := string(p.Status.Phase)
		if running(p) {
			k = "Running and Ready"
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				k += " (" + s.State.Waiting.Reason + ")"
			}
		}
		count[k]++
	}
	var parts []string
	for k, n := range count {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	out := fmt.Sprintf("%d Pods: %s", len(pods.Items), strings.Join(parts, ", "))
	if n, err := c.CoreV1().Nodes().Get(ctx, benchNodeName, metav1.GetOptions{}); err == nil {
		var conds []string
		for _, cond := range n.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s)", cond.Type, cond.Status, cond.Message))
		}
		out += "; the node: " + strings.Join(conds, ", ")
	} else {
		out += "; the node: " + err.Error()
	}
	return out
}

// figures reads every measured process's RSS and CPU, and the shims',
// together and one by one.
func (b *nodeBench) figures(st *runState) ([]procFigures, shimFigures, []shimProc) {
	cmds, names := st.procs.list()
	table, _ := proctree.Read()
	for i, cmd := range slices.Clone(cmds) {
		if names[i] != "k3s-like server" && names[i] != "k3s-like agent" {
			continue
		}
		// The node's containerd is its process's child (runtime.Runtime),
		// not a goroutine: measured on its own, as B's.
		for pid, p := range table {
			if p.PPID == cmd.Process.Pid && isContainerd(p.Cmdline) {
				st.containerdPID = pid
				cmds = append(cmds, pidCmd(pid))
				names = append(names, "containerd")
			}
		}
	}
	var out []procFigures
	for i, cmd := range cmds {
		one := []*exec.Cmd{cmd}
		rss, anon := rss(one)
		out = append(out, procFigures{name: names[i], rss: rss, anon: anon, pss: pss(cmd.Process.Pid), cpu: sum(procCPU(one)), reaped: reapedCPU(cmd.Process.Pid)})
	}
	var s shimFigures
	shims := table.Shims(st.socket)
	s.shims = len(shims)
	var each []shimProc
	for _, pid := range shims {
		rss, anon := rss([]*exec.Cmd{pidCmd(pid)})
		each = append(each, shimProc{rss: rss, anon: anon, pss: pss(pid), parts: readSmaps(pid)})
	}
	for _, pid := range table.Descendants(shims...) {
		one := []*exec.Cmd{pidCmd(pid)}
		rss, anon := rss(one)
		s.procs++
		s.rss, s.anon, s.pss = s.rss+rss, s.anon+anon, s.pss+pss(pid)
		s.cpu += sum(procCPU(one))
		s.reaped += reapedCPU(pid)
	}
	return out, s, each
}

// pidCmd is a process the driver did not start, for rss and procCPU
// (which read only its Pid, and Path for the name).
func pidCmd(pid int) *exec.Cmd {
	return &exec.Cmd{Path: strconv.Itoa(pid), Process: &os.Process{Pid: pid}}
}

// pss is the process's proportional set size (KiB, smaps_rollup): its
// pages, each shared one divided by the number of processes that map it
// (the server, containerd and the shims map one binary).
func pss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// reapedCPU is cutime+cstime: the CPU of pid's children that exited and
// were waited for.
func reapedCPU(pid int) time.Duration {
	f := proctree.Stat(pid)
	if len(f) <= 14 {
		return 0
	}
	return statCPU(f[2:]) // fields 13 and 14 where statCPU reads 11 and 12
}

// The stop of B's containerd, as A's runtime component stops its child
// with k3s-like's default --stop-timeout (8 s): the pod sandboxes removed
// within half of it, then SIGTERM, and its process group killed after
// the runtime's StopGrace (10 s).
const (
	sandboxSweep = 4 * time.Second
	runtimeGrace = 10 * time.Second
)

// cleanup stops the run's processes, then removes, and says, whatever is
// left. The stop: A, SIGTERM to the server (its harness stops the node,
// its runtime removes the pod sandboxes, kills the shims and their
// containers, and the server detaches the node's mounts); B, the same
// steps by the driver: kube-proxy, the kubelet, the sandboxes through the
// CRI (sandboxSweep), containerd (runtimeGrace), the shims with their
// containers and the CNI plugins killed, the server, the mounts
// detached; each process after the previous exited. What is left after
// that (processes, mounts) is killed or detached, and named; then the pod
// cgroups, libcni's cache entries and the kubelet's container log links
// of the run, the directories and the namespace go.
func (b *nodeBench) cleanup(st *runState) (stop time.Duration, leftover string, err error) {
	cmds, names := st.procs.list()
	stop, left, errs := b.stopInOrder(st, cmds, names)
	swept, sweepErrs := b.sweep(st, cmds)
	left, errs = append(left, swept...), append(errs, sweepErrs...)
	if st.ns != nil {
		st.ns.close()
	}
	if len(left) > 0 {
		st.stopLog = st.tails()
	}
	return stop, strings.Join(left, ", "), errors.Join(errs...)
}

// stopInOrder is cleanup's stop, each step timed in st.stopSteps: the
// processes cmds (named names) in reverse order of start; what failed to
// stop is left.
func (b *nodeBench) stopInOrder(st *runState, cmds []*exec.Cmd, names []string) (stop time.Duration, left []string, errs []error) {
	s0 := time.Now()
	step := func(what string, t0 time.Time) {
		st.stopSteps = append(st.stopSteps, fmt.Sprintf("%s %s", what, time.Since(t0).Round(10*time.Millisecond)))
	}
	for i := len(cmds) - 1; i >= 0; i-- {
		grace := 90 * time.Second
		if st.kind == kindB && names[i] == "containerd" {
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), sandboxSweep)
			n, err := removeSandboxes(ctx, st.socket)
			cancel()
			what := fmt.Sprintf("%d pod sandboxes removed", n)
			if err != nil {
				what += " (not all: " + firstLine(err) + ")"
			}
			step(what, t0)
			grace = runtimeGrace
		}
		t0 := time.Now()
		err := stopProcess(cmds[i], grace)
		what := names[i]
		if err != nil {
			what += " (" + err.Error() + ")"
			if st.kind != kindB || names[i] != "containerd" {
				left = append(left, names[i]+": "+err.Error())
			}
		}
		step(what, t0)
		if st.kind == kindB && names[i] == "containerd" {
			t0 := time.Now()
			step(fmt.Sprintf("%d shims, containers and plugins killed", killRuntime(st)), t0)
		}
	}
	if st.kind == kindB && len(cmds) > 0 {
		// What k3s-like does once its node stopped (afterStop): the
		// kubelet leaves its Pods' volumes mounted.
		t0 := time.Now()
		n, err := mounts.UnmountUnder(st.data, st.runDir)
		if err != nil {
			errs = append(errs, err)
		}
		step(fmt.Sprintf("%d mounts detached", n), t0)
	}
	if len(cmds) > 0 {
		stop = time.Since(s0)
	}
	return stop, left, errs
}

// sweep is what cleanup does after the stop: it kills what outlived it,
// detaches what is left mounted, and removes the pod cgroups, the run's
// traces and directories; left says what it found.
func (b *nodeBench) sweep(st *runState, cmds []*exec.Cmd) (left []string, errs []error) {
	killed := 0
	for _, cmd := range cmds {
		killed += killGroupOf(cmd.Process.Pid)
	}
	if st.containerdPID > 0 {
		killed += killGroupOf(st.containerdPID)
	}
	if killed += killRuntime(st); killed > 0 {
		left = append(left, fmt.Sprintf("%d processes killed", killed))
		time.Sleep(500 * time.Millisecond) // their mounts and cgroups go once they are gone
	}
	n, err := mounts.UnmountUnder(b.data, b.agentData, st.runDir)
	if err != nil {
		errs = append(errs, err)
	}
	if n > 0 {
		left = append(left, fmt.Sprintf("%d mounts detached", n))
	}
	if err := removeCgroupTree(b.cgroupRoot, false); err != nil {
		errs = append(errs, err)
	}
	if err := removeRunTraces(st.runDir, st.data); err != nil {
		errs = append(errs, err)
	}
	for _, dir := range []string{b.data, b.agentData, st.runDir} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return left, errs
}

// firstLine is an error's first line.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// killRuntime kills, with SIGKILL, what the run's containerd left: its
// shims with their descendants (the containers) and any process run from
// the node's bin directory (a CNI plugin), as A's runtime component does
// after its child exited (runtime.KillLeftovers); it returns how many.
func killRuntime(st *runState) int {
	return noderuntime.KillLeftovers(0, st.socket, filepath.Join(st.data, "agent", "bin"), 5*time.Second).Total()
}

// removeRunTraces removes what a run leaves on the host outside its
// directories: libcni's cache entries (/var/lib/cni/results, whose path
// cannot be configured) of the run's network namespaces, which name the
// runtime's run directory, and the kubelet's links to its containers'
// logs (/var/log/containers), which point into the data dir. Nobody
// else's: the node e2e tests use the same network name.
func removeRunTraces(runDir, data string) error {
	var errs []error
	results, _ := filepath.Glob("/var/lib/cni/results/*")
	for _, f := range results {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(`"netns":"`+runDir+`/`)) {
			errs = append(errs, os.Remove(f))
		}
	}
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, data+"/") {
			errs = append(errs, os.Remove(l))
		}
	}
	return errors.Join(errs...)
}

// stopProcess sends SIGTERM and waits for the exit, SIGKILL after grace.
func stopProcess(cmd *exec.Cmd, grace time.Duration) error {
	if cmd.ProcessState != nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && !exit.Exited() {
			return nil // killed by a signal: SIGTERM's default
		}
		return err
	case <-time.After(grace):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("not exited %s after SIGTERM: killed", grace)
	}
}

// killGroupOf kills process group pgid (the driver starts each process
// as the leader of its own) and returns how many of it were alive.
func killGroupOf(pgid int) int {
	n := 0
	table, _ := proctree.Read()
	for _, pid := range table.Group(pgid) {
		if table[pid].State != "Z" {
			n++
		}
	}
	if n > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return n
}

// removeSandboxes stops and removes every pod sandbox through the CRI as
// A's runtime does at its stop (package sandboxes), and returns how many
// it removed.
func removeSandboxes(ctx context.Context, socket string) (int, error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return sandboxes.RemoveAll(ctx, runtimeapi.NewRuntimeServiceClient(conn), klog.Background())
}

// cgroupHierarchies are the mounted cgroup hierarchies' directories.
func cgroupHierarchies() []string {
	var out []string
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range dirs {
		if st, err := os.Lstat(h); err == nil && st.IsDir() {
			out = append(out, h)
		}
	}
	return out
}

// makeCgroupRoot makes the kubelet's --cgroup-root in every hierarchy
// (it must exist), with cpuset's CPUs and memory nodes, as the e2e tests
// make their agent's (agentCgroupRoot).
func makeCgroupRoot(name string) error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if filepath.Base(h) != "cpuset" {
			continue
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// removeCgroupTree removes the cgroups under name in every hierarchy,
// deepest first, and, withRoot, name itself; a cgroup whose processes are
// still leaving is retried for 10 s.
func removeCgroupTree(name string, withRoot bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var errs []error
		for _, h := range cgroupHierarchies() {
			root := filepath.Join(h, name)
			var dirs []string
			_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && (withRoot || p != root) {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
				}
			}
		}
		if len(errs) == 0 || time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// netns is a network namespace the driver made for one run, held by an
// open file: it goes once the file is closed and no process is left in it.
type netns struct{ f *os.File }

// newNetns makes a network namespace and sets it up with nodeNetnsScript.
func newNetns() (*netns, error) {
	var ns *netns
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		ns = &netns{f: f}
		if out, err := exec.Command("sh", "-c", nodeNetnsScript).CombinedOutput(); err != nil {
			return fmt.Errorf("setting up the run's network namespace: %w: %s", err, out)
		}
		return nil
	})
	if err != nil && ns != nil {
		ns.close()
		ns = nil
	}
	return ns, err
}

// close lets the namespace go.
func (n *netns) close() { _ = n.f.Close() }

// onThread runs f on an OS thread of its own, which f may move into
// another network namespace: the thread goes back to the driver's
// afterwards, or, if that fails, ends with f's goroutine.
func onThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		err = f()
		if rerr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); rerr != nil {
			errc <- errors.Join(err, fmt.Errorf("back to the driver's network namespace: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	return <-errc
}

// do runs f on a thread in the namespace.
func (n *netns) do(f func() error) error {
	return onThread(func() error {
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("entering the run's network namespace: %w", err)
		}
		return f()
	})
}

// start starts cmd in the namespace (a child inherits the network
// namespace of the thread that forks it), the leader of a process group
// of its own, killed if the driver dies.
func (n *netns) start(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return n.do(cmd.Start)
}

// dial connects from inside the namespace (the socket belongs to the
// namespace it was made in), for the driver's clients.
func (n *netns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.do(func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// nodeFigure is one quantity of the node report, per run; ok is false
// where a run has no such figure.
type nodeFigure struct {
	name, unit string
	get        func(r nodeResult) (float64, bool)
}

// mib converts KiB to MiB for the tables.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// secs converts a duration to seconds for the tables.
func secs(d time.Duration) float64 { return d.Seconds() }

// nodeFigures are the main table's rows: what both sides have.
var nodeFigures = []nodeFigure{
	{"exec → Node Ready", "s", func(r nodeResult) (float64, bool) { return secs(r.nodeReady), true }},
	{"workload created → all Pods Running and Ready", "s", func(r nodeResult) (float64, bool) { return secs(r.running), true }},
	{"RSS, all processes", "MiB", func(r nodeResult) (float64, bool) { v, _, _, _ := r.total(); return mib(v), true }},
	{"RSS anon, all processes", "MiB", func(r nodeResult) (float64, bool) { _, v, _, _ := r.total(); return mib(v), true }},
	{"PSS, all processes", "MiB", func(r nodeResult) (float64, bool) { _, _, v, _ := r.total(); return mib(v), true }},
	{"CPU, all processes, exec → all Running (the idle time included)", "s", func(r nodeResult) (float64, bool) { _, _, _, v := r.total(); return secs(v), true }},
	{"CPU, everything (with reaped children, shims, containers)", "s", func(r nodeResult) (float64, bool) { return secs(r.allCPU()), true }},
	{"SIGTERM → all exited", "s", func(r nodeResult) (float64, bool) { return secs(r.stop), true }},
}

// splitFigure is a figure of the node alone: B's node processes; A's
// containerd and, for the kubelet and kube-proxy inside the server, the
// server less B's control plane of the same pair (an estimate).
type splitFigure struct {
	name, unit string
	get        func(procFigures) float64
}

// splitFigures are the node table's quantities.
var splitFigures = []splitFigure{
	{"RSS", "MiB", func(p procFigures) float64 { return mib(p.rss) }},
	{"RSS anon", "MiB", func(p procFigures) float64 { return mib(p.anon) }},
	{"PSS", "MiB", func(p procFigures) float64 { return mib(p.pss) }},
	{"CPU", "s", func(p procFigures) float64 { return secs(p.cpu) }},
}

// nodeParts are, for a pair, A's and B's figures of the node's parts:
// containerd; the kubelet and kube-proxy (A: k3s-like less B's server);
// the node (their sum).
func nodeParts(a, b nodeResult, get func(procFigures) float64) (parts [3][2]float64, ok bool) {
	aSrv, ok1 := a.proc("k3s-like server")
	aCtr, ok2 := a.proc("containerd")
	bSrv, ok3 := b.proc("k3s-like server --disable-agent")
	bCtr, ok4 := b.proc("containerd")
	bKub, ok5 := b.proc("kubelet")
	bPrx, ok6 := b.proc("kube-proxy")
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return parts, false
	}
	parts[0] = [2]float64{get(aCtr), get(bCtr)}
	parts[1] = [2]float64{get(aSrv) - get(bSrv), get(bKub) + get(bPrx)}
	parts[2] = [2]float64{parts[0][0] + parts[1][0], parts[0][1] + parts[1][1]}
	return parts, true
}

// runsOf are the runs of a kind, in pair order.
func runsOf(rs []nodeResult, kind string) []nodeResult {
	var out []nodeResult
	for _, r := range rs {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// figureValues are a figure's values over runs.
func figureValues(rs []nodeResult, get func(nodeResult) (float64, bool)) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := get(r); ok {
			out = append(out, v)
		}
	}
	return out
}

// renderNode is the node benchmark's Markdown report.
func renderNode(b *nodeBench, c config, rs []nodeResult, took time.Duration, load0, built string) string {
	as, bs := runsOf(rs, kindA), runsOf(rs, kindB)
	t := nodeTables{rs: rs, as: as, bs: bs, pairs: min(len(as), len(bs)), n: c.node.pods}
	var sb strings.Builder
	renderNodeSetup(&sb, b, c, rs, took, load0, built)
	renderFootprint(&sb, b, rs, c.node.pods)
	tables := []func(*strings.Builder){t.byProcess, t.shims, t.machineAndLeftovers}
	if t.pairs > 0 {
		tables = []func(*strings.Builder){t.aAgainstB, t.nodeAlone, t.byProcess, t.shims, t.pairByPair, t.machineAndLeftovers}
	}
	for _, table := range tables {
		table(&sb)
	}
	return sb.String()
}

// renderNodeSetup is the report's head: what was run, how, and how it is
// measured.
func renderNodeSetup(sb *strings.Builder, b *nodeBench, c config, rs []nodeResult, took time.Duration, load0, built string) {
	n := c.node.pods
	fmt.Fprintf(sb, "# make bench-node — the node in the server's process (A) against the node as processes (B); its footprint after against before (issue 46)\n\n")
	fmt.Fprintf(sb, "- commit: %s\n", built)
	nice := "unknown"
	if f := proctree.Stat(os.Getpid()); len(f) > 16 {
		nice = f[16]
	}
	fmt.Fprintf(sb, "- machine: %d CPUs (nproc), %s, %s/%s, %s; the driver, and everything it ran, at nice %s\n", runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version(), nice)
	fmt.Fprintf(sb, "- date: %s; the runs took %s (each run: exec → %d Pods Running, then the stop and the cleanup)\n", time.Now().UTC().Format(time.RFC3339), took.Round(time.Second), n)
	fmt.Fprintf(sb, "- binaries: %s\n", strings.Join(b.versions, "; "))
	fmt.Fprintf(sb, "- A: `k3s-like server` with its node: the kubelet and kube-proxy run as goroutines of the server's process, containerd (the server's child), the runc shim and the CNI plugins helper programs embedded in the binary (upstream's main packages at the pinned versions; unpacked into `DATA_DIR/data/HASH/bin`, `DATA_DIR/agent/bin` a link to it). "+
		"B: the same binary's `server --disable-agent --bind-address=0.0.0.0 --advertise-address=%s` as the control plane (the driver checks, from both `--dry-run`s, that kube-apiserver, kube-scheduler and kube-controller-manager get exactly A's arguments), "+
		"%s `--config` with the configuration and helper programs A's server wrote (`agent/etc`, `agent/bin` and the `data/HASH/bin` it links to, taken from the first A run; the data dir has the same path in every run, so the files are byte for byte A's), "+
		"and the upstream `kubelet` and `kube-proxy` built from the same k8s.io/kubernetes, with the arguments A's `server --dry-run --output json` prints for its kubelet and kube-proxy (flags only; the one KubeletConfiguration file, below, is the same file in both).\n", nodeIP, b.containerdB())
	if b.before != "" {
		fmt.Fprintf(sb, "- A-before: A with `%s`, the same source built without the `embedhelpers` tag (make bench-node: the release build's flags otherwise): its node runs the binary itself as the shim and the CNI plugins (`agent/bin` a directory of links to it), the previous layout.\n", filepath.Base(b.before))
	}
	fmt.Fprintf(sb, "- agent (and agent-before, with the before binary): `server --disable-agent` as B's control plane, and once its `/readyz` answers, `k3s-like agent --server=https://%s:6443 --token-file=DATA_DIR/token` with a data dir of its own and A's node flags, in the same network namespace: the agent's process runs the kubelet, kube-proxy and flannel, containerd is its child. Only the agent's processes are its figures.\n", nodeIP)
	fmt.Fprintf(sb, "- B's supervisor (the driver) does what A's server does for its node, in A's order: it waits for containerd's CRI and imports `DATA_DIR/%s/pause.tar` (a copy of k3s-like's import: pinned, unpacked for overlayfs) before the kubelet may start; writes the node's certificates and kubeconfig with `pki.Files.EnsureNode` from the cluster's CAs once the server wrote them (A's `prepareNode`); starts the kubelet once the apiserver's `/readyz` answers, and kube-proxy once the kubelet's `/healthz` answers (and, for a release whose kube-proxy used the kubelet's kubeconfig, once node-join's `%s` binding exists); and writes A's CNI configuration, with this node's pod CIDR, once the Node has one (polling every second, as A's `cni-config`). That work of the driver's is in no figure; in A the same work (the image import's client side, the node's PKI, the CNI configuration's writer, and the node's feature reporter, which B lacks) is in the server's.\n", imagesDir, proxierBinding)
	fmt.Fprintf(sb, "- both: one run at a time in a network namespace the driver makes (the node e2e tests' set-up: loopback, a veth pair, %s/24 as the node IP and the default route; no packet leaves it), every server port at its default inside it; the same data dir path; the node `%s` with `--kubelet-arg=cgroup-root=%s` (a kubelet removes the pod cgroups it does not know under its root: not the host's) and `--kubelet-arg=config=` a KubeletConfiguration with only `podLogsDir` under the data dir (likewise for pod log directories); `--disable=coredns`, so that the node runs the benchmark's Pods only. "+
		"The workload: once the Node is Ready and has idled %s (the 0-Pod figures are taken then), a namespace and, once its default ServiceAccount exists, one Deployment of %d Pods of the pause image (`imagePullPolicy: Never`, the node imported it); done when the driver's watch sees %d Pods Running with Ready True (the %d-Pod figures). Then the CNI probe (below). Nothing is pulled.\n", nodeIP, benchNodeName, b.cgroupRoot, b.c.idle, n, n, n)
	fmt.Fprintf(sb, "- figures: Node Ready from the exec of the first process (A: the server; B: the server, then containerd at once; agent: the server, the agent once the server is ready); the workload's time from its creation; RSS = VmRSS, anon = RssAnon (`/proc/PID/status`), PSS = `Pss` of `/proc/PID/smaps_rollup` (shared pages divided among the processes that map them: the server, containerd and, before, every shim and CNI plugin map the same binary, which VmRSS counts in each) and CPU = utime+stime (`/proc/PID/stat`), summed over the processes when all %d Pods run: A the server and its containerd child, B the server, containerd, the kubelet and kube-proxy. "+
		"The shims (one `containerd-shim-runc-v2` per Pod: the helper program; before, the k3s-like binary re-executed), their containers, and the CPU of children that exited and were reaped (containerd's: the CNI plugins and `shim start`; the shims': runc) are in no process total: they are given apart, and in the row \"CPU, everything\".\n", n)
	fmt.Fprintf(sb, "- stop: SIGTERM → all exited. A: to the server (its harness stops the node, the runtime removes the pod sandboxes through the CRI within half of `--stop-timeout`, default 8 s, SIGTERMs containerd, kills its process group after 10 s, kills the shims with their containers; the server then detaches the node's mounts). B: the driver does the same steps with the same budgets: kube-proxy, the kubelet, the sandboxes (%s), containerd (%s), the shims, containers and CNI plugins killed, the server, each after the previous exited, the mounts detached. "+
		"Then, in both, the driver kills whatever is left (process groups, shims, containers, CNI plugins), detaches what is left mounted under the data dir and `%s`, removes the pod cgroups, the run's libcni cache entries (`/var/lib/cni/results`) and container log links (`/var/log/containers`), the directories and the namespace; what it found left is named at the end.\n", sandboxSweep, runtimeGrace, b.runDir)
	fmt.Fprintf(sb, "- A/B and after/before: pair by pair, and the median of the pairs' ratios; each pair runs %s in that order. The driver's flags: `-node %d -pairs %d -node-idle %s -node-cni-probes %d` (make bench-node's BENCH_NODE_PODS, BENCH_NODE_PAIRS).\n", strings.Join(b.kinds, ", "), n, c.pairs, b.c.idle, b.c.cniProbes)
	sb.WriteString(nodeSharedNote(rs, load0))
}

// nodeTables are the node report's tables, from the runs rs: A's and B's,
// pairs of them, at n Pods.
type nodeTables struct {
	rs, as, bs []nodeResult
	pairs, n   int
}

// pairRatio is A/B of a figure pair by pair, where both runs have it.
func (t nodeTables) pairRatio(get func(nodeResult) (float64, bool)) []float64 {
	var out []float64
	for i := range t.pairs {
		va, ok1 := get(t.as[i])
		vb, ok2 := get(t.bs[i])
		if ok1 && ok2 {
			out = append(out, va/vb)
		}
	}
	return out
}

// aAgainstB is every figure, A against B.
func (t nodeTables) aAgainstB(sb *strings.Builder) {
	fmt.Fprintf(sb, "\n## A against B (%d Pods, %d pairs)\n\n| figure | A median (min–max) | B median (min–max) | A/B |\n|---|---|---|---|\n", t.n, t.pairs)
	for _, f := range nodeFigures {
		fmt.Fprintf(sb, "| %s | %s | %s | %s |\n", f.name, span(figureValues(t.as, f.get), f.unit), span(figureValues(t.bs, f.get), f.unit), ratio(med(t.pairRatio(f.get))))
	}
}

// nodeAlone is containerd, the kubelet and kube-proxy, and the node: B's
// processes, A's estimated.
func (t nodeTables) nodeAlone(sb *strings.Builder) {
	fmt.Fprintf(sb, "\n## The node alone\n\nB's node is three processes. A's kubelet and kube-proxy share the server's process and cannot be measured apart: the rows below give A's server less B's control plane of the same pair (`k3s-like server --disable-agent`, the same control plane with the same arguments serving the same node) as an **estimate** of them, not a measurement: the same control plane in another process under the same load, not the same memory (A's process shares one Go runtime, heap and binary between them), and it also holds what A's server does for its own node (the image import's client, the node's PKI, the CNI configuration's writer, the node's feature reporter), which in B the driver does, in no figure. containerd is a process of its own in both.\n\n")
	fmt.Fprintf(sb, "| part | figure | A median (min–max) | B median (min–max) | A/B |\n|---|---|---|---|---|\n")
	partNames := []string{"containerd", "kubelet + kube-proxy (A: estimate)", "the node (A: estimate)"}
	for part, name := range partNames {
		for _, f := range splitFigures {
			var va, vb, rr []float64
			for i := range t.pairs {
				p, ok := nodeParts(t.as[i], t.bs[i], f.get)
				if !ok {
					continue
				}
				va, vb, rr = append(va, p[part][0]), append(vb, p[part][1]), append(rr, p[part][0]/p[part][1])
			}
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %s |\n", name, f.name, span(va, f.unit), span(vb, f.unit), ratio(med(rr)))
		}
	}
}

// kindsRun are the kinds of run in rs, in allKinds' order.
func kindsRun(rs []nodeResult) []string {
	var out []string
	for _, k := range allKinds {
		if len(runsOf(rs, k)) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// byProcess is each process's figures, with all Pods running and idle.
func (t nodeTables) byProcess(sb *strings.Builder) {
	for _, idle := range []bool{false, true} {
		t.byProcessAt(sb, idle)
	}
}

// byProcessAt is each process's figures, idle (0 Pods) or loaded.
func (t nodeTables) byProcessAt(sb *strings.Builder, idle bool) {
	if idle {
		fmt.Fprintf(sb, "\n## By process (medians, 0 Pods: the Node Ready and idle; CPU since exec)\n\n")
	} else {
		fmt.Fprintf(sb, "\n## By process (medians, when all %d Pods run)\n\n", t.n)
	}
	sb.WriteString("| run | process | RSS | RSS anon | PSS | CPU | reaped children's CPU |\n|---|---|---|---|---|---|---|\n")
	for _, kind := range kindsRun(t.rs) {
		side := runsOf(t.rs, kind)
		procs := func(r nodeResult) []procFigures {
			if idle {
				return r.idle
			}
			return r.procs
		}
		for _, p := range procs(side[0]) {
			get := func(f func(procFigures) float64) func(nodeResult) (float64, bool) {
				return func(r nodeResult) (float64, bool) {
					q, ok := procIn(procs(r), p.name)
					return f(q), ok
				}
			}
			fmt.Fprintf(sb, "| %s | %s | %s | %s | %s | %s | %s |\n", kind, p.name,
				span(figureValues(side, get(func(q procFigures) float64 { return mib(q.rss) })), "MiB"),
				span(figureValues(side, get(func(q procFigures) float64 { return mib(q.anon) })), "MiB"),
				span(figureValues(side, get(func(q procFigures) float64 { return mib(q.pss) })), "MiB"),
				span(figureValues(side, get(func(q procFigures) float64 { return secs(q.cpu) })), "s"),
				span(figureValues(side, get(func(q procFigures) float64 { return secs(q.reaped) })), "s"))
		}
	}
}

// shims is the shims' and the containers' figures.
func (t nodeTables) shims(sb *strings.Builder) {
	kinds := kindsRun(t.rs)
	fmt.Fprintf(sb, "\n## The shims and the containers (%d Pods; in no process total)\n\n| figure |", t.n)
	for _, k := range kinds {
		fmt.Fprintf(sb, " %s median (min–max) |", k)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(kinds)) + "\n")
	shim := []nodeFigure{
		{"shims", "", func(r nodeResult) (float64, bool) { return float64(r.shims.shims), true }},
		{"processes (shims, containers)", "", func(r nodeResult) (float64, bool) { return float64(r.shims.procs), true }},
		{"RSS", "MiB", func(r nodeResult) (float64, bool) { return mib(r.shims.rss), true }},
		{"RSS anon", "MiB", func(r nodeResult) (float64, bool) { return mib(r.shims.anon), true }},
		{"PSS", "MiB", func(r nodeResult) (float64, bool) { return mib(r.shims.pss), true }},
		{"CPU", "s", func(r nodeResult) (float64, bool) { return secs(r.shims.cpu), true }},
		{"reaped children's CPU (runc)", "s", func(r nodeResult) (float64, bool) { return secs(r.shims.reaped), true }},
	}
	for _, f := range shim {
		fmt.Fprintf(sb, "| %s |", f.name)
		for _, k := range kinds {
			fmt.Fprintf(sb, " %s |", span(figureValues(runsOf(t.rs, k), f.get), f.unit))
		}
		sb.WriteString("\n")
	}
}

// pairByPair is A/B of every figure, pair by pair, and their medians.
func (t nodeTables) pairByPair(sb *strings.Builder) {
	fmt.Fprintf(sb, "\n## A/B pair by pair\n\n| pair |")
	for _, f := range nodeFigures {
		fmt.Fprintf(sb, " %s |", f.name)
	}
	sb.WriteString("\n|---|" + strings.Repeat("---|", len(nodeFigures)) + "\n")
	for i := range t.pairs {
		fmt.Fprintf(sb, "| %d |", i+1)
		for _, f := range nodeFigures {
			va, _ := f.get(t.as[i])
			vb, _ := f.get(t.bs[i])
			fmt.Fprintf(sb, " %s |", ratio(va/vb))
		}
		sb.WriteString("\n")
	}
	sb.WriteString("| **median** |")
	for _, f := range nodeFigures {
		fmt.Fprintf(sb, " **%s** |", ratio(med(t.pairRatio(f.get))))
	}
	sb.WriteString("\n")
}

// machineAndLeftovers is the other processes' CPU, and what the stops
// left.
func (t nodeTables) machineAndLeftovers(sb *strings.Builder) {
	other := func(r nodeResult) (float64, bool) { return secs(r.otherCPU), true }
	var during []string
	for _, k := range kindsRun(t.rs) {
		during = append(during, fmt.Sprintf("during %s's runs %s", k, span(figureValues(runsOf(t.rs, k), other), "s")))
	}
	fmt.Fprintf(sb, "\nThe machine's other processes used, exec → all Running, median (min–max): %s of CPU.\n", strings.Join(during, ", "))
	var left []string
	for _, r := range t.rs {
		if r.leftover != "" {
			left = append(left, fmt.Sprintf("%s%d: %s", r.kind, r.pair, r.leftover))
		}
	}
	if len(left) == 0 {
		sb.WriteString("\nNo run left anything for the driver to clean after its stop.\n")
	} else {
		fmt.Fprintf(sb, "\nWhat the stop left, which the driver then cleaned: %s.\n", strings.Join(left, "; "))
	}
}

// nodeSharedNote says how much CPU the machine's other processes used
// during the runs (exec → all Running), as the control-plane report does.
func nodeSharedNote(rs []nodeResult, load0 string) string {
	var total, window time.Duration
	var worst float64
	for _, r := range rs {
		total += max(0, r.otherCPU)
		window += r.window
		worst = max(worst, r.otherCPU.Seconds()/r.window.Seconds())
	}
	avg := total.Seconds() / window.Seconds()
	load := fmt.Sprintf("; load average (1, 5, 15 min) before the runs %s, after %s", load0, loadAverage())
	if avg < 0.1 && worst < 0.25 {
		return fmt.Sprintf("- the machine: other processes used %.2f CPUs on average during the runs (exec → all Running; at most %.2f in one run): not shared to speak of%s.\n", avg, worst, load)
	}
	return fmt.Sprintf("- **the machine was shared**: other processes used %.2f of the %d CPUs on average during the runs (exec → all Running), %.2f in the busiest run%s. A and B alternate, so both met it, but not equally (see the other processes' CPU during A's and B's runs at the end): the times are noisier than the memory.\n", avg, runtime.NumCPU(), worst, load)
}

// containerdB says what B's containerd is, for the report.
func (b *nodeBench) containerdB() string {
	if b.c.containerd == "" {
		return "`k3s-like containerd`"
	}
	return "upstream's `containerd` (`" + filepath.Base(b.c.containerd) + "`: its `cmd/containerd`, the same module version and build flags as A's, stripped as A's binary is)"
}

// isContainerd reports whether a command line (arguments joined by
// spaces) is the node's containerd: the embedded helper program
// (DATA_DIR/agent/bin/containerd --config …) or, built without helpers,
// the binary's personality (k3s-like containerd --config …).
func isContainerd(cmdline string) bool {
	exe, rest, _ := strings.Cut(cmdline, " ")
	return strings.Contains(cmdline, " containerd --config ") ||
		(filepath.Base(exe) == "containerd" && strings.HasPrefix(rest, "--config "))
}
