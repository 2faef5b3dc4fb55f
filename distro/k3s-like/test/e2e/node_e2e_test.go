package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/node/proctree"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// The node's end-to-end tests run `k3s-like server` with its node (the
// kubelet, containerd from the binary, the CNI plugins from the binary)
// inside a network namespace each test creates: loopback up and a veth
// with the documentation address 192.0.2.10 as the node IP and the default
// route, so that no Pod or Service packet can leave the machine. They need
// root, runc, iptables, unshare and nsenter (.ci/run installs what Debian
// lacks), and the images of `make images`, which they build.

const nodeIP = "192.0.2.10"

// netnsScript sets up a network namespace for one node: loopback, a veth
// pair whose peer stays in the namespace, nodeIP on eth0 and the default
// route through it; then it runs its arguments.
const netnsScript = `set -e
ip link set lo up
ip link add eth0 type veth peer name eth0p
ip addr add ` + nodeIP + `/24 dev eth0
ip link set eth0 up
ip link set eth0p up
ip route add default via 192.0.2.1 dev eth0
exec "$@"`

// In a test that runs again in a network namespace (inNodeNetns):
// netnsEnv marks the inner run, imagesEnv is the directory of the images
// the outer run built.
const (
	netnsEnv  = "K3S_LIKE_E2E_IN_NETNS"
	imagesEnv = "K3S_LIKE_E2E_IMAGES"
)

// inNodeNetns runs the calling test again, as this test binary, inside a
// network namespace of netnsScript (the whole test, its clients too, so
// that a server it starts runs its node there), and reports that run's
// result as its own. It returns false in that inner run, which goes on.
func inNodeNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) != "" {
		return false
	}
	requireNodeHost(t)
	images := nodeImages(t)
	timeout := 20 * time.Minute // the inner run ends before this one's deadline
	if d, ok := t.Deadline(); ok {
		timeout = time.Until(d) - 30*time.Second
	}
	cmd := exec.Command("unshare", "--net", "--fork", "--kill-child", "sh", "-c", netnsScript, "sh",
		os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), netnsEnv+"=1", imagesEnv+"="+images)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	require.NoError(t, cmd.Run(), "%s in its network namespace", t.Name())
	return true
}

// The node's images, built once per test binary by nodeImages.
var (
	imagesOnce sync.Once
	imagesDir  string
	imagesErr  error
)

// nodeImages builds the node's images (images/cmd/mkimages) once per test
// binary and returns their directory.
func nodeImages(t *testing.T) string {
	t.Helper()
	imagesOnce.Do(func() {
		if dir := os.Getenv(imagesEnv); dir != "" {
			imagesDir = dir // built by the process that made this one's network namespace
			return
		}
		dir, err := os.MkdirTemp("", "k3s-like-images")
		if err != nil {
			imagesErr = err
			return
		}
		cmd := exec.Command("go", "run", "-trimpath", "./cmd/mkimages", "-out", dir) // -trimpath: as test-images compiles it
		cmd.Dir = filepath.Join("..", "..", "..", "..", "images")
		out, err := cmd.CombinedOutput()
		if err != nil {
			imagesErr = fmt.Errorf("make images: %v\n%s", err, out)
		}
		imagesDir = dir
	})
	require.NoError(t, imagesErr)
	return imagesDir
}

// putNodeImages puts the node's images where a node on dataDir imports them.
func putNodeImages(t *testing.T, dataDir string) {
	t.Helper()
	imgs := filepath.Join(dataDir, "agent", "images")
	require.NoError(t, os.MkdirAll(imgs, 0o700))
	for _, f := range []string{"pause.tar", "busybox.tar", "coredns.tar", "netbench.tar"} {
		b, err := os.ReadFile(filepath.Join(nodeImages(t), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(imgs, f), b, 0o600))
	}
}

// busyboxImage is the name of the node's busybox image: the one tag of
// its archive (mkimages tags it with busybox's version).
func busyboxImage(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(nodeImages(t), "busybox.tar"))
	require.NoError(t, err)
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		require.NoError(t, err, "busybox.tar's manifest.json")
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		require.NoError(t, json.NewDecoder(tr).Decode(&m), "busybox.tar's manifest.json")
		require.True(t, len(m) == 1 && len(m[0].RepoTags) == 1, "busybox.tar's manifest.json names one image: %+v", m)
		return m[0].RepoTags[0]
	}
}

func requireNodeHost(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the node needs root")
	}
	for _, tool := range []string{"runc", "iptables", "unshare", "nsenter", "ip"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "%s (installed by .ci/run)", tool)
	}
}

// nodeServer is k3s-like server with its node, in a network namespace of
// its own.
type nodeServer struct {
	t       *testing.T
	dataDir string
	cmd     *exec.Cmd // unshare or nsenter
	pid     int       // k3s-like's, once known
	log     *syncBuffer
	exited  chan struct{}
	exitErr error
	started time.Time
}

// startNodeServer runs the server on dataDir (its images put in place)
// inside a new network namespace of netnsScript.
func startNodeServer(t *testing.T, dataDir string, extra ...string) *nodeServer {
	t.Helper()
	return startInNetns(t, dataDir, netnsScript, append([]string{"server", "--data-dir=" + dataDir, "--node-name=node-a"}, extra...))
}

// agentIP is the agent's node IP in the agent tests: the second
// machine's (package machines).
const agentIP = "192.0.2.11"

// startInNetns runs the binary with args, its images put in place under
// dataDir, inside a new network namespace that script sets up.
func startInNetns(t *testing.T, dataDir, script string, args []string) *nodeServer {
	t.Helper()
	return startBinaryInNetns(t, binary, dataDir, script, args)
}

// startBinaryInNetns is startInNetns with the k3s-like binary bin.
func startBinaryInNetns(t *testing.T, bin, dataDir, script string, args []string) *nodeServer {
	t.Helper()
	cmd := exec.Command("unshare", append([]string{"--net", "--fork", "sh", "-c", script, "sh", bin}, args...)...)
	s := startNode(t, dataDir, cmd, args[0])
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", s.cmd.Process.Pid, s.cmd.Process.Pid))
		if err != nil {
			return false
		}
		s.pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && s.pid > 0
	}, 10*time.Second, 20*time.Millisecond, "k3s-like started in its namespace")
	return s
}

// startNode starts cmd, which runs the binary's command (server or
// agent) with its images put in place under dataDir, and stops it when
// the test ends.
func startNode(t *testing.T, dataDir string, cmd *exec.Cmd, command string) *nodeServer {
	t.Helper()
	putNodeImages(t, dataDir)
	s := &nodeServer{t: t, dataDir: dataDir, log: &syncBuffer{}, exited: make(chan struct{}), started: time.Now(), cmd: cmd}
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	require.NoError(t, s.cmd.Start())
	go func() { s.exitErr = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			if s.pid > 0 {
				_ = syscall.Kill(s.pid, syscall.SIGTERM)
			}
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if t.Failed() {
			t.Logf("k3s-like %s harness lines:\n%s", command, lifecycleLines(s.log.String()))
			t.Logf("k3s-like %s log (last 80 lines):\n%s", command, testenv.Tail(s.log.String(), 80))
		}
		keepLog(t, s.pid, s.log.String())
	})
	return s
}

// kubectl runs k3s-like kubectl in the server's network namespace and
// returns its output, failing the test on an error.
func (s *nodeServer) kubectl(args ...string) string {
	s.t.Helper()
	out, err := s.kubectlErr(args...)
	require.NoError(s.t, err, "kubectl %v: %s", args, out)
	return out
}

func (s *nodeServer) kubectlErr(args ...string) (string, error) {
	full := append([]string{"-t", strconv.Itoa(s.pid), "-n", binary, "kubectl", "--kubeconfig", filepath.Join(s.dataDir, "admin.kubeconfig")}, args...)
	var out bytes.Buffer
	cmd := exec.Command("nsenter", full...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// run runs a command of the binary (not kubectl) in the server's network
// namespace.
func (s *nodeServer) run(args ...string) (string, error) {
	out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(s.pid), "-n", binary}, args...)...).CombinedOutput()
	return string(out), err
}

// waitNodeReady waits until the node is Ready and returns how long that
// took from the start.
func (s *nodeServer) waitNodeReady(timeout time.Duration) time.Duration {
	s.t.Helper()
	return s.waitNamedNodeReady("node-a", s, timeout)
}

// waitNamedNodeReady waits until the node name is Ready, as the server
// sees it, while the process p runs, and returns how long that took from
// p's start.
func (s *nodeServer) waitNamedNodeReady(name string, p *nodeServer, timeout time.Duration) time.Duration {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			s.t.Fatalf("k3s-like exited: %v\n%s", p.exitErr, exitReport(p.log.String()))
		default:
		}
		out, err := s.kubectlErr("get", "node", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err == nil && out == "True" {
			return time.Since(p.started)
		}
		time.Sleep(250 * time.Millisecond)
	}
	conds, _ := s.kubectlErr("get", "node", name, "-o", `jsonpath=podCIDR={.spec.podCIDR}{"\n"}{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}`)
	events, _ := s.kubectlErr("get", "events", "-A", "--sort-by=.lastTimestamp")
	s.t.Fatalf("%s not Ready within %s; its conditions:\n%s\nevents:\n%s", name, timeout, conds, events)
	return 0
}

// waitFor polls kubectl's jsonpath output until it equals want.
func (s *nodeServer) waitFor(want string, timeout time.Duration, args ...string) {
	s.t.Helper()
	var last string
	if !assert.Eventually(s.t, func() bool {
		last, _ = s.kubectlErr(args...)
		return last == want
	}, timeout, 250*time.Millisecond, "kubectl %v: want %q", args, want) {
		pods, _ := s.kubectlErr("get", "pods", "-A", "-o", "wide")
		events, _ := s.kubectlErr("get", "events", "-A", "--sort-by=.lastTimestamp")
		s.t.Fatalf("kubectl %v said %q, not %q; the Pods:\n%s\nevents:\n%s", args, last, want, pods, events)
	}
}

// nodeStopBound is how long stop waits for the exit after SIGTERM.
const nodeStopBound = 60 * time.Second

// stop sends SIGTERM and waits for the exit: nil for exit 0, else the
// exit status with why the process says it ended and its log's last
// lines (exitReport), as the test's failure shows it.
func (s *nodeServer) stop() error {
	s.t.Helper()
	require.NoError(s.t, syscall.Kill(s.pid, syscall.SIGTERM))
	select {
	case <-s.exited:
		if s.exitErr != nil {
			return fmt.Errorf("k3s-like (pid %d) after SIGTERM: %w\n%s", s.pid, s.exitErr, exitReport(s.log.String()))
		}
		return nil
	case <-time.After(nodeStopBound):
		s.t.Fatalf("k3s-like (pid %d) did not stop within %s of SIGTERM\n%s", s.pid, nodeStopBound, exitReport(s.log.String()))
		return nil
	}
}

func (s *nodeServer) apply(yaml string) {
	s.t.Helper()
	f := filepath.Join(s.t.TempDir(), "obj.yaml")
	require.NoError(s.t, os.WriteFile(f, []byte(yaml), 0o600))
	s.kubectl("apply", "-f", f)
}

// nodeTaint keeps the workloads of tests that make fake nodes off the
// real node; runOnNode's Pods tolerate it.
const nodeTaint = "kubeharness.io/e2e=node:NoSchedule"

// runOnNode runs two busybox Pods on node-a (a Deployment in namespace
// on-node) and waits until both run and are ready: their UIDs.
func runOnNode(ctx context.Context, t *testing.T, c kubernetes.Interface) map[string]string {
	t.Helper()
	_, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "on-node"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	replicas := int32(2)
	labels := map[string]string{"app": "run"}
	grace := int64(1)
	_, err = c.AppsV1().Deployments("on-node").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "run"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{"kubernetes.io/hostname": "node-a"},
					Tolerations:                   []corev1.Toleration{{Key: "kubeharness.io/e2e", Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{
						Name: "c", Image: busyboxImage(t), ImagePullPolicy: corev1.PullNever,
						Command: []string{"sleep", "3599"},
					}},
				},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	var running map[string]string
	if !assert.Eventually(t, func() bool {
		running = runningPods(ctx, c)
		return len(running) == 2
	}, 90*time.Second, time.Second, "two Pods running on node-a") {
		t.Fatalf("what the Pods wait for:\n%s", describe(ctx, c, "on-node"))
	}
	return running
}

// runningPods are the Pods of namespace on-node that run with their
// container ready: UID to the container's ID.
func runningPods(ctx context.Context, c kubernetes.Interface) map[string]string {
	list, err := c.CoreV1().Pods("on-node").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready {
			out[string(p.UID)] = p.Status.ContainerStatuses[0].ContainerID
		}
	}
	return out
}

// assertRunningAgain: after a restart of the server, the same Pods (UIDs)
// and no other run again, each in a new container (the stop removed the
// old ones: a status the datastore kept from before is not taken for the
// new run's). It returns the new containers.
func assertRunningAgain(ctx context.Context, t *testing.T, c kubernetes.Interface, before map[string]string) map[string]string {
	t.Helper()
	var got map[string]string
	assert.Eventually(t, func() bool {
		got = runningPods(ctx, c)
		return maps.EqualFunc(got, before, func(now, was string) bool { return now != was })
	}, 2*time.Minute, time.Second, "the same Pods run again on node-a, in new containers")
	t.Logf("node-a: Pods %v run again, containers %v (were %v)", slices.Sorted(maps.Keys(got)), got, before)
	return got
}

// TestNodeRunsPods: the server's node is Ready in its own network
// namespace; a busybox Pod runs (logs, exec), a Job completes, a crashing
// container is restarted by its restartPolicy, two Pods reach each other
// by Pod IP, the kubelet's own alpha gate given by --kubelet-arg is on
// with SET-BY kubelet; SIGTERM stops everything — containerd, its shims,
// the containers, the node's mounts — and a start on the same data dir
// brings the same Pods back.
func TestNodeRunsPods(t *testing.T) {
	requireNodeHost(t)
	dataDir := t.TempDir()
	busybox := busyboxImage(t)
	gate := "--kubelet-arg=feature-gates=" + testenv.KubeletGate + "=true"
	s := startNodeServer(t, dataDir, gate)
	ready := s.waitNodeReady(90 * time.Second)
	t.Logf("NODE node Ready %.1fs after the start", ready.Seconds())

	pod := func(name, restart, command string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {app: %s}}
spec:
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
`, name, name, restart, busybox, command)
	}
	s.apply(pod("echo", "Always", "echo hello from the node; exec sleep 3599"))
	s.apply(pod("web", "Always", "mkdir -p /www && echo pong > /www/index.html && exec httpd -f -p 8080 -h /www"))
	s.apply(pod("crash", "Always", "echo crashing; exit 3"))
	s.apply(fmt.Sprintf(`apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: %s
        imagePullPolicy: Never
        command: ["sh", "-c", "echo done"]
`, busybox))

	t.Run("logs and exec", func(t *testing.T) {
		s.waitFor("Running", 60*time.Second, "get", "pod", "echo", "-o", "jsonpath={.status.phase}")
		assert.Equal(t, "hello from the node\n", s.kubectl("logs", "echo"))
		assert.Equal(t, "echo\n", s.kubectl("exec", "echo", "--", "hostname"))
	})
	t.Run("job completes", func(t *testing.T) {
		s.waitFor("1", 60*time.Second, "get", "job", "job", "-o", "jsonpath={.status.succeeded}")
	})
	t.Run("restarts counted", func(t *testing.T) {
		require.Eventually(t, func() bool {
			out, _ := s.kubectlErr("get", "pod", "crash", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
			n, err := strconv.Atoi(out)
			return err == nil && n >= 2
		}, 90*time.Second, time.Second, "the crashing container restarted twice")
		out, _ := s.kubectlErr("get", "pod", "crash", "-o", "jsonpath={.status.containerStatuses[0].lastState.terminated.exitCode}")
		assert.Equal(t, "3", out)
	})
	t.Run("pod to pod", func(t *testing.T) {
		s.waitFor("Running", 60*time.Second, "get", "pod", "web", "-o", "jsonpath={.status.phase}")
		ip := s.kubectl("get", "pod", "web", "-o", "jsonpath={.status.podIP}")
		require.True(t, strings.HasPrefix(ip, "10.42."), "a pod IP of the cluster CIDR: %q", ip)
		assert.Equal(t, "pong\n", s.kubectl("exec", "echo", "--", "wget", "-q", "-O", "-", "http://"+ip+":8080/index.html"))
	})
	t.Run("kubelet gate SET-BY kubelet", func(t *testing.T) {
		out, err := s.run("features", "--status-address=127.0.0.1:10290")
		require.NoError(t, err, out)
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, strings.ToLower(testenv.KubeletGate)+" ") { // named as the Feature objects are
				line = l
			}
		}
		require.NotEmpty(t, line, "%s in:\n%s", testenv.KubeletGate, out)
		f := strings.Fields(line)
		assert.Equal(t, "true", f[2], "ENABLED: %s", line)
		assert.Equal(t, "kubelet=true", f[len(f)-1], "SET-BY: %s", line)
	})

	config, err := os.ReadFile(filepath.Join(dataDir, "agent", "etc", "containerd", "config.toml"))
	require.NoError(t, err)
	socket := tomlString(t, config, "address")
	logShims(t, dataDir, socket)

	// The containers of this run: the next start makes new ones (the stop
	// removes the sandboxes), so a new ID is the new run's, not a status
	// left in the datastore.
	containerIDs := map[string]string{}
	for _, name := range []string{"echo", "web"} {
		containerIDs[name] = s.kubectl("get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].containerID}")
		require.NotEmpty(t, containerIDs[name])
	}
	runDir := filepath.Dir(socket)
	procs := nodeProcesses(t, s.pid, socket)
	require.NoError(t, s.stop(), "SIGTERM: a clean stop")
	// containerd, its shims (-address SOCKET) and their containers' processes
	assertNoProcess(t, func(c string) bool { return strings.Contains(c, socket) || strings.Contains(c, dataDir) })
	assertGone(t, procs)
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	for _, line := range strings.Split(string(mounts), "\n") {
		assert.NotContains(t, line, dataDir, "a mount under the data dir outlived the server")
		assert.NotContains(t, line, runDir, "a mount of the node's runtime outlived the server")
	}

	// The same data dir again: the same Pods come back.
	s2 := startNodeServer(t, dataDir, gate)
	s2.waitNodeReady(90 * time.Second)
	for _, name := range []string{"echo", "web"} {
		var last string
		require.Eventually(t, func() bool {
			last, _ = s2.kubectlErr("get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].containerID} {.status.containerStatuses[0].ready}")
			id, ready, _ := strings.Cut(last, " ")
			return id != "" && id != containerIDs[name] && ready == "true"
		}, 90*time.Second, 250*time.Millisecond, "Pod %s runs again in a new container (was %s): %s", name, containerIDs[name], last)
	}
	require.NoError(t, s2.stop())
}

// logShims logs the executable and the memory of each shim of the
// containerd at socket (/proc/PID/smaps_rollup), as the NODE figures. With
// the embedded helpers (DATA_DIR/agent/bin a link), each shim must run from
// DATA_DIR/data/HASH/bin, not from the k3s-like binary.
func logShims(t *testing.T, dataDir, socket string) {
	t.Helper()
	tab, err := proctree.Read()
	require.NoError(t, err)
	pids := tab.Shims(socket)
	require.NotEmpty(t, pids, "the shims of %s", socket)
	fi, err := os.Lstat(filepath.Join(dataDir, "agent", "bin"))
	embedded := err == nil && fi.Mode()&os.ModeSymlink != 0
	for _, pid := range pids {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
		if err != nil {
			continue // exited
		}
		kB := map[string]string{}
		for _, line := range strings.Split(string(rollup), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				kB[k] = strings.TrimSuffix(strings.TrimSpace(v), " kB")
			}
		}
		t.Logf("NODE shim %d (%s): RSS %s kB, PSS %s kB, anonymous %s kB", pid, exe, kB["Rss"], kB["Pss"], kB["Anonymous"])
		if embedded {
			assert.True(t, strings.HasPrefix(exe, filepath.Join(dataDir, "data")+"/"), "shim %d runs from the embedded helpers under %s/data, not %s", pid, dataDir, exe)
		}
	}
}

// TestNodeStopsWithManyPods: with 30 Pods running, SIGTERM stops the
// server within --stop-timeout (8 s) and exits 0, leaving no shim and no
// container: containerd's SIGTERM grace is a quarter of the stop timeout,
// so that the kill of what it leaves still fits after the sweep of the
// sandboxes, and containerd's Run does not wait for the output its shims
// still hold.
func TestNodeStopsWithManyPods(t *testing.T) {
	requireNodeHost(t)
	dataDir := t.TempDir()
	s := startNodeServer(t, dataDir, "--disable=coredns")
	s.waitNodeReady(90 * time.Second)
	// $K3S_LIKE_STOP_PODS: more Pods than make test's 30 (the node bench
	// stops 100).
	pods := 30
	if v := os.Getenv("K3S_LIKE_STOP_PODS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "K3S_LIKE_STOP_PODS")
		pods = n
	}
	s.apply(fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: many}
spec:
  replicas: %d
  selector: {matchLabels: {app: many}}
  template:
    metadata: {labels: {app: many}}
    spec:
      terminationGracePeriodSeconds: 30
      containers: [{name: c, image: %s, imagePullPolicy: Never}]
`, pods, "registry.k8s.io/pause:3.10.2"))
	s.waitFor(strconv.Itoa(pods), 4*time.Minute, "get", "deployment", "many", "-o", "jsonpath={.status.readyReplicas}")
	config, err := os.ReadFile(filepath.Join(dataDir, "agent", "etc", "containerd", "config.toml"))
	require.NoError(t, err)
	socket := tomlString(t, config, "address")
	procs := nodeProcesses(t, s.pid, socket)
	stopped := time.Now()
	require.NoError(t, s.stop(), "SIGTERM with %d Pods: a clean stop", pods)
	t.Logf("SIGTERM → exit with %d Pods: %s", pods, time.Since(stopped).Round(time.Millisecond))
	assertNoProcess(t, func(c string) bool { return strings.Contains(c, socket) || strings.Contains(c, dataDir) })
	assertGone(t, procs)
}

// nodeProcesses are the processes of a running node: the server's (pid)
// and its shims' (-address socket) descendants, containers included. By
// PID, not by command line: other tests' nodes may run the same images.
func nodeProcesses(t *testing.T, pid int, socket string) []int {
	t.Helper()
	tab, err := proctree.Read()
	require.NoError(t, err)
	procs := tab.Descendants(append(tab.Shims(socket), pid)...)
	require.Greater(t, len(procs), 1, "the node's processes")
	return procs
}

// assertGone fails t for each of procs still alive: what outlived the
// server.
func assertGone(t *testing.T, procs []int) {
	t.Helper()
	for _, pid := range procs {
		if proctree.Alive(pid) {
			cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
			t.Errorf("process %d outlived the server: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		}
	}
}

// assertNoProcess fails t for every process whose command line (its
// arguments joined by spaces) left accepts: what outlived the server.
func assertNoProcess(t *testing.T, left func(cmdline string) bool) {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		c := string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		assert.False(t, left(c), "process %s outlived the server: %s", p.Name(), c)
	}
}

// TestNodeGateConflictStopsEverything: a kubelet or kube-proxy gate the
// apiserver sets the other way is the barrier's conflict: exit 1, naming
// both, before anything listens or the node starts.
func TestNodeGateConflictStopsEverything(t *testing.T) {
	for _, component := range []string{"kubelet", "kube-proxy"} {
		t.Run(component, func(t *testing.T) {
			s := newServer(t, t.TempDir())
			out, err := exec.Command(binary, s.argsWithNode(
				"--kube-apiserver-arg=feature-gates="+testenv.KubeletGate+"=false",
				"--"+component+"-arg=feature-gates="+testenv.KubeletGate+"=true")...).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			assert.Equal(t, 1, ee.ExitCode())
			assert.Contains(t, string(out), "kube-apiserver sets false (--feature-gates="+testenv.KubeletGate+"=false)")
			assert.Contains(t, string(out), component+" sets true (--feature-gates="+testenv.KubeletGate+"=true)")
			_, err = os.Stat(filepath.Join(s.dataDir, "agent"))
			assert.True(t, os.IsNotExist(err), "the node wrote nothing")
		})
	}
}

// tomlString returns the first `key = "value"` of a TOML file's text.
func tomlString(t *testing.T, text []byte, key string) string {
	t.Helper()
	for _, line := range strings.Split(string(text), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " = ")
		if ok && k == key {
			u, err := strconv.Unquote(v)
			require.NoError(t, err, line)
			return u
		}
	}
	t.Fatalf("no %s in\n%s", key, text)
	return ""
}

// TestAgentJoins: `k3s-like agent`, on a machine of its own on the
// server's LAN (package machines), joins with the server's DATA_DIR/token: the
// CA is pinned by the token, its kubelet gets its client certificate by
// a CSR of the agent's, with a bootstrap token and its node password,
// approved for system:node:node-b by the node-client approver), the node is Ready,
// a Pod scheduled to it runs and its log and exec are served through the
// apiserver, which verifies the kubelet's serving certificate (requested
// by the kubelet, approved by the server's approver, signed by the kubelet
// serving CA); node-b's credential can neither change node-a nor ask
// for a certificate in its name (NodeRestriction); each node's kube-proxy
// has its own identity (system:kube-proxy: node-b's certificate asked for
// by node-b and approved, node-a's issued by the server; the audit log
// shows every namespace's EndpointSlices read by that user, never by a
// kubelet's); SIGTERM
// stops it cleanly. A token pinning another CA is
// refused at once, before anything is written.
func TestAgentJoins(t *testing.T) {
	requireNodeHost(t)
	busybox := busyboxImage(t)
	serverDir := t.TempDir()
	gate := testenv.KubeletGate
	lan := newLAN(t, 2)
	s := startServerOn(t, lan.Machines[0], serverDir, "--bind-address=0.0.0.0", "--kubelet-arg=feature-gates="+gate+"=true")
	s.waitNodeReady(90 * time.Second)
	// KEP-3920 on nodes: the server's kubelet-only gate, SET-BY kubelet,
	// on its one node.
	s.waitFeature(gate, "kubelet=true true 1/1 ", 60*time.Second)
	wide, err := s.run("features", "-o", "wide", "--node-name=node-a", "--status-address=127.0.0.1:10290")
	require.NoError(t, err, wide)
	// NAME STAGE ENABLED DEFAULT SET-BY SERVERS NODES DISAGREEING(empty) DECLARED(empty) DECLARED-DISAGREEING(empty) EMULATED BINARY
	assert.Regexp(t, `(?m)^`+strings.ToLower(gate)+`\s+Alpha\s+true\s+false\s+kubelet=true\s+node-a\s+1/1\s+1\.\d+\s`, wide)

	agentDir := t.TempDir()
	// A second kubelet on this host needs its own pod logs directory (each
	// removes the directories of pods it does not know) and cgroup root.
	config := filepath.Join(agentDir, "kubelet.yaml")
	require.NoError(t, os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: "+
		filepath.Join(agentDir, "pod-logs")+"\n"), 0o600))
	a := startAgentOn(t, lan.Machines[1], agentDir, "--server=https://"+nodeIP+":6443", "--token-file="+filepath.Join(serverDir, "token"),
		"--node-name=node-b", "--node-ip="+agentIP, "--kubelet-arg=cgroup-root="+agentCgroupRoot(t), "--kubelet-arg=config="+config)
	ready := s.waitNamedNodeReady("node-b", a, 90*time.Second)
	t.Logf("NODE agent node-b Ready %.1fs after the agent's start", ready.Seconds())

	// The agent runs the gate off (its default): partial, naming node-b;
	// the Enabled condition is False.
	s.waitFeature(gate, "kubelet=true partial 1/2 node-b", 60*time.Second)
	out, err := s.kubectlErr("wait", "--for=condition=Enabled=false", "feature/"+strings.ToLower(gate), "--timeout=10s")
	require.NoError(t, err, out)
	// A node writes only its own report. node-b's kubeconfig names its
	// load balancer, 127.0.0.1:6444 on the agent's machine: kubectl runs there.
	nodeB := pki.Layout{Dir: filepath.Join(agentDir, "agent", "pki")}.NodeLayout("node-b").Kubeconfig()
	replace := func(report string) (string, error) {
		f := filepath.Join(agentDir, report+"-report.json")
		require.NoError(t, os.WriteFile(f, []byte(s.kubectl("get", "nodefeaturereport", report, "-o", "json")), 0o600))
		return a.run("kubectl", "--kubeconfig="+nodeB, "replace", "-f", f)
	}
	out, err = replace("node-a")
	require.Error(t, err, out)
	assert.Contains(t, out, "system:node:node-b may write only its own NodeFeatureReport, not node-a")
	out, err = replace("node-b")
	assert.NoError(t, err, "its own: %s", out)

	// NodeRestriction: node-b's credential cannot change node-a.
	out, err = a.run("kubectl", "--kubeconfig="+nodeB, "label", "node", "node-a", "stolen=yes")
	require.Error(t, err, out)
	assert.Contains(t, out, `node "node-b" is not allowed to modify node "node-a"`)
	// Nor get node-a's identity: no permission that makes the
	// controller-manager approve a client certificate for another name,
	// and the serving certificate approver denies one in another's name.
	out, err = a.run("kubectl", "--kubeconfig="+nodeB, "auth", "can-i", "create", "certificatesigningrequests", "--subresource=nodeclient")
	answer := strings.Split(strings.TrimSpace(out), "\n") // a warning may come first
	assert.Equal(t, "no", answer[len(answer)-1], "%v: %s", err, out)
	stealCSR := filepath.Join(agentDir, "steal.yaml")
	require.NoError(t, os.WriteFile(stealCSR, []byte(servingCSRFor(t, "steal-node-a", "node-a")), 0o600))
	out, err = a.run("kubectl", "--kubeconfig="+nodeB, "create", "-f", stealCSR)
	require.Error(t, err, out)
	assert.Contains(t, out, "can only create a node CSR with CN=system:node:node-b", "NodeRestriction")
	// Were it created (by another identity in node-b's name), the
	// approver would deny it: TestReviewServing.

	csrs := s.kubectl("get", "csr", "-o", `jsonpath={range .items[*]}{.spec.username} {.spec.signerName} {.status.conditions[0].type}{"\n"}{end}`)
	assert.Regexp(t, `(?m)^system:bootstrap:[a-z0-9]{6} kubernetes.io/kube-apiserver-client-kubelet Approved$`, csrs, "the node-client approver's")
	// The kubelet's serving certificate: requested, approved by the
	// server's approver, signed by the kubelet serving CA the apiserver
	// verifies kubelets against (exec and logs below go through it).
	assert.Regexp(t, `(?m)^system:node:node-b kubernetes.io/kubelet-serving Approved$`, csrs)
	// kube-proxy has its own identity on both nodes, not its kubelet's:
	// the agent's asked for by node-b, approved by the node-client
	// approver; the server's issued by the server.
	assert.Regexp(t, `(?m)^system:node:node-b kubernetes.io/kube-apiserver-client Approved$`, csrs, "node-b's kube-proxy certificate")
	clientCA, err := os.ReadFile(filepath.Join(serverDir, "tls", "client-ca.crt"))
	require.NoError(t, err)
	for _, kc := range []string{
		pki.Layout{Dir: filepath.Join(agentDir, "agent", "pki")}.NodeLayout("node-b").KubeProxyKubeconfig(),
		pki.Layout{Dir: filepath.Join(serverDir, "tls")}.NodeLayout("node-a").KubeProxyKubeconfig(),
	} {
		cfg, err := clientcmd.BuildConfigFromFlags("", kc)
		require.NoError(t, err, kc)
		assertClientCert(t, cfg.CertData, clientCA, "system:kube-proxy", kc)
	}
	_, err = s.kubectlErr("get", "clusterrolebinding", "k3s-like-node-proxier")
	assert.Error(t, err, "the kubelets are not bound system:node-proxier")
	assert.Equal(t, "User/system:kube-proxy", s.kubectl("get", "clusterrolebinding", "system:node-proxier", "-o", `jsonpath={.subjects[*].kind}/{.subjects[*].name}`))
	// Who lists and watches EndpointSlices in every namespace, from the
	// audit log: kube-proxy as system:kube-proxy, no kubelet's credential
	// (the agent's load balancer reads the kubernetes Service's, in
	// default, as its node).
	watchers := map[string]bool{}
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(datadir.AuditLog(serverDir))
		require.NoError(t, err)
		for line := range strings.SplitSeq(string(raw), "\n") {
			var ev struct {
				Verb      string
				User      struct{ Username string }
				ObjectRef struct{ Resource, Namespace string }
			}
			if json.Unmarshal([]byte(line), &ev) == nil && ev.ObjectRef.Resource == "endpointslices" && ev.ObjectRef.Namespace == "" && (ev.Verb == "list" || ev.Verb == "watch") {
				watchers[ev.User.Username] = true
			}
		}
		return watchers["system:kube-proxy"]
	}, 30*time.Second, time.Second, "kube-proxy lists EndpointSlices as system:kube-proxy")
	for u := range watchers {
		assert.False(t, strings.HasPrefix(u, "system:node:"), "a kubelet's credential lists every namespace's EndpointSlices: %s", u)
	}
	servingCA, err := os.ReadFile(filepath.Join(serverDir, "tls", "kubelet-serving-ca.crt"))
	require.NoError(t, err)
	var serving []byte
	require.Eventually(t, func() bool {
		serving, err = os.ReadFile(filepath.Join(agentDir, "agent", "kubelet", "pki", "kubelet-server-current.pem"))
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "the kubelet's bootstrapped serving certificate")
	assertSignedBy(t, serving, servingCA, "node-b", agentIP)
	crt, err := os.ReadFile(filepath.Join(agentDir, "agent", "kubelet", "pki", "kubelet-client-current.pem"))
	require.NoError(t, err, "the kubelet's bootstrapped client certificate")
	assert.Contains(t, string(crt), "BEGIN CERTIFICATE")
	_, err = os.Stat(filepath.Join(agentDir, "agent", "pki", "bootstrap-kubelet.kubeconfig"))
	assert.True(t, os.IsNotExist(err), "no bootstrap token on the agent's disk: the agent asks for the client certificate itself")

	s.apply(shPodOn("on-b", "node-b", busybox, "echo hello from node-b; exec sleep 3599"))
	s.waitFor("Running", 60*time.Second, "get", "pod", "on-b", "-o", "jsonpath={.status.phase}")
	assert.Equal(t, "node-b", s.kubectl("get", "pod", "on-b", "-o", "jsonpath={.spec.nodeName}"))
	ip := s.kubectl("get", "pod", "on-b", "-o", "jsonpath={.status.podIP}")
	assert.True(t, strings.HasPrefix(ip, "10.42.") && !strings.HasPrefix(ip, "10.42.0."), "a pod IP of node-b's own pod CIDR: %q", ip)
	assert.Equal(t, "hello from node-b\n", s.kubectl("logs", "on-b"))
	assert.Equal(t, "on-b\n", s.kubectl("exec", "on-b", "--", "hostname"))
	require.NoError(t, a.stop(), "SIGTERM: a clean stop")
	assert.Contains(t, a.log.String(), "Unmounted the node's mounts")

	// The agent again, with the gate on: the condition turns True.
	a = startAgentOn(t, lan.Machines[1], agentDir, "--server=https://"+nodeIP+":6443", "--token-file="+filepath.Join(serverDir, "token"),
		"--node-name=node-b", "--node-ip="+agentIP, "--kubelet-arg=cgroup-root="+agentCgroupRoot(t), "--kubelet-arg=config="+config,
		"--kubelet-arg=feature-gates="+gate+"=true")
	restarted := time.Now()
	out, err = s.kubectlErr("wait", "--for=condition=Enabled", "feature/"+strings.ToLower(gate), "--timeout=120s")
	require.NoError(t, err, "%s\nagent:\n%s", out, a.log.String())
	t.Logf("FEATURES Enabled condition True %.1fs after the agent's restart with the gate on", time.Since(restarted).Seconds())
	s.waitFeature(gate, "kubelet=true true 2/2 ", 10*time.Second)
	require.NoError(t, a.stop())

	// A full token whose hash is not this cluster's CA.
	good, err := os.ReadFile(filepath.Join(serverDir, "token"))
	require.NoError(t, err)
	_, secret, ok := strings.Cut(strings.TrimSpace(string(good)), "::server:")
	require.True(t, ok)
	bad := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(bad, []byte("K10"+strings.Repeat("0", 64)+"::server:"+secret), 0o600))
	otherDir := t.TempDir()
	out, err = s.run("agent", "--server=https://"+nodeIP+":6443", "--token-file="+bad, "--data-dir="+otherDir, "--node-name=node-c")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, out, "sent no certificate with the sha256 the token pins ("+strings.Repeat("0", 64)+")")
	assert.NotContains(t, out, secret, "the token's secret is never printed")
	_, err = os.Stat(filepath.Join(otherDir, "agent", "pki"))
	assert.True(t, os.IsNotExist(err), "nothing written for a cluster the token does not pin")
	require.NoError(t, s.stop())
}

// shPodOn is a busybox Pod named name on node that runs sh -c script.
func shPodOn(name, node, busybox, script string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeSelector: {kubernetes.io/hostname: %s}
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sh", "-c", %q]
`, name, node, busybox, script)
}

// servingCSRFor is a kubelet-serving CertificateSigningRequest named name
// for node's identity, as a kubelet would send it.
func servingCSRFor(t *testing.T, name, node string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, DNSNames: []string{node},
	}, key)
	require.NoError(t, err)
	req := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
	return fmt.Sprintf(`apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: %s}
spec:
  signerName: kubernetes.io/kubelet-serving
  usages: [digital signature, server auth]
  request: %s
`, name, req)
}

// assertSignedBy asserts that the first certificate of certPEM is signed
// by caPEM's CA and valid for the server name host and IP ip.
func assertSignedBy(t *testing.T, certPEM, caPEM []byte, host, ip string) {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	crt, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	for _, name := range []string{host, ip} {
		_, err = crt.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.NoError(t, err, name)
	}
}

// assertClientCert asserts certPEM is a client certificate for user (CN,
// no organization) that the CA in caPEM signed.
func assertClientCert(t *testing.T, certPEM, caPEM []byte, user, what string) {
	t.Helper()
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block, what)
	crt, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err, what)
	assert.Equal(t, user, crt.Subject.CommonName, what)
	assert.Empty(t, crt.Subject.Organization, what)
	_, err = crt.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, what)
}

// waitFeature waits until the Feature of gate shows want: its SET-BY,
// ENABLED, NODES and disagreeing sample, space-separated.
func (s *nodeServer) waitFeature(gate, want string, timeout time.Duration) {
	s.t.Helper()
	var got string
	ok := assert.Eventually(s.t, func() bool {
		got, _ = s.kubectlErr("get", "feature", strings.ToLower(gate), "-o",
			"jsonpath={.status.setBy} {.status.clusterEnabled} {.status.nodesEnabled} {.status.disagreeing}")
		return got == want
	}, timeout, 500*time.Millisecond, "Feature %s: want %q", gate, want)
	if !ok {
		s.t.Fatalf("Feature %s: last %q\nserver log tail:\n%s", gate, got, tail(s.log.String(), 40))
	}
}

// exitReport is what a k3s-like log says about the process's end, for a
// failure message: the lines of components that failed and the daemon's
// "Stopped" line with its error (whyStopped), then the last 40 lines.
func exitReport(log string) string {
	why := whyStopped(log)
	if why == "" {
		why = "(no line says why)"
	}
	return "why it stopped:\n" + why + "\nits log's last 40 lines:\n" + tail(log, 40)
}

// whyStopped returns the lines of a k3s-like log that say a component
// failed (a "Component state" line with an error), that the run ended
// with an error (the daemon's "Stopped" line with err=) or that upstream
// code exited the process (klog's Fatal lines, "F" and a date: exit 255),
// at most 20.
func whyStopped(log string) string {
	var keep []string
	for line := range strings.Lines(log) {
		fatal := len(line) > 5 && line[0] == 'F' && strings.Trim(line[1:5], "0123456789") == ""
		if fatal || (strings.Contains(line, `"Component state"`) || strings.Contains(line, `"Stopped"`)) && strings.Contains(line, " err=") {
			keep = append(keep, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(keep[max(0, len(keep)-20):], "\n")
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// agentCgroupRoot makes a cgroup for a second kubelet on this host in
// every hierarchy (the agent's --cgroup-root: two kubelets sharing one
// would each remove the other's pods' cgroups), removed after the test.
func agentCgroupRoot(t *testing.T) string { return nodeCgroupRoot(t, "agent") }

// nodeCgroupRoot is agentCgroupRoot for the node named node.
func nodeCgroupRoot(t *testing.T, node string) string {
	t.Helper()
	name := fmt.Sprintf("k3s-like-e2e-%s-%d", node, os.Getpid())
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	require.NoError(t, err)
	var made []string
	for _, h := range hierarchies {
		if st, err := os.Stat(h); err != nil || !st.IsDir() {
			continue
		}
		dir := filepath.Join(h, name)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		made = append(made, dir)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil && filepath.Base(h) == "cpuset" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
			}
		}
	}
	t.Cleanup(func() {
		for _, dir := range made {
			var dirs []string
			_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := syscall.Rmdir(dirs[i]); err != nil {
					t.Logf("removing cgroup %s: %v", dirs[i], err)
				}
			}
		}
	})
	return "/" + name
}
