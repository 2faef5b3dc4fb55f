package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/distro/k3s-like/test/machines"
)

// The embedded etcd as a cluster (k3s's managed etcd): servers on
// machines of their own (package machines), the first with --cluster-init,
// the others joining with --server and its token. Each figure is logged as
// an "HA ..." line; make faults runs TestHAEmbeddedEtcd with
// K3S_LIKE_HA_KILLS=5.

// haCluster is the servers of one embedded etcd cluster, server-I on
// machine I.
type haCluster struct {
	t       *testing.T
	lan     *machines.LAN
	dirs    []string
	node    bool // the servers run their nodes
	servers []*nodeServer
	args    [][]string // each server's arguments at its last start
}

func (c *haCluster) serverURL(i int) string {
	return "https://" + c.lan.Machines[i].IP.String() + ":6443"
}

// serverArgs are server i's flags: its node (or none), and with a node a
// cgroup root and pod logs directory of its own (several kubelets on one
// host).
func (c *haCluster) serverArgs(i int) []string {
	name := fmt.Sprintf("server-%d", i)
	args := []string{"server", "--data-dir=" + c.dirs[i], "--node-name=" + name}
	if !c.node {
		return append(args, "--disable-agent", "--bind-address=0.0.0.0", "--advertise-address="+c.lan.Machines[i].IP.String())
	}
	config := filepath.Join(c.dirs[i], "kubelet.yaml")
	require.NoError(c.t, os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: "+
		filepath.Join(c.dirs[i], "pod-logs")+"\n"), 0o600))
	return append(args, "--kubelet-arg=cgroup-root="+nodeCgroupRoot(c.t, name), "--kubelet-arg=config="+config)
}

// start starts server i with extra flags and remembers them for a restart.
func (c *haCluster) start(i int, extra ...string) *nodeServer {
	c.t.Helper()
	if c.args[i] == nil {
		c.args[i] = append(c.serverArgs(i), extra...)
	}
	s := startOnMachine(c.t, c.lan.Machines[i], c.dirs[i], c.args[i]...)
	c.servers[i] = s
	return s
}

// waitReady waits until server i said it is ready, and returns how long
// that took from its exec.
func (c *haCluster) waitReady(i int, timeout time.Duration) time.Duration {
	c.t.Helper()
	s := c.servers[i]
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			c.t.Fatalf("server-%d exited before it was ready: %v\n%s", i, s.exitErr, exitReport(s.log.String()))
		default:
		}
		if strings.Contains(s.log.String(), "kubectl get nodes\" logger=\"k3s-like\"") || strings.Contains(s.log.String(), `"ready in `) {
			return time.Since(s.started)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("server-%d not ready within %s\n%s", i, timeout, tail(s.log.String(), 60))
	return 0
}

// newHACluster starts server-0 with --cluster-init and servers 1..n-1
// joining it, one after another, each ready before the next starts; it
// logs how long each join took.
func newHACluster(t *testing.T, lan *machines.LAN, n int, node bool) *haCluster {
	t.Helper()
	c := &haCluster{t: t, lan: lan, node: node, servers: make([]*nodeServer, n), args: make([][]string, n)}
	for range n {
		c.dirs = append(c.dirs, t.TempDir())
	}
	c.start(0, "--cluster-init")
	t.Logf("HA server-0 (--cluster-init) ready %.1fs after its exec", c.waitReady(0, 2*time.Minute).Seconds())
	for i := 1; i < n; i++ {
		c.start(i, "--server="+c.serverURL(0), "--token-file="+c.token())
		ready := c.waitReady(i, 3*time.Minute)
		promoted := ""
		if line := lineWith(c.servers[i].log.String(), "Promoted this etcd member"); line != "" {
			promoted = " (" + line[strings.Index(line, "after="):] + ")"
		}
		t.Logf("HA server-%d joined: ready %.1fs after its exec%s", i, ready.Seconds(), promoted)
	}
	c.waitVoters(n, time.Minute)
	return c
}

// token is server-0's token file.
func (c *haCluster) token() string { return filepath.Join(c.dirs[0], "token") }

// alive are the servers running now.
func (c *haCluster) alive() []int {
	var out []int
	for i, s := range c.servers {
		if s == nil {
			continue
		}
		select {
		case <-s.exited:
		default:
			out = append(out, i)
		}
	}
	return out
}

// kubectl runs kubectl through the first running server that answers.
func (c *haCluster) kubectl(args ...string) (string, error) {
	var out string
	err := fmt.Errorf("no server runs")
	for _, i := range c.alive() {
		if out, err = c.servers[i].kubectlErr(args...); err == nil {
			return out, nil
		}
	}
	return out, err
}

// members lists the etcd members through server i (etcd-members -o json).
func (c *haCluster) members(i int) ([]haMember, error) {
	out, err := c.servers[i].run("etcd-members", "--data-dir="+c.dirs[i], "-o", "json")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var ms []haMember
	if err := json.Unmarshal([]byte(out), &ms); err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	return ms, nil
}

type haMember struct {
	Name, ID, Status string
	Leader           bool
}

// voters are the voting members' names, as a running server sees them,
// and the leader's index (-1: none).
func (c *haCluster) voters() ([]string, int) {
	for _, i := range c.alive() {
		ms, err := c.members(i)
		if err != nil {
			continue
		}
		var names []string
		leader := -1
		for _, m := range ms {
			if m.Status == "voter" {
				names = append(names, m.Name)
			}
			if m.Leader {
				leader, _ = strconv.Atoi(strings.TrimPrefix(m.Name, "server-"))
			}
		}
		sort.Strings(names)
		return names, leader
	}
	return nil, -1
}

// waitVoters waits until there are n voting members and a leader.
func (c *haCluster) waitVoters(n int, timeout time.Duration) {
	c.t.Helper()
	var got []string
	leader := -1
	require.Eventually(c.t, func() bool {
		got, leader = c.voters()
		return len(got) == n && leader >= 0
	}, timeout, time.Second, "%d voting etcd members and a leader (last: %v, leader %d)", n, &got, &leader)
}

// lineWith is the last line of log that contains s, or "".
func lineWith(log, s string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], s) {
			return lines[i]
		}
	}
	return ""
}

// haKills is how many leader kills TestHAEmbeddedEtcd makes:
// $K3S_LIKE_HA_KILLS (make faults: 5), else 1.
func haKills(t *testing.T) int { return envInt(t, "K3S_LIKE_HA_KILLS", 1) }

// TestHAEmbeddedEtcd: three servers, each on a machine with its node, form
// one etcd cluster (three voting members); an agent on a fourth machine
// joins through server-0 and runs two Pods. A writer on a fifth machine
// creates ConfigMaps at a steady rate through each server in turn. The
// etcd leader's server is killed (SIGKILL), K3S_LIKE_HA_KILLS times: the
// writes go on within a bound (the longest gap between acknowledged
// writes is logged; under 30 s is asserted, 10 s is the target), the
// killed server restarts and rejoins, the agent's Pods keep running and
// its node stays Ready throughout (its kubelet goes through its load
// balancer). No acknowledged write is lost. Deleting server-2's Node
// removes its member.
func TestHAEmbeddedEtcd(t *testing.T) {
	requireNodeHost(t)
	busybox := busyboxImage(t)
	lan := newLAN(t, 5)
	c := newHACluster(t, lan, 3, true)
	names, leader := c.voters()
	assert.Equal(t, []string{"server-0", "server-1", "server-2"}, names)
	t.Logf("HA etcd members: %v, leader server-%d", names, leader)

	agentDir := t.TempDir()
	agentArgs := append([]string{"agent", "--data-dir=" + agentDir}, clusterAgentArgs(t, lan.Machines[3], c.dirs[0], agentDir, "agent-0")...)
	for i, a := range agentArgs {
		if strings.HasPrefix(a, "--server=") {
			agentArgs[i] = "--server=" + c.serverURL(0)
		}
	}
	agent := startOnMachine(t, lan.Machines[3], agentDir, agentArgs...)
	ready := c.servers[0].waitNamedNodeReady("agent-0", agent, nodeReadyBound)
	t.Logf("HA agent-0 Ready %.1fs after its exec", ready.Seconds())
	c.servers[0].apply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: on-agent, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: on-agent}}
  template:
    metadata: {labels: {app: on-agent}}
    spec:
      nodeSelector: {kubernetes.io/hostname: agent-0}
      terminationGracePeriodSeconds: 1
      containers:
      - name: c
        image: %s
        imagePullPolicy: Never
        command: ["sh", "-c", "exec sleep 36000"]
`, busybox))
	c.servers[0].waitFor("2", podBound, "get", "deployment", "on-agent", "-o", "jsonpath={.status.readyReplicas}")
	podsBefore := c.podUIDs("app=on-agent")
	require.Len(t, podsBefore, 2)
	// The agent's load balancer learnt every server from the endpoints.
	require.Eventually(t, func() bool {
		return strings.Contains(agent.log.String(), `"The apiservers changed"`) &&
			strings.Contains(lineWith(agent.log.String(), `"The apiservers changed"`), lan.Machines[2].IP.String())
	}, 60*time.Second, time.Second, "the agent's load balancer knows the three servers")

	// The agent's node, watched throughout.
	watchCtx, stopWatch := context.WithCancel(t.Context())
	var notReady []string
	var watching sync.WaitGroup
	watching.Go(func() {
		for watchCtx.Err() == nil {
			out, err := c.kubectl("get", "node", "agent-0", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
			if err == nil && out != "True" {
				notReady = append(notReady, time.Now().Format(time.TimeOnly)+" "+out)
			}
			select {
			case <-watchCtx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	})

	_, err := c.kubectl("create", "namespace", "ha-writes")
	require.NoError(t, err)
	w := startWriter(t, lan.Machines[4], c)
	require.Eventually(t, func() bool { return w.acked() >= 50 }, time.Minute, 100*time.Millisecond, "50 writes acknowledged before the first kill")

	var gaps, rejoins []time.Duration
	for round := range haKills(t) {
		_, leader := c.voters()
		require.GreaterOrEqual(t, leader, 0)
		victim := c.servers[leader]
		killed := time.Now()
		require.NoError(t, syscall.Kill(victim.pid, syscall.SIGKILL))
		select {
		case <-victim.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("server-%d did not die of SIGKILL", leader)
		}
		require.Eventually(t, func() bool { return w.ackedAfter(killed) >= 20 }, time.Minute, 100*time.Millisecond,
			"round %d: writes go on after server-%d (the etcd leader) was killed", round, leader)
		gap := w.longestGap(killed.Add(-2*time.Second), time.Now())
		gaps = append(gaps, gap)
		_, newLeader := c.voters()
		t.Logf("HA round %d: killed server-%d, the etcd leader; longest gap between acknowledged writes %.2fs; new leader server-%d", round, leader, gap.Seconds(), newLeader)

		restarted := time.Now()
		c.start(leader)
		c.waitReady(leader, 3*time.Minute)
		c.waitVoters(3, 2*time.Minute)
		rejoins = append(rejoins, time.Since(restarted))
		t.Logf("HA round %d: server-%d restarted and rejoined (3 voting members) in %.1fs", round, leader, time.Since(restarted).Seconds())
		time.Sleep(6 * time.Second) // etcd adds or promotes only after 5 s of a healthy quorum
	}
	stopWatch()
	watching.Wait()
	acks, fails := w.stop()
	t.Logf("HA writes: %d acknowledged, %d failed", len(acks), fails)
	slices.Sort(gaps)
	t.Logf("HA write unavailability after a leader kill over %d kills: median %.2fs, worst %.2fs (gaps %v)", len(gaps), gaps[len(gaps)/2].Seconds(), gaps[len(gaps)-1].Seconds(), gaps)
	for _, g := range gaps {
		assert.Less(t, g, 30*time.Second, "writes resume within 30 s of a leader kill")
	}

	// Every acknowledged write is there.
	out, err := c.kubectl("get", "configmaps", "-n", "ha-writes", "-o", "name")
	require.NoError(t, err)
	have := map[string]bool{}
	for _, l := range strings.Fields(out) {
		have[strings.TrimPrefix(l, "configmap/")] = true
	}
	var lost []string
	for _, a := range acks {
		if !have[a] {
			lost = append(lost, a)
		}
	}
	t.Logf("HA FAULT leader-kill kills=%d acknowledged=%d lost=%d", len(gaps), len(acks), len(lost))
	assert.Empty(t, lost, "acknowledged writes lost")

	// The agent's node stayed Ready, its Pods the same, running.
	assert.Empty(t, notReady, "agent-0 stayed Ready throughout")
	assert.Equal(t, podsBefore, c.podUIDs("app=on-agent"), "the agent's Pods kept running")
	assert.NotContains(t, agent.log.String(), "Stopped", "the agent ran throughout")

	// Deleting server-2's Node removes its member (k3s's member-removal
	// controller; the finalizer makes sure of it).
	fin, err := c.kubectl("get", "node", "server-2", "-o", "jsonpath={.metadata.finalizers}")
	require.NoError(t, err)
	assert.Contains(t, fin, "etcd.k3s-like.io/member")
	deleted := time.Now()
	_, err = c.servers[0].kubectlErr("delete", "node", "server-2", "--wait=false")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		names, _ := c.voters()
		return len(names) == 2 && !slices.Contains(names, "server-2")
	}, 2*time.Minute, time.Second, "server-2's member removed with its Node")
	t.Logf("HA server-2's member removed %.1fs after its Node was deleted", time.Since(deleted).Seconds())
	select {
	case <-c.servers[2].exited:
		t.Logf("server-2 stopped: its member was removed (%v)", c.servers[2].exitErr)
	case <-time.After(60 * time.Second):
		t.Errorf("server-2 still runs a minute after its member was removed")
	}
	_, err = c.kubectl("get", "node", "server-2")
	assert.Error(t, err, "the Node is gone")
}

// podUIDs are the UIDs of the running Pods of selector, by name.
func (c *haCluster) podUIDs(selector string) map[string]string {
	c.t.Helper()
	out, err := c.kubectl("get", "pods", "-l", selector, "-o", `jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.status.phase}{"\n"}{end}`)
	require.NoError(c.t, err, out)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[2] == "Running" {
			got[f[0]] = f[1]
		}
	}
	return got
}

// writerEnv makes the test binary a writer (runWriterChild): on a
// machine of its own, it creates ConfigMaps in namespace ha-writes at a
// steady rate through each server of $K3S_LIKE_E2E_WRITER_SERVERS in turn,
// with the admin kubeconfig at the path writerEnv holds, and prints
// "ACK name unixnano" for each acknowledged create, "FAIL name unixnano
// server error" for the others, until SIGTERM.
const (
	writerEnv        = "K3S_LIKE_E2E_WRITER"
	writerServersEnv = "K3S_LIKE_E2E_WRITER_SERVERS"
)

// writeEvery is the writer's rate: 20 creates a second when they answer.
const writeEvery = 50 * time.Millisecond

func runWriterChild(kubeconfig string) int {
	servers := strings.Split(os.Getenv(writerServersEnv), ",")
	var clients []*kubernetes.Clientset
	for _, s := range servers {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			return 1
		}
		cfg.Host = s
		cfg.Timeout = 3 * time.Second
		cfg.QPS, cfg.Burst = 1000, 1000
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			return 1
		}
		clients = append(clients, c)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	t := time.NewTicker(writeEvery)
	defer t.Stop()
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("w-%d", i)
		n := i % len(clients)
		_, err := clients[n].CoreV1().ConfigMaps("ha-writes").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		now := time.Now().UnixNano()
		if err == nil {
			fmt.Fprintf(out, "ACK %s %d\n", name, now)
		} else if ctx.Err() == nil {
			fmt.Fprintf(out, "FAIL %s %d %s %q\n", name, now, servers[n], err.Error())
		}
		out.Flush()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	return 0
}

// writer is runWriterChild's process, read by the test.
type writer struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	acks  []string
	times []time.Time
	fails int
	done  chan struct{}
}

// startWriter runs the writer on machine m against c's servers.
func startWriter(t *testing.T, m machines.Machine, c *haCluster) *writer {
	t.Helper()
	var urls []string
	for i := range c.servers {
		urls = append(urls, c.serverURL(i))
	}
	cmd := m.Command(os.Args[0])
	cmd.Env = append(os.Environ(), writerEnv+"="+filepath.Join(c.dirs[0], "admin.kubeconfig"), writerServersEnv+"="+strings.Join(urls, ","))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	w := &writer{t: t, cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 3 {
				continue
			}
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			w.mu.Lock()
			switch f[0] {
			case "ACK":
				w.acks = append(w.acks, f[1])
				w.times = append(w.times, time.Unix(0, ns))
			case "FAIL":
				w.fails++
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	return w
}

func (w *writer) acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acks)
}

// ackedAfter counts the writes acknowledged after t.
func (w *writer) ackedAfter(t time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, at := range w.times {
		if at.After(t) {
			n++
		}
	}
	return n
}

// longestGap is the longest time between two acknowledgements (or from
// to the first) within [from, to].
func (w *writer) longestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := from
	var longest time.Duration
	for _, at := range w.times {
		if at.Before(from) || at.After(to) {
			continue
		}
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return longest
}

// stop ends the writer and returns what it acknowledged and how many
// failed.
func (w *writer) stop() ([]string, int) {
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acks), w.fails
}

// runOn runs the binary with args on machine m to its end and returns its
// output and exit code.
func runOn(t *testing.T, m machines.Machine, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	cmd := m.Command(binary, args...)
	cmd.WaitDelay = 30 * time.Second
	timer := time.AfterFunc(timeout, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err, "%s", out)
	}
	return string(out), code
}

// dirState lists dir's files with their sizes and modification times: a
// data dir left untouched lists the same.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %s\n", p, fi.Size(), fi.ModTime().Format(time.RFC3339Nano))
		return nil
	}))
	return b.String()
}

// TestHASnapshotRestore: three servers (without nodes) on machines form one
// etcd cluster. Joins that must be refused are, leaving nothing behind: a
// token pinning another CA (at once, nothing written) and a server whose
// etcd client port of the cluster it cannot reach (exit 1 naming the
// step, no member added). `etcd-snapshot save` takes a snapshot (size and
// revision in `ls`); a namespace is deleted after it; a truncated copy of
// it is refused by --cluster-reset-restore-path with the data dir
// untouched; the servers stopped, server-0 restores the snapshot
// (--cluster-reset --cluster-reset-restore-path, exit 0) and starts again
// as a one-member cluster with the namespace back; the others, their
// DATA_DIR/etcd cleared, join it again.
func TestHASnapshotRestore(t *testing.T) {
	requireNodeHost(t)
	lan := newLAN(t, 5)
	c := newHACluster(t, lan, 3, false)

	// Refused joins.
	good, err := os.ReadFile(c.token())
	require.NoError(t, err)
	_, secret, ok := strings.Cut(strings.TrimSpace(string(good)), "::server:")
	require.True(t, ok)
	bad := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(bad, []byte("K10"+strings.Repeat("0", 64)+"::server:"+secret), 0o600))
	otherDir := t.TempDir()
	out, code := runOn(t, lan.Machines[3], time.Minute, "server", "--data-dir="+otherDir, "--node-name=server-x", "--disable-agent",
		"--bind-address=0.0.0.0", "--advertise-address="+lan.Machines[3].IP.String(), "--server="+c.serverURL(0), "--token-file="+bad)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "sent no certificate with the sha256 the token pins")
	assert.NotContains(t, out, secret, "the token's secret is never printed")
	for _, d := range []string{"tls", "etcd", "token"} {
		_, err := os.Stat(filepath.Join(otherDir, d))
		assert.True(t, os.IsNotExist(err), "nothing written for a cluster the token does not pin: %s", d)
	}
	// Machine 4 cannot reach the cluster's etcd client ports.
	block := lan.Machines[4].Command("iptables", "-A", "OUTPUT", "-p", "tcp", "--dport", "2379", "-j", "REJECT")
	bout, err := block.CombinedOutput()
	require.NoError(t, err, "%s", bout)
	unreachableDir := t.TempDir()
	began := time.Now()
	out, code = runOn(t, lan.Machines[4], 3*time.Minute, "server", "--data-dir="+unreachableDir, "--node-name=server-y", "--disable-agent",
		"--bind-address=0.0.0.0", "--advertise-address="+lan.Machines[4].IP.String(), "--server="+c.serverURL(0), "--token-file="+c.token())
	assert.Equal(t, 1, code, tail(out, 20))
	assert.Contains(t, out, "etcd: joining the cluster at")
	assert.Contains(t, out, "listing the cluster's members")
	t.Logf("HA a join that cannot reach the cluster's etcd exits 1 after %.1fs", time.Since(began).Seconds())
	entries, _ := os.ReadDir(filepath.Join(unreachableDir, "etcd"))
	assert.Empty(t, entries, "no half-member's data left")
	names, _ := c.voters()
	assert.Equal(t, []string{"server-0", "server-1", "server-2"}, names, "no member added by the refused joins")

	// A snapshot, then a namespace deleted after it.
	_, err = c.kubectl("create", "namespace", "precious")
	require.NoError(t, err)
	_, err = c.kubectl("create", "configmap", "-n", "precious", "kept", "--from-literal=k=v")
	require.NoError(t, err)
	saved := time.Now()
	out, err = c.servers[1].run("etcd-snapshot", "save", "--data-dir="+c.dirs[1], "--node-name=server-1", "--name=before-delete")
	require.NoError(t, err, out)
	t.Logf("HA %s (%.1fs)", strings.TrimSpace(out), time.Since(saved).Seconds())
	ls, err := c.servers[1].run("etcd-snapshot", "ls", "--data-dir="+c.dirs[1])
	require.NoError(t, err, ls)
	assert.Regexp(t, `(?m)^before-delete-server-1-\d+\s+\d+\s+\d+\s+`, ls)
	snaps, err := filepath.Glob(filepath.Join(c.dirs[1], "snapshots", "before-delete-server-1-*"))
	require.NoError(t, err)
	require.Len(t, snaps, 1)
	snap := snaps[0]
	_, err = c.kubectl("delete", "namespace", "precious", "--wait=true", "--timeout=60s")
	require.NoError(t, err)

	// Every server stopped.
	for i := range c.servers {
		require.NoError(t, c.servers[i].stop())
	}

	// A truncated snapshot is refused; the data dir is untouched.
	b, err := os.ReadFile(snap)
	require.NoError(t, err)
	truncated := filepath.Join(t.TempDir(), "truncated")
	require.NoError(t, os.WriteFile(truncated, b[:len(b)/2], 0o600))
	before := dirState(t, filepath.Join(c.dirs[0], "etcd"))
	resetArgs := append(slices.Clone(c.args[0]), "--cluster-reset")
	out, code = runOn(t, lan.Machines[0], time.Minute, append(slices.Clone(resetArgs), "--cluster-reset-restore-path="+truncated)...)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "truncated, or not an etcd snapshot")
	assert.Contains(t, out, "nothing was touched")
	assert.Equal(t, before, dirState(t, filepath.Join(c.dirs[0], "etcd")), "the data dir is untouched")

	// The restore.
	restored := time.Now()
	out, code = runOn(t, lan.Machines[0], 2*time.Minute, append(slices.Clone(resetArgs), "--cluster-reset-restore-path="+snap)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "restart without --cluster-reset")
	t.Logf("HA restore of the snapshot: %.1fs", time.Since(restored).Seconds())
	old, err := filepath.Glob(filepath.Join(c.dirs[0], "etcd-old-*"))
	require.NoError(t, err)
	assert.Len(t, old, 1, "the former data dir kept")
	c.start(0)
	c.waitReady(0, 2*time.Minute)
	c.waitVoters(1, time.Minute)
	out, err = c.kubectl("get", "configmap", "-n", "precious", "kept", "-o", "jsonpath={.data.k}")
	require.NoError(t, err, out)
	assert.Equal(t, "v", out, "the namespace deleted after the snapshot is back")

	// The others rejoin, their etcd data cleared as k3s documents.
	for i := 1; i < 3; i++ {
		require.NoError(t, os.Rename(filepath.Join(c.dirs[i], "etcd"), filepath.Join(c.dirs[i], "etcd-backup")))
		c.start(i)
		c.waitReady(i, 3*time.Minute)
	}
	c.waitVoters(3, time.Minute)
	out, err = c.servers[2].kubectlErr("get", "configmap", "-n", "precious", "kept", "-o", "jsonpath={.data.k}")
	require.NoError(t, err, out)
	assert.Equal(t, "v", out)
}

// haStopOrders are the six orders in which three servers can be stopped.
var haStopOrders = [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}

// TestHAStopEveryServer: a maintenance stop of every server of an embedded
// etcd cluster, one after another — SIGTERM, then the next once it
// exited, as TestHASnapshotRestore and an operator do. Each server exits 0
// within nodeStopBound, the last ones too, although by the time they stop
// the datastore has lost its quorum: the stop was asked for, and lost
// quorum during it is no failure. $K3S_LIKE_HA_STOP_ROUNDS clusters
// (default 1), each formed anew and stopped in the next of the six orders
// (starting at $K3S_LIKE_HA_STOP_ORDER, default 0); an "HA STOP" line
// gives each server's exit code and how long its stop took. With
// $K3S_LIKE_HA_STOP_CPU=N, each server gets N% of one CPU from its
// SIGTERM on (cpuLimited): a stop on a loaded machine.
func TestHAStopEveryServer(t *testing.T) {
	requireNodeHost(t)
	rounds := envInt(t, "K3S_LIKE_HA_STOP_ROUNDS", 1)
	first := envInt(t, "K3S_LIKE_HA_STOP_ORDER", 0)
	cpu := envInt(t, "K3S_LIKE_HA_STOP_CPU", 0)
	for round := range rounds {
		order := haStopOrders[(first+round)%len(haStopOrders)]
		t.Run(fmt.Sprintf("round-%d", round), func(t *testing.T) {
			c := newHACluster(t, newLAN(t, 3), 3, false)
			for _, i := range order {
				s := c.servers[i]
				if cpu > 0 {
					cpuLimited(t, s.pid, cpu)
				}
				began := time.Now()
				err := s.stop()
				took := time.Since(began)
				code := 0
				if err != nil {
					code = s.cmd.ProcessState.ExitCode()
				}
				t.Logf("HA STOP round=%d order=%v server-%d exit=%d took=%.1fs cpu=%d%%", round, order, i, code, took.Seconds(), cpu)
				assert.NoError(t, err, "server-%d (order %v): a requested stop exits 0", i, order)
				assert.Less(t, took, 20*time.Second, "server-%d (order %v) stops within 20 s of SIGTERM (its components' stop timeouts are 8 s each)", i, order)
			}
		})
	}
}

// cpuLimited moves process pid into a cgroup (v1 cpu controller) of its
// own that gives it pct% of one CPU, removed when the test ends (the
// process must have exited by then).
func cpuLimited(t *testing.T, pid, pct int) {
	t.Helper()
	dir := filepath.Join("/sys/fs/cgroup/cpu", fmt.Sprintf("k3s-like-e2e-cpu-%d-%d", os.Getpid(), pid))
	require.NoError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		if err := syscall.Rmdir(dir); err != nil {
			t.Logf("removing cgroup %s: %v", dir, err)
		}
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), []byte(strconv.Itoa(pct*1000)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644))
}
