package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/scoping"
)

// binary is the k3s-like binary the tests run as real child processes,
// built once by TestMain with the version stamped in.
var binary string

func TestMain(m *testing.M) {
	if dir := os.Getenv(etcdChildEnv); dir != "" {
		os.Exit(runEtcdChild(dir)) // this test binary as an external etcd (faults_e2e_test.go)
	}
	if kubeconfig := os.Getenv(writerEnv); kubeconfig != "" {
		os.Exit(runWriterChild(kubeconfig)) // this test binary as a writer on a machine (etcdha_e2e_test.go)
	}
	dir, err := os.MkdirTemp("", "k3s-like-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "k3s-like")
	if prebuilt := os.Getenv("K3S_LIKE_BINARY"); prebuilt != "" {
		binary = prebuilt
	} else {
		build := exec.Command("go", "build", "-ldflags", os.Getenv("K3S_LIKE_LDFLAGS"), "-o", binary, "../../cmd/k3s-like")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building k3s-like:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if os.Getenv(imagesEnv) == "" && imagesDir != "" {
		os.RemoveAll(imagesDir) // built by this process (nodeImages)
	}
	os.Exit(code)
}

// freePorts returns n distinct loopback ports that were free a moment ago,
// below the kernel's ephemeral range (testenv.FreePort), so that no outgoing
// connection takes one before the server binds it.
func freePorts(t *testing.T, n int) []int {
	ports, err := testenv.FreePorts(n)
	require.NoError(t, err)
	return ports
}

// server is one k3s-like server process.
type server struct {
	t   *testing.T
	bin string   // the binary; "" is the one under test (binary)
	env []string // added to the process's environment
	// statusTLS: the status endpoint is HTTPS with client certificates
	// (--status-tls=always); statusGet uses the admin kubeconfig's.
	statusTLS bool
	dataDir   string
	ports     map[string]int
	// node: run with the node (argsWithNode, node-a tainted with
	// nodeTaint), in a test that runs in a network namespace of its own.
	node    bool
	cmd     *exec.Cmd
	stderr  *syncBuffer
	exited  chan struct{}
	exitErr error
}

// syncBuffer is the server's output, written by its copying goroutine.
type syncBuffer = testenv.Buffer

func newServer(t *testing.T, dataDir string) *server {
	p := freePorts(t, 6)
	return &server{t: t, dataDir: dataDir, ports: map[string]int{
		"https": p[0], "etcd-client": p[1], "etcd-peer": p[2], "scheduler": p[3], "kcm": p[4], "status": p[5],
	}}
}

func (s *server) binary() string {
	if s.bin != "" {
		return s.bin
	}
	return binary
}

func (s *server) statusAddress() string { return "127.0.0.1:" + strconv.Itoa(s.ports["status"]) }

func (s *server) args(extra ...string) []string {
	return append([]string{"server",
		"--disable-agent", // the node's tests run in a network namespace of their own (node_e2e_test.go)
		"--data-dir=" + s.dataDir,
		"--https-listen-port=" + strconv.Itoa(s.ports["https"]),
		"--etcd-client-port=" + strconv.Itoa(s.ports["etcd-client"]),
		"--etcd-peer-port=" + strconv.Itoa(s.ports["etcd-peer"]),
		"--status-address=" + s.statusAddress(),
		"--kube-scheduler-arg=secure-port=" + strconv.Itoa(s.ports["scheduler"]),
		"--kube-controller-manager-arg=secure-port=" + strconv.Itoa(s.ports["kcm"]),
	}, extra...)
}

// argsWithNode are args without --disable-agent: the server with its node.
func (s *server) argsWithNode(extra ...string) []string {
	var out []string
	for _, a := range s.args(extra...) {
		if a != "--disable-agent" {
			out = append(out, a)
		}
	}
	return out
}

// start runs the binary; the process is killed at the end of the test if
// it is still running.
func (s *server) start(extra ...string) {
	args := s.args(extra...)
	if s.node {
		args = s.argsWithNode(append([]string{"--node-name=node-a", "--node-taint=" + nodeTaint}, extra...)...)
	}
	s.cmd = exec.Command(s.binary(), args...)
	s.cmd.Env = append(os.Environ(), s.env...)
	s.stderr = &syncBuffer{}
	s.cmd.Stdout = io.Discard
	s.cmd.Stderr = s.stderr
	s.exited = make(chan struct{})
	require.NoError(s.t, s.cmd.Start())
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.exited)
	}()
	cmd, exited, stderr := s.cmd, s.exited, s.stderr
	s.t.Cleanup(func() {
		select {
		case <-exited:
		default:
			if s.node { // a stop unmounts what the node mounted
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(60 * time.Second):
				}
			}
			_ = cmd.Process.Kill()
			<-exited
		}
		if s.node && cmd.ProcessState.ExitCode() != 0 {
			if left := sweepNode(s.t, s.dataDir); left.mounts+left.shims > 0 {
				s.t.Logf("k3s-like exited with %v: removed the %d mounts and %d shims its node left", cmd.ProcessState, left.mounts, left.shims)
			}
		}
		out := stderr.String()
		if s.t.Failed() {
			s.t.Logf("k3s-like harness and leader-election lines:\n%s", lifecycleLines(out))
			s.t.Logf("k3s-like stderr (last 60 lines):\n%s", testenv.Tail(out, 60))
		}
		keepLog(s.t, cmd.Process.Pid, out)
	})
}

// keepLog writes a server's whole log (pid's) to $K3S_LIKE_LOGS, a
// directory where every server's log is kept, passed or failed (to
// compare the two), if it is set.
func keepLog(t *testing.T, pid int, log string) {
	dir := os.Getenv("K3S_LIKE_LOGS")
	if dir == "" {
		return
	}
	name := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(t.Name())+"-"+strconv.Itoa(pid)+".log")
	if err := os.WriteFile(name, []byte(log), 0o644); err != nil {
		t.Logf("k3s-like log not kept: %v", err)
	} else if t.Failed() {
		t.Logf("k3s-like log kept in %s", name)
	}
}

// lifecycleLines returns the lines of a k3s-like log that say what the
// harness and the electors did (phases, component states, recoveries,
// leases): on a failure in CI, where only part of the output is shown,
// they tell what stopped the server long before the last lines do.
func lifecycleLines(log string) string {
	var keep []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, `"Harness phase"`) || strings.Contains(line, `"Component state"`) ||
			strings.Contains(line, `"Component failed`) || strings.Contains(line, `"Leader election: `) ||
			strings.Contains(line, `"Stopped while starting"`) || strings.Contains(line, `stopped (`) {
			keep = append(keep, strings.TrimRight(line, "\n"))
		}
	}
	return strings.Join(keep, "\n")
}

// waitReady polls the status handler's /healthz until every component is
// ready, failing if the process exits first.
func (s *server) waitReady(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			s.t.Fatalf("k3s-like exited before it was ready: %v\n%s", s.exitErr, testenv.Tail(s.stderr.String(), 40))
		default:
		}
		resp, err := s.statusGet("/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("k3s-like not ready within %s\n%s", timeout, testenv.Tail(s.stderr.String(), 40))
}

// statusGet GETs path from the status endpoint, over TLS with the admin
// client certificate when s.statusTLS.
func (s *server) statusGet(path string) (*http.Response, error) {
	if !s.statusTLS {
		return http.Get("http://" + s.statusAddress() + path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: tlsConfig}
	defer tr.CloseIdleConnections()
	return (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + s.statusAddress() + path)
}

// wait waits for the process to exit and returns its exit code.
func (s *server) wait(timeout time.Duration) (int, time.Duration) {
	start := time.Now()
	select {
	case <-s.exited:
	case <-time.After(timeout):
		s.t.Fatalf("k3s-like did not exit within %s", timeout)
	}
	return s.cmd.ProcessState.ExitCode(), time.Since(start)
}

func (s *server) client() *kubernetes.Clientset {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "admin.kubeconfig"))
	require.NoError(s.t, err)
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(s.t, err)
	return c
}

func TestServerRunsPodsStopsAndRestarts(t *testing.T) {
	dataDir := t.TempDir()
	s := newServer(t, dataDir)
	start := time.Now()
	s.start()
	s.waitReady(90 * time.Second)
	t.Logf("exec to all-ready: %s", time.Since(start))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := s.client()
	// /version: the minor this binary (and this test) was built from,
	// emulating itself: bin/k3s-like-1.36 says v1.36.x.
	info, err := c.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Regexp(t, `^v`+regexp.QuoteMeta(version.DefaultKubeBinaryVersion)+`\.\d+$`, info.GitVersion)
	assert.Equal(t, "1."+info.Minor, version.DefaultKubeBinaryVersion)
	assert.Equal(t, info.Minor, info.EmulationMinor, "no --emulated-version: it emulates its own minor")
	t.Logf("/version: %s (emulation %s.%s, min compatibility %s.%s)", info.GitVersion, info.EmulationMajor, info.EmulationMinor, info.MinCompatibilityMajor, info.MinCompatibilityMinor)
	createReadyNode(ctx, t, c, "node-1")
	created := time.Now()
	deployAndWaitBound(ctx, t, c, "web", 3, "node-1")
	t.Logf("Deployment created to 3 Pods bound: %s", time.Since(created))
	caBefore, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, took := s.wait(10 * time.Second)
	assert.Equal(t, 0, code, "SIGTERM exits 0")
	t.Logf("SIGTERM to exit: %s", took)
	assert.Less(t, took, 10*time.Second)
	assert.Empty(t, childrenOf(s.cmd.Process.Pid), "no child processes left")

	// Restart on the same data dir: state and CA survive.
	s2 := &server{t: t, dataDir: dataDir, ports: s.ports}
	s2.start()
	s2.waitReady(90 * time.Second)
	c = s2.client()
	_, err = c.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
	assert.NoError(t, err, "the Deployment survived the restart")
	_, err = c.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	assert.NoError(t, err, "the Node survived the restart")
	caAfter, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, caBefore, caAfter, "the same CA")
	assert.NoError(t, verifyServedBy(s2.ports["https"], caBefore), "the apiserver serves a certificate of that CA")
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s2.wait(10 * time.Second)
	assert.Equal(t, 0, code)
}

func TestPerComponentFeatureGates(t *testing.T) {
	// k3s#11853: a different alpha gate per component, each through its own
	// --kube-*-arg.
	gates := map[string]string{
		"kube-apiserver":          testenv.APIServerGate,
		"kube-scheduler":          testenv.SchedulerGate,
		"kube-controller-manager": testenv.ControllerManagerGate,
	}
	s := newServer(t, t.TempDir())
	s.start(
		"--kube-apiserver-arg=feature-gates="+gates["kube-apiserver"]+"=true",
		"--kube-scheduler-arg=feature-gates="+gates["kube-scheduler"]+"=true",
		"--kube-controller-manager-arg=feature-gates="+gates["kube-controller-manager"]+"=true",
	)
	s.waitReady(90 * time.Second)

	plan := s.fullPlan()
	byName := map[string]scoping.FeatureState{}
	for _, f := range plan.FeatureStates() {
		byName[f.Name] = f
	}
	for component, gate := range gates {
		f := byName[gate]
		assert.True(t, f.Enabled, gate)
		assert.Equal(t, "Alpha", f.Stage, gate)
		assert.Equal(t, []scoping.Request{{Component: component, Value: "true", Flag: "--feature-gates=" + gate + "=true"}}, f.Requests, gate)
	}
	table, err := exec.Command(binary, "features", "--status-address="+s.statusAddress()).Output()
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+strings.ToLower(testenv.SchedulerGate)+`\s+Alpha\s+true\s+false\s+kube-scheduler=true$`, string(table))

	metrics, err := s.client().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	require.NoError(t, err)
	for _, gate := range gates {
		assert.Contains(t, string(metrics), `kubernetes_feature_enabled{name="`+gate+`",stage="ALPHA"} 1`, "the apiserver's /metrics shows %s enabled", gate)
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(10 * time.Second)
	assert.Equal(t, 0, code)
}

// TestConflictFailsBeforeAnythingListens: a feature-gate conflict stops the
// process before it opens any port or writes anything. The process lives
// ~0.1 s and a listener it opened before the barrier failed is closed again
// by the exit, so a look at the ports after the exit proves nothing. Two
// runs look while it runs instead:
//
//   - watched: every port is dialled in a tight loop for the whole life of
//     the process (watchListeners). It sees a listener that stays open
//     longer than the gap between two dials of its port — ~0.15 ms, but
//     milliseconds while the test is descheduled — whatever the process
//     does with errors. A listener opened and closed within one gap is
//     missed.
//   - ports held: the test itself listens on every port before the process
//     starts, so any listen the process attempts before the barrier fails
//     with "address already in use", however short-lived it would have been;
//     the process must still exit 1 with the conflict and nothing else. This
//     one is deterministic, but only for a listen whose error is reported.
func TestConflictFailsBeforeAnythingListens(t *testing.T) {
	conflict := []string{
		"--kube-apiserver-arg=feature-gates=" + testenv.SchedulerGate + "=true",
		"--kube-scheduler-arg=feature-gates=" + testenv.SchedulerGate + "=false",
	}
	const wantErr = `feature gate "` + testenv.SchedulerGate + `": kube-apiserver sets true (--feature-gates=` + testenv.SchedulerGate + `=true), kube-scheduler sets false (--feature-gates=` + testenv.SchedulerGate + `=false)`

	t.Run("watched", func(t *testing.T) {
		dataDir := t.TempDir()
		s := newServer(t, dataDir)
		watch := watchListeners(s.ports)
		s.start(conflict...)
		code, took := s.wait(10 * time.Second)
		accepted, dials := watch.stop()
		assert.Equal(t, 1, code)
		t.Logf("conflict to exit: %s; %d dials per port while it ran, one every %s", took, dials, took/time.Duration(max(dials, 1)))
		assert.Contains(t, s.stderr.String(), wantErr)
		assert.Empty(t, accepted, "ports that accepted a connection while k3s-like ran: something listened before the barrier failed")
		// Not a vacuous watch: every port was dialled, many times, while
		// the process ran.
		assert.GreaterOrEqual(t, dials, int64(20), "dials per port while k3s-like ran")
		// Nothing is left listening after the exit either (a stray child).
		for name, port := range s.ports {
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if assert.NoError(t, err, "port %s (%d) is free after the exit", name, port) {
				ln.Close()
			}
		}
		entries, err := os.ReadDir(dataDir)
		require.NoError(t, err)
		assert.Empty(t, entries, "the empty data dir stays empty: no etcd data, no certificates")
	})

	t.Run("ports held", func(t *testing.T) {
		s := newServer(t, t.TempDir())
		for name, port := range s.ports {
			// A listening socket on 127.0.0.1 also makes a bind of the
			// port on 0.0.0.0 or [::] fail.
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			require.NoError(t, err, "port %s", name)
			defer ln.Close()
		}
		s.start(conflict...)
		code, _ := s.wait(10 * time.Second)
		assert.Equal(t, 1, code)
		stderr := s.stderr.String()
		assert.Contains(t, lastLine(stderr), wantErr, "the conflict is the error the process exits with")
		assert.NotContains(t, stderr, "address already in use", "k3s-like tried to listen on a port before the barrier failed")
	})
}

// listenWatch dials each of a server's ports on loopback in a tight loop,
// one goroutine per port, from before the process starts until stop, and
// records the ports that ever accepted a connection.
//
// Why dialling: a connect to a port with a listening socket completes in the
// kernel whether or not the process ever calls accept, and a connect to a
// port without one is refused at once, so a dial is a direct "does anything
// listen here now" that neither binds the port (net.Listen by the test would
// take the port from the process and hide the very listener it looks for)
// nor depends on the process's logs. 127.0.0.1 reaches listeners on
// 127.0.0.1, 0.0.0.0 and dual-stack [::] — every address k3s-like binds.
// Reading /proc/net/tcp instead would see any address, but one read costs
// ~15 ms on a host with a large socket table, against ~30 µs a refused dial.
//
// What it cannot see: a listener opened and closed again between two dials
// of its port. They are ~0.15 ms apart on average (the test logs it), but
// milliseconds while the test is descheduled: on a loaded 2-core host, with
// a listener opened before the barrier and closed when the process stops,
// the watch failed 20 runs of 20; with one open for only 10 ms, 1 ms or
// 0.2 ms, it failed 19, 11 and 5 of 20. The "ports held" run of
// TestConflictFailsBeforeAnythingListens catches the short ones whose
// listen error is reported, in every run.
type listenWatch struct {
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	accepted map[string]int
	dials    map[string]int64
}

func watchListeners(ports map[string]int) *listenWatch {
	w := &listenWatch{done: make(chan struct{}), accepted: map[string]int{}, dials: map[string]int64{}}
	for name, port := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		w.wg.Go(func() {
			var n int64
			defer func() {
				w.mu.Lock()
				w.dials[name] = n
				w.mu.Unlock()
			}()
			for {
				select {
				case <-w.done:
					return
				default:
				}
				n++
				c, err := net.DialTimeout("tcp", addr, time.Second)
				if err == nil {
					c.Close()
					w.mu.Lock()
					w.accepted[name] = port
					w.mu.Unlock()
				}
			}
		})
	}
	return w
}

// stop ends the watch and returns the ports that accepted a connection and
// the fewest dials any one port got.
func (w *listenWatch) stop() (accepted map[string]int, minDials int64) {
	close(w.done)
	w.wg.Wait()
	minDials = -1
	for _, n := range w.dials {
		if minDials < 0 || n < minDials {
			minDials = n
		}
	}
	return w.accepted, minDials
}

func TestBadInputOneClearLine(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown scheduler flag", []string{"--kube-scheduler-arg=no-such-flag=1"}, "k3s-like: kube-scheduler failed in phase parse: kube-scheduler: unknown flag: --no-such-flag"},
		{"malformed emulated version", []string{"--emulated-version=1.x"}, `k3s-like: --emulated-version=1.x: illegal version string "1.x": use major.minor, e.g. --emulated-version=1.36`},
		{"data dir not writable", []string{"--data-dir=" + filepath.Join(file, "data")}, "k3s-like: data dir " + filepath.Join(file, "data") + " cannot be created (not a directory): choose another --data-dir"},
		{"one leading dash", []string{"--kube-apiserver-arg=-v=2"}, "k3s-like: --kube-apiserver-arg=-v=2: a flag has two leading dashes or none, e.g. --kube-apiserver-arg=v=2"},
		{"kubeconfig mode not octal", []string{"--write-kubeconfig-mode=999"}, "k3s-like: --write-kubeconfig-mode=999: want octal permission bits, e.g. 0600 or 0640"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, t.TempDir())
			s.start(tc.args...)
			code, _ := s.wait(10 * time.Second)
			assert.Equal(t, 1, code)
			last := lastLine(s.stderr.String())
			assert.Contains(t, last, tc.want)
			assert.True(t, strings.HasPrefix(last, "k3s-like: "), "the last line is the error: %q", last)
		})
	}
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			last = sc.Text()
		}
	}
	return last
}

// childrenOf lists processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// verifyServedBy does a TLS handshake with the apiserver trusting only caPEM.
func verifyServedBy(port int, caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no CA in PEM")
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return err
	}
	return conn.Close()
}

func readFileIfExists(path string) ([]byte, error) { return os.ReadFile(path) }

func TestDryRunPrintsThePlanAndTouchesNothing(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "never-created")
	run := func(args ...string) (string, string, int) {
		cmd := exec.Command(binary, append([]string{"server", "--disable-agent", "--data-dir=" + dataDir, "--dry-run"}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return stdout.String(), stderr.String(), code
	}
	out, _, code := run("--feature-gates="+testenv.SchedulerGate+"=true", "--kube-apiserver-arg=v=2", "--disable-controller-manager")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "kube-apiserver:\n")
	assert.Contains(t, out, "  --v=2\n", "the apiserver's own argument")
	assert.Contains(t, out, "kube-scheduler:\n")
	assert.NotContains(t, out, "kube-controller-manager:", "--disable-controller-manager")
	assert.Regexp(t, `(?m)^`+testenv.SchedulerGate+`\s+Alpha\s+true\s+false\s+flag\s+kube-apiserver --feature-gates=`+testenv.SchedulerGate+`=true; kube-scheduler --feature-gates=`+testenv.SchedulerGate+`=true$`, out)

	// The same as JSON, for programs (the bench reads it).
	out, _, code = run("--feature-gates="+testenv.SchedulerGate+"=true", "--kube-apiserver-arg=v=2", "--disable-controller-manager", "--output", "json")
	require.Equal(t, 0, code)
	var dry struct {
		Components []struct {
			Name string   `json:"name"`
			Args []string `json:"args"`
		} `json:"components"`
		Plan *scoping.Plan `json:"plan"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &dry), out)
	names := map[string][]string{}
	for _, c := range dry.Components {
		names[c.Name] = c.Args
	}
	assert.Contains(t, names["kube-apiserver"], "--v=2")
	assert.Contains(t, names, "kube-scheduler")
	assert.NotContains(t, names, "kube-controller-manager")
	require.NotNil(t, dry.Plan)
	i := slices.IndexFunc(dry.Plan.Features, func(f scoping.FeatureState) bool { return f.Name == testenv.SchedulerGate })
	require.GreaterOrEqual(t, i, 0)
	assert.True(t, dry.Plan.Features[i].Enabled)
	assert.Len(t, dry.Plan.Features[i].Requests, 2)
	// k3s's argument rules through the binary: leading dashes tolerated,
	// a bare key is true, key-= prepends to the default, a repeated key is
	// repeated.
	out, stderr0, code := run("--kube-apiserver-arg=--profiling", "--kube-apiserver-arg=contention-profiling",
		"--kube-scheduler-arg=bind-address-=127.0.0.2", "--kube-controller-manager-arg=controllers=*", "--kube-controller-manager-arg=controllers=-bootstrapsigner")
	require.Equal(t, 0, code, stderr0)
	assert.Contains(t, out, "  --profiling=true\n", "a bare key replaces the default --profiling=false")
	assert.Contains(t, out, "  --contention-profiling=true\n")
	assert.Contains(t, out, "  --bind-address=127.0.0.2\n  --bind-address=127.0.0.1\n")
	assert.Contains(t, out, "  --controllers=*\n  --controllers=-bootstrapsigner\n")
	// A config file (k3s's rules), overridden by the command line; an
	// unknown key is exit 1 naming it and the file.
	cfgFile := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(cfgFile, []byte("kube-apiserver-arg: [profiling]\ndisable-controller-manager: true\n"), 0o600))
	out, stderr0, code = run("--config="+cfgFile, "--kube-apiserver-arg=contention-profiling")
	require.Equal(t, 0, code, stderr0)
	assert.Contains(t, out, "  --contention-profiling=true\n")
	assert.NotContains(t, out, "--profiling=true", "the command line's --kube-apiserver-arg overrides the file's")
	assert.NotContains(t, out, "kube-controller-manager:", "disable-controller-manager from the file")
	require.NoError(t, os.WriteFile(cfgFile, []byte("no-such-flag: 1\n"), 0o600))
	_, stderr0, code = run("--config=" + cfgFile)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(stderr0), `config file `+cfgFile+`: unknown key "no-such-flag"`)
	_, stderr, code := run("--output", "yaml")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--output=yaml: want table or json")

	_, stderr, code = run("--kube-apiserver-arg=feature-gates="+testenv.SchedulerGate+"=true", "--kube-scheduler-arg=feature-gates="+testenv.SchedulerGate+"=false")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `feature gate "`+testenv.SchedulerGate+`": kube-apiserver sets true`)
	_, err := os.Stat(dataDir)
	assert.True(t, os.IsNotExist(err), "a dry run writes nothing, not even the data dir")
}

// TestFileModes: private keys and kubeconfigs are 0600, the data dir 0700.
func TestFileModes(t *testing.T) {
	// A data dir the binary must create: it leaves an existing dir's mode
	// alone, and t.TempDir's own dir is 0755 (os.Mkdir 0777 less the
	// umask), so with that the check would see the test's mode, not the
	// binary's.
	dataDir := filepath.Join(t.TempDir(), "data")
	s := newServer(t, dataDir)
	s.start("--disable-scheduler", "--disable-controller-manager")
	s.waitReady(90 * time.Second)
	info, err := os.Stat(dataDir)
	require.NoError(t, err)
	assert.Equal(t, "0700", fmt.Sprintf("%#o", info.Mode().Perm()), "the mode of the data dir %s", dataDir)
	var checked int
	require.NoError(t, filepath.WalkDir(filepath.Join(dataDir, "tls"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(path, ".key") || strings.HasSuffix(path, ".kubeconfig") {
			info, err := d.Info()
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), path)
			checked++
		}
		return nil
	}))
	assert.GreaterOrEqual(t, checked, 10)
	info, err = os.Stat(filepath.Join(dataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "--write-kubeconfig default")
	status, err := http.Get("http://" + s.statusAddress() + "/components")
	require.NoError(t, err)
	defer status.Body.Close()
	body, _ := io.ReadAll(status.Body)
	assert.NotContains(t, string(body), "kube-scheduler", "--disable-scheduler")
	// The cluster's full token, as k3s's server writes it on its embedded
	// datastore too: 0600, pinning the server CA.
	token, err := os.ReadFile(filepath.Join(dataDir, "token"))
	require.NoError(t, err)
	info, err = os.Stat(filepath.Join(dataDir, "token"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "DATA_DIR/token")
	ca, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	caSum := sha256.Sum256(ca)
	assert.Regexp(t, `^K10`+hex.EncodeToString(caSum[:])+`::server:[0-9a-f]{64}\n$`, string(token))
	assert.NotContains(t, s.stderr.String(), strings.TrimSpace(string(token)), "the token is never logged")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(10 * time.Second)
	assert.Equal(t, 0, code)

	// --write-kubeconfig-mode, as k3s's, on the next start.
	s.start("--disable-scheduler", "--disable-controller-manager", "--write-kubeconfig-mode=640")
	s.waitReady(90 * time.Second)
	again, err := os.ReadFile(filepath.Join(dataDir, "token"))
	require.NoError(t, err)
	assert.Equal(t, string(token), string(again), "the same token on the next start")
	info, err = os.Stat(filepath.Join(dataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "--write-kubeconfig-mode=640")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s.wait(10 * time.Second)
	assert.Equal(t, 0, code)
}

// createReadyNode creates a Node object that the scheduler can bind to:
// Ready, with capacity.
func createReadyNode(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	require.NoError(t, testenv.CreateReadyNode(ctx, c, name))
}

// deployAndWaitBound creates a Deployment and waits (60 s at most) until
// all its Pods exist and are bound to node.
func deployAndWaitBound(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, replicas int32, node string) {
	require.NoError(t, testenv.DeployAndWaitBound(ctx, c, name, replicas, node))
}
