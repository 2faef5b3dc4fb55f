// Command bench measures, side by side on one machine, the k3s-like single
// process (A) against the upstream way (B): etcd and the real
// kube-apiserver, kube-scheduler and kube-controller-manager binaries as
// four processes with the same flags, certificates and port layout. It
// alternates A B A B … and writes a Markdown report. Any run that does not
// reach ready or leaves a Pod unbound fails the whole benchmark.
//
// Run it with `make bench`, which builds the binaries first.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/harness"
)

type config struct {
	k3sLike, etcd, apiserver, scheduler, kcm string
	pairs                                    int
	nodes, deployments, replicas             int
	out                                      string
	extra                                    string // appended verbatim to the report (go test -bench results)
}

func main() {
	var c config
	flag.StringVar(&c.k3sLike, "k3s-like", "bin/k3s-like", "the k3s-like binary")
	flag.StringVar(&c.etcd, "etcd", "bench/out/etcd", "the etcd binary")
	flag.StringVar(&c.apiserver, "kube-apiserver", "bench/out/kube-apiserver", "")
	flag.StringVar(&c.scheduler, "kube-scheduler", "bench/out/kube-scheduler", "")
	flag.StringVar(&c.kcm, "kube-controller-manager", "bench/out/kube-controller-manager", "")
	flag.IntVar(&c.pairs, "pairs", 3, "A/B pairs, alternated")
	flag.IntVar(&c.nodes, "nodes", 10, "Node objects of the workload")
	flag.IntVar(&c.deployments, "deployments", 50, "Deployments of the workload")
	flag.IntVar(&c.replicas, "replicas", 3, "replicas per Deployment")
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "the report")
	flag.StringVar(&c.extra, "extra", "", "a file whose content is appended to the report")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}

// result is one measured run.
type result struct {
	kind          string // A or B
	toReady       time.Duration
	rssReady      int64 // KiB, summed over the processes
	rssLoaded     int64
	cpu           time.Duration
	stop          time.Duration
	workload      time.Duration
	harnessPhases time.Duration // A only: validate + parse + barrier
}

func run(c config) error {
	var results []result
	for i := range c.pairs {
		for _, kind := range []string{"A", "B"} {
			fmt.Fprintf(os.Stderr, "bench: pair %d, run %s\n", i+1, kind)
			r, err := measure(c, kind)
			if err != nil {
				return fmt.Errorf("pair %d run %s: %w", i+1, kind, err)
			}
			fmt.Fprintf(os.Stderr, "bench: %s ready %s, RSS %d/%d MiB, CPU %s, stop %s\n", kind, r.toReady.Round(time.Millisecond), r.rssReady/1024, r.rssLoaded/1024, r.cpu.Round(time.Millisecond), r.stop.Round(time.Millisecond))
			results = append(results, r)
		}
	}
	report, err := render(c, results)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.out, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Print(report)
	return nil
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

// serverArgs are the k3s-like flags of a run; B takes its components' flags
// from `--dry-run` of the same, so both run exactly the same flags.
func serverArgs(dir string, p ports) []string {
	return []string{"server",
		"--data-dir=" + dir,
		"--https-listen-port=" + strconv.Itoa(p.https),
		"--etcd-client-port=" + strconv.Itoa(p.etcdClient),
		"--etcd-peer-port=" + strconv.Itoa(p.etcdPeer),
		"--status-address=127.0.0.1:" + strconv.Itoa(p.status),
		"--kube-scheduler-arg=secure-port=" + strconv.Itoa(p.scheduler),
		"--kube-controller-manager-arg=secure-port=" + strconv.Itoa(p.kcm),
		// Leader election on in both, so that "ready" includes both leases.
		"--kube-scheduler-arg=leader-elect=true",
		"--kube-controller-manager-arg=leader-elect=true",
	}
}

func measure(c config, kind string) (result, error) {
	r := result{kind: kind}
	dir, err := os.MkdirTemp("", "kubeharness-bench-"+kind+"-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	p, err := freePorts()
	if err != nil {
		return r, err
	}
	var procs []*exec.Cmd
	logs := &procLogs{}
	start := time.Now()
	switch kind {
	case "A":
		cmd := exec.Command(c.k3sLike, serverArgs(dir, p)...)
		cmd.Stdout, cmd.Stderr = logs.for_("k3s-like"), logs.for_("k3s-like")
		if err := cmd.Start(); err != nil {
			return r, err
		}
		procs = append(procs, cmd)
	case "B":
		procs, err = startUpstream(c, dir, p, logs)
		if err != nil {
			killAll(procs)
			return r, err
		}
	}
	defer killAll(procs)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kubeconfig := datadir.PKI(dir).AdminKubeconfig() // the server's layout, in A and B
	err = waitFile(ctx, kubeconfig, procs)
	var client *kubernetes.Clientset
	var restCfg *rest.Config
	if err == nil {
		client, restCfg, err = adminClient(kubeconfig)
	}
	if err == nil {
		err = waitReady(ctx, client, restCfg, p, procs)
	}
	if err != nil {
		return r, fmt.Errorf("%w\n--- last log lines ---\n%s", err, logs.tails(20))
	}
	r.toReady = time.Since(start)
	r.rssReady = rss(procs)
	if kind == "A" {
		if r.harnessPhases, err = harnessPhases(p); err != nil {
			return r, err
		}
	}
	w0 := time.Now()
	if err := workload(ctx, client, c); err != nil {
		return r, fmt.Errorf("workload: %w\n--- last log lines ---\n%s", err, logs.tails(20))
	}
	r.workload = time.Since(w0)
	r.rssLoaded = rss(procs)
	r.cpu = cpu(procs)
	// Stop in reverse order of start, each after the previous exited, as a
	// supervisor of B must (an apiserver whose etcd went first hangs) and as
	// A's harness does inside the process.
	s0 := time.Now()
	for i := len(procs) - 1; i >= 0; i-- {
		cmd := procs[i]
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			return r, fmt.Errorf("%s did not exit within 30 s of SIGTERM", cmd.Path)
		}
	}
	r.stop = time.Since(s0)
	return r, nil
}

// startUpstream runs B: the same flags as A's components (from k3s-like's
// --dry-run), the same PKI layout (components/pki, as k3s-like makes it),
// etcd with the same ports and certificates.
func startUpstream(c config, dir string, p ports, logs *procLogs) ([]*exec.Cmd, error) {
	out, err := exec.Command(c.k3sLike, append(serverArgs(dir, p), "--dry-run", "--output", "json")...).Output()
	if err != nil {
		return nil, fmt.Errorf("k3s-like --dry-run: %w", err)
	}
	args, err := dryRunArgs(out)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		if len(args[name]) == 0 {
			return nil, fmt.Errorf("no %s arguments in the dry-run output", name)
		}
	}
	// The PKI as k3s-like makes it: its layout, and the service IP of the
	// service CIDR its apiserver is given.
	layout := datadir.PKI(dir)
	cidr, _ := kubeargs.Value(args["kube-apiserver"], "service-cluster-ip-range")
	cfg, err := controlplane.PKIConfig(layout, controlplane.Settings{APIServerPort: p.https, ServiceClusterIPRange: cidr})
	if err != nil {
		return nil, err
	}
	files, err := pki.Ensure(cfg)
	if err != nil {
		return nil, err
	}
	if err := pki.WriteKubeconfig(datadir.AdminKubeconfig(dir), cfg.APIServerURL, files.ServerCA.CertPEM(), files.Admin); err != nil {
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
	}
	// As a supervisor of four processes must: the upstream scheduler and
	// controller-manager exit at once when the apiserver does not answer
	// yet, so they are started when its /readyz answers (A's harness orders
	// its components the same way, inside the process).
	var procs []*exec.Cmd
	start := func(bin string, args []string) error {
		cmd := exec.Command(bin, args...)
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
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := start(c.scheduler, args["kube-scheduler"]); err != nil {
		return procs, err
	}
	return procs, start(c.kcm, args["kube-controller-manager"])
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
		if state := procState(cmd.Process.Pid); state == "Z" {
			return fmt.Errorf("%s exited early", cmd.Path)
		}
	}
	return nil
}

// waitReady: apiserver /readyz, scheduler and controller-manager /healthz
// (with the admin client certificate), both leases held.
func waitReady(ctx context.Context, c *kubernetes.Clientset, cfg *rest.Config, p ports, procs []*exec.Cmd) error {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	health := tlsCfg.Clone()
	health.InsecureSkipVerify = true // the components' self-signed serving certificates
	health.RootCAs = nil
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

// workload: Nodes, then Deployments, then wait for every Pod to be bound.
func workload(ctx context.Context, c *kubernetes.Clientset, cfg config) error {
	q := resource.MustParse
	for i := range cfg.nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i)}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			return err
		}
		n.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("64Gi"), corev1.ResourcePods: q("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("64Gi"), corev1.ResourcePods: q("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	for i := range cfg.deployments {
		labels := map[string]string{"app": fmt.Sprintf("load-%02d", i)}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%02d", i), Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(cfg.replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/load:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")}}}}},
				},
			},
		}
		if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	want := cfg.deployments * cfg.replicas
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		bound := 0
		if err == nil {
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			if len(pods.Items) == want && bound == want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Pods bound after 3 minutes (%d exist)", bound, want, len(pods.Items))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// harnessPhases reads A's phase timings from its /components.
func harnessPhases(p ports) (time.Duration, error) {
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(p.status) + "/components")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Phases []harness.PhaseTiming `json:"phases"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, err
	}
	var d time.Duration
	for _, ph := range st.Phases {
		switch ph.Phase {
		case harness.PhaseValidate, harness.PhaseParse, harness.PhaseBarrier:
			d += ph.Duration
		}
	}
	if d == 0 {
		return 0, errors.New("no phase timings in /components")
	}
	return d, nil
}

// rss sums VmRSS (KiB) over the processes.
func rss(procs []*exec.Cmd) int64 {
	var sum int64
	for _, cmd := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
				n, _ := strconv.ParseInt(f[1], 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// cpu sums user+system time over the processes.
func cpu(procs []*exec.Cmd) time.Duration {
	var ticks int64
	for _, cmd := range procs {
		f := statFields(cmd.Process.Pid)
		if len(f) > 13 {
			u, _ := strconv.ParseInt(f[11], 10, 64)
			s, _ := strconv.ParseInt(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// statFields are /proc/PID/stat's fields after "(comm)": state is [0].
func statFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
}

func procState(pid int) string {
	if f := statFields(pid); len(f) > 0 {
		return f[0]
	}
	return ""
}

func killAll(procs []*exec.Cmd) {
	for _, cmd := range procs {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// procLogs keeps each process's output apart, for the failure message.
type procLogs struct {
	names []string
	bufs  map[string]*bytes.Buffer
}

func (l *procLogs) for_(name string) io.Writer {
	if l.bufs == nil {
		l.bufs = map[string]*bytes.Buffer{}
	}
	if l.bufs[name] == nil {
		l.bufs[name] = &bytes.Buffer{}
		l.names = append(l.names, name)
	}
	return l.bufs[name]
}

func (l *procLogs) tails(n int) string {
	var sb strings.Builder
	for _, name := range l.names {
		fmt.Fprintf(&sb, "--- %s ---\n%s\n", name, lastLines(l.bufs[name].String(), n))
	}
	return sb.String()
}
