package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// The node's end-to-end tests run `k3s-like server` with its node (the
// kubelet, containerd from the binary, the CNI plugins from the binary)
// inside a network namespace each test creates: loopback up and a veth
// with the documentation address 192.0.2.10 as the node IP and the default
// route, so that no Pod or Service packet can leave the machine. They need
// root, runc, iptables, unshare and nsenter (.ci/run installs what Debian
// lacks), and the images of `make images`, which they build.

const nodeIP = "192.0.2.10"

// busyboxImage is the busybox image of images/ (its tag is the Debian
// package's version): read from the archive's name list by nodeImages.
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
		dir, err := os.MkdirTemp("", "k3s-like-images")
		if err != nil {
			imagesErr = err
			return
		}
		cmd := exec.Command("go", "run", "./cmd/mkimages", "-out", dir)
		cmd.Dir = filepath.Join("..", "..", "images")
		out, err := cmd.CombinedOutput()
		if err != nil {
			imagesErr = fmt.Errorf("make images: %v\n%s", err, out)
		}
		imagesDir = dir
	})
	require.NoError(t, imagesErr)
	return imagesDir
}

// busyboxImage is the name of the busybox image in dir.
func busyboxImage(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", "busybox-static").Output()
	require.NoError(t, err, "Debian's busybox-static")
	v := string(out)
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	return "kubeharness.local/busybox:" + strings.NewReplacer("+", "_", "~", "_").Replace(v)
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
	cmd     *exec.Cmd // unshare
	pid     int       // k3s-like
	log     *syncBuffer
	exited  chan struct{}
	exitErr error
	started time.Time
}

// startNodeServer runs the server on dataDir (its images put in place)
// inside a new network namespace.
func startNodeServer(t *testing.T, dataDir string, extra ...string) *nodeServer {
	t.Helper()
	imgs := filepath.Join(dataDir, "agent", "images")
	require.NoError(t, os.MkdirAll(imgs, 0o700))
	for _, f := range []string{"pause.tar", "busybox.tar"} {
		b, err := os.ReadFile(filepath.Join(nodeImages(t), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(imgs, f), b, 0o600))
	}
	script := `set -e
ip link set lo up
ip link add eth0 type veth peer name eth0p
ip addr add ` + nodeIP + `/24 dev eth0
ip link set eth0 up
ip link set eth0p up
ip route add default via 192.0.2.1 dev eth0
exec "$@"`
	args := append([]string{"--net", "--fork", "sh", "-c", script, "sh", binary, "server", "--data-dir=" + dataDir, "--node-name=node-a"}, extra...)
	s := &nodeServer{t: t, dataDir: dataDir, log: &syncBuffer{}, exited: make(chan struct{}), started: time.Now()}
	s.cmd = exec.Command("unshare", args...)
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
			t.Logf("k3s-like harness lines:\n%s", lifecycleLines(s.log.String()))
			t.Logf("k3s-like log (last 80 lines):\n%s", testenv.Tail(s.log.String(), 80))
		}
	})
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
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.t.Fatalf("k3s-like exited: %v", s.exitErr)
		default:
		}
		out, err := s.kubectlErr("get", "node", "node-a", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		if err == nil && out == "True" {
			return time.Since(s.started)
		}
		time.Sleep(250 * time.Millisecond)
	}
	s.t.Fatalf("node-a not Ready within %s", timeout)
	return 0
}

// waitFor polls kubectl's jsonpath output until it equals want.
func (s *nodeServer) waitFor(want string, timeout time.Duration, args ...string) {
	s.t.Helper()
	var last string
	require.Eventually(s.t, func() bool {
		last, _ = s.kubectlErr(args...)
		return last == want
	}, timeout, 250*time.Millisecond, "kubectl %v: want %q", args, want)
}

// stop sends SIGTERM and waits for the exit.
func (s *nodeServer) stop() error {
	s.t.Helper()
	require.NoError(s.t, syscall.Kill(s.pid, syscall.SIGTERM))
	select {
	case <-s.exited:
		return s.exitErr
	case <-time.After(60 * time.Second):
		s.t.Fatal("k3s-like did not stop within 60s of SIGTERM")
		return nil
	}
}

func (s *nodeServer) apply(yaml string) {
	s.t.Helper()
	f := filepath.Join(s.t.TempDir(), "obj.yaml")
	require.NoError(s.t, os.WriteFile(f, []byte(yaml), 0o600))
	s.kubectl("apply", "-f", f)
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
	runDir := filepath.Dir(socket)
	require.NoError(t, s.stop(), "SIGTERM: a clean stop")
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	// containerd, its shims (-address SOCKET) and their containers' processes
	require.NoError(t, err)
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		c := string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		assert.False(t, strings.Contains(c, socket) || strings.Contains(c, dataDir) || c == "sleep 3599 " || strings.HasPrefix(c, "httpd -f -p 8080"),
			"process %s outlived the server: %s", p.Name(), c)
	}
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
		s2.waitFor("true", 90*time.Second, "get", "pod", name, "-o", "jsonpath={.status.containerStatuses[0].ready}")
	}
	require.NoError(t, s2.stop())
}

// TestNodeGateConflictStopsEverything: a kubelet gate the apiserver sets
// the other way is the barrier's conflict: exit 1, naming both, before
// anything listens or the node starts.
func TestNodeGateConflictStopsEverything(t *testing.T) {
	s := newServer(t, t.TempDir())
	out, err := exec.Command(binary, s.argsWithNode(
		"--kube-apiserver-arg=feature-gates="+testenv.KubeletGate+"=false",
		"--kubelet-arg=feature-gates="+testenv.KubeletGate+"=true")...).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, string(out), "kube-apiserver sets false (--feature-gates="+testenv.KubeletGate+"=false)")
	assert.Contains(t, string(out), "kubelet sets true (--feature-gates="+testenv.KubeletGate+"=true)")
	_, err = os.Stat(filepath.Join(s.dataDir, "agent"))
	assert.True(t, os.IsNotExist(err), "the node wrote nothing")
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
