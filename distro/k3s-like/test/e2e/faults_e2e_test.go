package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
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

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
)

// etcdChildEnv makes the test binary an external etcd (runEtcdChild): a
// process of its own, which a test can pause with SIGSTOP, as a stalled
// disk or an overloaded datastore host stalls etcd.
const etcdChildEnv = "K3S_LIKE_E2E_ETCD_DIR"

// runEtcdChild runs a single-member etcd on loopback with its PKI in dir
// (testenv), prints "ETCD-READY <client URL>" and serves until SIGTERM.
func runEtcdChild(dir string) int {
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd child:", err)
		return 1
	}
	e, err := testenv.StartEtcd(filepath.Join(dir, "etcd"), files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd child:", err)
		return 1
	}
	fmt.Println("ETCD-READY " + e.ClientURL)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	<-ctx.Done()
	e.Close()
	return 0
}

// etcdProcess starts runEtcdChild in a process of its own and returns the
// server flags that point at it, and the process. It is stopped (and
// continued first, if paused) at the end of the test.
func etcdProcess(t *testing.T) ([]string, *os.Process) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), etcdChildEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	logf, err := os.Create(filepath.Join(dir, "etcd.log"))
	require.NoError(t, err)
	cmd.Stderr = logf
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		logf.Close()
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "ETCD-READY "); ok {
				url <- u
			}
		}
	}()
	var clientURL string
	select {
	case clientURL = <-url:
	case <-time.After(time.Minute):
		t.Fatalf("the etcd process is not ready within a minute")
	}
	layout := pki.Layout{Dir: filepath.Join(dir, "pki")}
	return []string{
		"--datastore-endpoint=" + clientURL,
		"--datastore-cafile=" + layout.EtcdCA().CertFile,
		"--datastore-certfile=" + layout.APIServerEtcdClient().CertFile,
		"--datastore-keyfile=" + layout.APIServerEtcdClient().KeyFile,
	}, cmd.Process
}

// faultPauses are the etcd pauses TestSurvivesDatastorePause injects:
// $K3S_LIKE_FAULT_PAUSES (make faults: "5s 15s 30s"), else one of 15 s
// (make test's short form).
func faultPauses(t *testing.T) []time.Duration {
	spec := os.Getenv("K3S_LIKE_FAULT_PAUSES")
	if spec == "" {
		return []time.Duration{15 * time.Second}
	}
	var out []time.Duration
	for _, f := range strings.Fields(spec) {
		d, err := time.ParseDuration(f)
		require.NoError(t, err, "K3S_LIKE_FAULT_PAUSES")
		out = append(out, d)
	}
	return out
}

// leaseFresh reports whether the lease has a holder that renewed it after
// since.
func leaseFresh(ctx context.Context, c kubernetes.Interface, name string, since time.Time) (string, bool) {
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return "", false
	}
	return *l.Spec.HolderIdentity, l.Spec.RenewTime.After(since)
}

// TestSurvivesDatastorePause: a single server on an external etcd; etcd is
// paused (SIGSTOP) longer than the leader-election renew deadline (10 s),
// as a stalled disk does (k3s#2615, #6654, #2853). The server stays up:
// the scheduler and the controller-manager lose their leases and go back
// to standby (Harness.Recover: /components counts the recoveries and says
// why), and hold them again within 20 s of the resume (the new instance
// keeps the old identity, so it renews the record that still names it at
// once, instead of waiting a lease duration as a new candidate must); a
// Deployment created after the resume has its Pods bound; what was written
// before reads back.
//
// Each figure is logged as "FAULT <scenario> <key>=<value> ..." (make
// faults runs it with pauses of 5, 15 and 30 s).
func TestSurvivesDatastorePause(t *testing.T) {
	flags, etcdProc := etcdProcess(t)
	s := newServer(t, t.TempDir())
	s.start(flags...)
	s.waitReady(2 * time.Minute)
	waitControllersBuilt(t, s) // a pause while they are built can exit the process (see there)
	ctx := t.Context()
	c := s.client()
	createReadyNode(ctx, t, c, "node-1")
	_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	leases := []string{"kube-scheduler", "kube-controller-manager"}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, l := range leases {
			_, fresh := leaseFresh(ctx, c, l, time.Now().Add(-time.Minute))
			assert.True(ct, fresh, l)
		}
	}, time.Minute, 500*time.Millisecond, "both leases held before the pause")

	for i, pause := range faultPauses(t) {
		require.NoError(t, etcdProc.Signal(syscall.SIGSTOP))
		time.Sleep(pause)
		require.NoError(t, etcdProc.Signal(syscall.SIGCONT))
		resumed := time.Now()
		select {
		case <-s.exited:
			t.Fatalf("the server exited during a %s datastore pause: %v\n%s", pause, s.exitErr, testenv.Tail(s.stderr.String(), 40))
		default:
		}
		var holders []string
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			holders = holders[:0]
			for _, l := range leases {
				h, fresh := leaseFresh(ctx, c, l, resumed)
				assert.True(ct, fresh, "%s renewed after the resume", l)
				holders = append(holders, h)
			}
		}, 20*time.Second, 200*time.Millisecond, "both leases held again within 20 s of the resume")
		recovered := time.Since(resumed)

		deploy := fmt.Sprintf("after-%d", i)
		deployAndWaitBound(ctx, t, c, deploy, 2, "node-1")
		cm, err := c.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
		require.NoError(t, err, "written before the pause")
		assert.Equal(t, "v", cm.Data["k"])
		recoveries := map[string]int{}
		for _, comp := range componentsStatus(t, s) {
			recoveries[comp.Name] = comp.Recoveries
			if comp.Recoveries > 0 {
				require.NotNil(t, comp.LastRecovery, comp.Name)
				assert.Contains(t, comp.LastRecovery.Cause, "lost the leader-election lease", comp.Name)
			}
		}
		t.Logf("FAULT etcd-pause pause=%s survived=yes leases-held-again-after=%s recoveries(scheduler,controller-manager)=%d,%d objects-lost=0",
			pause, recovered.Round(100*time.Millisecond), recoveries["kube-scheduler"], recoveries["kube-controller-manager"])
		resp, err := s.statusGet("/metrics")
		require.NoError(t, err)
		metricsText, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for name, n := range recoveries {
			assert.Contains(t, string(metricsText), fmt.Sprintf("kubeharness_component_recoveries_total{component=%q} %d\n", name, n), "the status metrics count the demotions")
		}
		if pause > 12*time.Second { // the renew deadline and a retry
			assert.Positive(t, recoveries["kube-scheduler"]+recoveries["kube-controller-manager"], "a pause longer than the renew deadline demoted them (recovered, not exited)")
		}
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// componentsStatus reads the status endpoint's /components.
func componentsStatus(t *testing.T, s *server) []harness.ComponentStatus {
	t.Helper()
	resp, err := s.statusGet("/components")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st struct {
		Components []harness.ComponentStatus `json:"components"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Components
}

// killRounds is how many kill/restart rounds TestNoAcknowledgedWriteLost
// runs: $K3S_LIKE_FAULT_KILL_ROUNDS (make faults: 10), else 1 (make test).
func killRounds(t *testing.T) int { return envInt(t, "K3S_LIKE_FAULT_KILL_ROUNDS", 1) }

// envInt is the integer in $name, else def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, name)
	return n
}

// TestSurvivesDatastorePauseWhileControllersAreBuilt: etcd is paused (15
// s, past the renew deadline) as soon as kube-controller-manager builds
// its controllers, so that its lease is lost while upstream still builds
// them. The server stays up. Until the building is over, the lost lease
// does not make the fence end the controller-manager's requests: two
// upstream constructors exit the process when theirs fails
// (docs/components.md). So no request of it fails with the fence's cause
// before the resume; the building then ends (constructors that honour the
// context, which the lost lease ended, return an error), the demoted
// instance returns, and its successor leads and runs the controllers: a
// Deployment's Pods are bound.
func TestSurvivesDatastorePauseWhileControllersAreBuilt(t *testing.T) {
	flags, etcdProc := etcdProcess(t)
	s := newServer(t, t.TempDir())
	s.start(flags...)
	// Lines upstream's BuildControllers logs while it goes through the
	// controllers (in a map's order): the first one means the building has
	// begun, past CreateControllerContext's wait for a healthy apiserver.
	building := regexp.MustCompile(`"Warning: controller is disabled"|"Controller is disabled by a feature gate"|"Warning: skipping controller"|"QuotaMonitor created object count evaluator"`)
	require.Eventually(t, func() bool { return building.MatchString(s.stderr.String()) },
		2*time.Minute, 5*time.Millisecond, "kube-controller-manager building its controllers")
	require.NoError(t, etcdProc.Signal(syscall.SIGSTOP))
	atPause := len(s.stderr.String())
	time.Sleep(15 * time.Second)
	require.NoError(t, etcdProc.Signal(syscall.SIGCONT))
	require.Eventually(t, func() bool {
		return strings.Contains(s.stderr.String(), `"Component failed; restarting it (Harness.Recover)" component="kube-controller-manager"`)
	}, 30*time.Second, 100*time.Millisecond, "kube-controller-manager demoted after losing its lease")
	s.waitReady(time.Minute)

	s.bindsPods("after-a-pause-while-built")
	out := s.stderr.String()
	// Demoted while the harness still started the others (the scheduler
	// waiting for its own lease), or once it ran: both happen.
	during := "run"
	if run, demoted := strings.Index(out, `"Harness phase" phase="run"`), strings.Index(out, "Component failed; restarting it"); run < 0 || demoted < run {
		during = "start"
	}
	t.Logf("FAULT etcd-pause-while-building pause=15s survived=yes demoted-in-harness-phase=%s", during)
	assert.Greater(t, strings.Index(out, "Starting service account controller"), atPause,
		"the controllers started before the pause: the window was not tested")
	if i := strings.Index(out, "kube-controller-manager stopped (lost the leader-election lease): its API requests get"); i >= 0 {
		t.Errorf("the fence ended a request of the controller-manager while it built its controllers:\n%s", out[max(0, i-1500):min(len(out), i+300)])
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// TestSurvivesDatastorePauseWhileSchedulerStarts: etcd is paused (15 s,
// past the renew deadline) as soon as kube-scheduler acquired its lease,
// while its informers still sync, so that it loses the lease before it
// was ready — the start of a server on a slow disk. The harness recovers
// a component that fails so (nothing depends on the scheduler): the
// server stays up, the scheduler campaigns again at once, and a
// Deployment's Pods are bound. Before, the harness
// recovered only a component that had been ready, and this failure
// stopped the server (CI, 8fc3dd6).
func TestSurvivesDatastorePauseWhileSchedulerStarts(t *testing.T) {
	flags, etcdProc := etcdProcess(t)
	s := newServer(t, t.TempDir())
	s.start(flags...)
	acquired := `"Leader election: acquired the lease, starting" component="kube-scheduler"`
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), acquired) },
		2*time.Minute, 2*time.Millisecond, "kube-scheduler leading")
	require.NoError(t, etcdProc.Signal(syscall.SIGSTOP))
	paused := time.Now()
	time.Sleep(15 * time.Second)
	require.NoError(t, etcdProc.Signal(syscall.SIGCONT))
	out := s.stderr.String()
	readyAtPause := strings.Contains(out, `"Component state" component="kube-scheduler" state="ready"`)
	s.waitReady(time.Minute)
	t.Logf("ready %.1fs after the pause began", time.Since(paused).Seconds())

	s.bindsPods("after-a-pause-while-starting")
	out = s.stderr.String()
	demotedBeforeReady := strings.Contains(out, `"Component failed; restarting it (Harness.Recover)" component="kube-scheduler"`) &&
		strings.Contains(out, `err="kube-scheduler failed in phase start: lost the leader-election lease`)
	t.Logf("FAULT etcd-pause-while-scheduler-starts pause=15s survived=yes scheduler-ready-at-pause=%v demoted-before-ready=%v", readyAtPause, demotedBeforeReady)
	assert.False(t, readyAtPause, "the scheduler was ready before the pause: the window was not tested")
	assert.True(t, demotedBeforeReady, "kube-scheduler lost its lease before it was ready, and was recovered")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// bindsPods creates a ready Node and a Deployment of two replicas named
// name through s, waits until its Pods are bound to that Node (the
// scheduler and the controller-manager both run), and fails the test if
// the server exited meanwhile.
func (s *server) bindsPods(name string) {
	t := s.t
	ctx := t.Context()
	c := s.client()
	createReadyNode(ctx, t, c, "node-1")
	deployAndWaitBound(ctx, t, c, name, 2, "node-1")
	select {
	case <-s.exited:
		t.Fatalf("the server exited: %v\n%s", s.exitErr, testenv.Tail(s.stderr.String(), 40))
	default:
	}
}

// TestNoAcknowledgedWriteLost: a server with embedded etcd is killed
// (SIGKILL: no stop, no flush) in the middle of a stream of ConfigMap
// creates; after a restart on the same data dir every create the apiserver
// acknowledged is there.
func TestNoAcknowledgedWriteLost(t *testing.T) {
	dataDir := t.TempDir()
	s := newServer(t, dataDir)
	s.start()
	s.waitReady(2 * time.Minute)
	var acked []string
	for round := range killRounds(t) {
		c := s.client()
		ctx, cancel := context.WithCancel(t.Context())
		var (
			mu        sync.Mutex
			roundAcks []string
			failed    int
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ctx.Err() == nil; i++ {
				name := fmt.Sprintf("w-%d-%d", round, i)
				_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				mu.Lock()
				if err == nil {
					roundAcks = append(roundAcks, name)
				} else {
					failed++
				}
				mu.Unlock()
			}
		}()
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			mu.Lock()
			defer mu.Unlock()
			assert.GreaterOrEqual(ct, len(roundAcks), 100)
		}, time.Minute, 20*time.Millisecond, "100 creates acknowledged before the kill")
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGKILL))
		_, _ = s.wait(20 * time.Second)
		cancel()
		<-done
		mu.Lock()
		acked = append(acked, roundAcks...)
		n, f := len(roundAcks), failed
		mu.Unlock()

		s = &server{t: t, dataDir: dataDir, ports: s.ports}
		s.start()
		s.waitReady(2 * time.Minute)
		list, err := s.client().CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		present := map[string]bool{}
		for _, cm := range list.Items {
			present[cm.Name] = true
		}
		var lost []string
		for _, name := range acked {
			if !present[name] {
				lost = append(lost, name)
			}
		}
		t.Logf("FAULT kill-during-writes round=%d acknowledged=%d (all rounds %d) failed-in-flight=%d lost=%d", round+1, n, len(acked), f, len(lost))
		assert.Empty(t, lost, "acknowledged creates lost after SIGKILL and restart")
	}
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// TestStopWithoutDatastore: SIGTERM to a server whose external etcd is gone
// (SIGKILLed after ready, or paused with SIGSTOP: a datastore host that no
// longer answers) exits 0 within 10 s, and names nothing it abandoned; so
// does a SIGTERM in the middle of a recovery, etcd paused past the renew
// deadline (the demoted components' successors are starting, against an
// apiserver without its datastore). Before issue 18 it took more than 16 s
// and exited 1: each elected component waited to release its lease and for
// requests upstream makes without a context, then kube-apiserver's
// pre-shutdown hooks waited for etcd past its stop timeout. A client's
// create is in flight at the SIGTERM: before the apiserver bounded the
// requests it serves once stopping, that alone kept it past its stop
// timeout (exit 1 after 11 s). At 1.36 alone it also accepts exit 1 within
// 13 s naming only kube-apiserver as abandoned: upstream's identity lease
// deadlock (identityLeaseDeadlock).
func TestStopWithoutDatastore(t *testing.T) {
	for _, fault := range []struct {
		name string
		sig  syscall.Signal
		// recovering: SIGTERM once a lost lease is being recovered from,
		// else 3 s after the fault.
		recovering bool
	}{{"killed", syscall.SIGKILL, false}, {"paused", syscall.SIGSTOP, false}, {"paused-recovering", syscall.SIGSTOP, true}} {
		t.Run(fault.name, func(t *testing.T) {
			flags, etcdProc := etcdProcess(t)
			s := newServer(t, t.TempDir())
			s.start(flags...)
			s.waitReady(2 * time.Minute)
			waitControllersBuilt(t, s)
			require.NoError(t, etcdProc.Signal(fault.sig))
			if fault.recovering {
				// The renew deadline (10 s) and a retry after the pause.
				require.Eventually(t, func() bool {
					return strings.Contains(s.stderr.String(), "Component failed; restarting it (Harness.Recover)")
				}, 30*time.Second, 100*time.Millisecond, "a lost lease being recovered from")
			} else {
				// Let every client notice: the components' next renew and
				// the apiserver's next lease writes hang or fail.
				time.Sleep(3 * time.Second)
			}
			// A client's write in flight at the SIGTERM, as a cluster
			// always has one (a kubelet's heartbeat, a controller's
			// update): the apiserver waits in etcd's client for it.
			written := make(chan error, 1)
			client := s.client()
			go func() {
				_, err := client.CoreV1().ConfigMaps("default").Create(context.Background(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "in-flight-at-sigterm"}}, metav1.CreateOptions{})
				written <- err
			}()
			time.Sleep(500 * time.Millisecond)
			require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
			code, took := s.wait(30 * time.Second)
			t.Logf("FAULT stop-without-datastore datastore=%s exit=%d took=%s", fault.name, code, took.Round(100*time.Millisecond))
			select {
			case err := <-written:
				assert.Error(t, err, "a create acknowledged without a datastore")
			case <-time.After(5 * time.Second):
				t.Error("the client's create still waits after the server exited")
			}
			if code != 0 && identityLeaseDeadlock(s.stderr.String()) {
				// Bounded and named, not clean: kube-apiserver alone
				// abandoned at its stop timeout, by upstream's identity
				// lease deadlock at 1.36 (docs/components.md). A crash
				// (another code) or another component failing fails here.
				assertOnlyAPIServerAbandoned(t, s.stderr.String())
				assert.Equal(t, 1, code)
				assert.LessOrEqual(t, took, 13*time.Second, "SIGTERM to exit: the elected components' stop (up to 3 s: the controllers' 2 s shutdown timeout, the lease's 1 s release) and the apiserver's 8 s stop timeout")
				return
			}
			assert.Equal(t, 0, code, "exit code\n%s", testenv.Tail(s.stderr.String(), 30))
			assert.LessOrEqual(t, took, 10*time.Second, "SIGTERM to exit\n%s", testenv.Tail(s.stderr.String(), 30))
			assert.NotContains(t, s.stderr.String(), "abandoned")
		})
	}
}

// TestExitOnLeaseLoss: with --exit-on-lease-loss a lost lease stops the
// whole server, as upstream exits the process: etcd paused past the renew
// deadline makes it exit 1, naming the component and the lease, within the
// renew deadline plus a bounded stop (the datastore still paused).
func TestExitOnLeaseLoss(t *testing.T) {
	flags, etcdProc := etcdProcess(t)
	s := newServer(t, t.TempDir())
	s.start(append(flags, "--exit-on-lease-loss")...)
	s.waitReady(2 * time.Minute)
	waitControllersBuilt(t, s)
	require.NoError(t, etcdProc.Signal(syscall.SIGSTOP))
	paused := time.Now()
	code, _ := s.wait(45 * time.Second)
	took := time.Since(paused)
	require.NoError(t, etcdProc.Signal(syscall.SIGCONT))
	t.Logf("FAULT exit-on-lease-loss exit=%d after=%s", code, took.Round(100*time.Millisecond))
	assert.Equal(t, 1, code)
	out := s.stderr.String()
	assert.Regexp(t, `kube-(scheduler|controller-manager) failed in phase run: lost the leader-election lease kube-system/kube-(scheduler|controller-manager)`, out)
	assert.NotContains(t, out, "Component failed; restarting it", "no recovery with --exit-on-lease-loss")
	if identityLeaseDeadlock(out) && strings.Contains(out, "abandoned") { // as in TestStopWithoutDatastore
		assertOnlyAPIServerAbandoned(t, out)
	} else {
		assert.NotContains(t, out, "abandoned")
	}
}

// identityLeaseDeadlock reports whether the server's log says it runs
// Kubernetes 1.36, whose apiserver identity lease controller
// (k8s.io/component-helpers v0.36) can deadlock its pre-shutdown hook with
// the datastore gone (docs/components.md): there, and only there, the stop
// tests accept kube-apiserver abandoned at its stop timeout.
func identityLeaseDeadlock(out string) bool {
	return regexp.MustCompile(`"Running Kubernetes" .*version="v1\.36\.`).MatchString(out)
}

// waitControllersBuilt waits until kube-controller-manager has built its
// controllers and started running them (its service account controller
// logs that it starts). A datastore lost while it still builds them is
// another case, where upstream exits the process: two of its controller
// constructors exit when their first request fails (the namespace
// controller's discovery, the pod certificate request cleaner's
// ClientOrDie), at the apiserver's request timeout without the stop, or
// once the stop's fence ends the request (docs/components.md).
func waitControllersBuilt(t *testing.T, s *server) {
	t.Helper()
	require.Eventually(t, func() bool {
		return strings.Contains(s.stderr.String(), "Starting service account controller")
	}, time.Minute, 100*time.Millisecond, "kube-controller-manager running its controllers")
}

// apiserverAbandoned is the harness's error for kube-apiserver overrunning
// its stop timeout (8 s in k3s-like).
const apiserverAbandoned = "kube-apiserver failed in phase stop: Run did not return within 8s of the stop; its goroutines were abandoned"

// assertOnlyAPIServerAbandoned: the server's final error names
// kube-apiserver as abandoned, and no other component failed in its stop.
func assertOnlyAPIServerAbandoned(t *testing.T, out string) {
	t.Helper()
	assert.Contains(t, lastLines(out, "\"Stopped\""), apiserverAbandoned)
	rest := strings.ReplaceAll(out, apiserverAbandoned, "")
	assert.NotContains(t, rest, "abandoned")
	assert.NotContains(t, rest, "failed in phase stop")
}

// lastLines returns the lines of out from the last one containing marker
// on (the server's final error, which may span lines).
func lastLines(out, marker string) string {
	i := strings.LastIndex(out, marker)
	if i < 0 {
		return ""
	}
	return out[i:]
}
