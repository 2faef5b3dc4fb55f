package main_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// build builds the binary with the version stamped in (MINIMAL_LDFLAGS), or
// returns MINIMAL_BINARY, prebuilt.
func build(t *testing.T) string {
	if prebuilt := os.Getenv("MINIMAL_BINARY"); prebuilt != "" {
		return prebuilt
	}
	bin := filepath.Join(t.TempDir(), "minimal")
	out, err := exec.Command("go", "build", "-ldflags", os.Getenv("MINIMAL_LDFLAGS"), "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// TestMinimal runs the binary as a child process on free loopback ports
// (below the ephemeral range, testenv.FreePort) in a temp dir, configured
// through the environment: ready, a Deployment's three Pods bound to a
// Node, every feature gate published as a Feature object, SIGTERM → exit 0.
func TestMinimal(t *testing.T) {
	binary := build(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	ports, err := testenv.FreePorts(5)
	require.NoError(t, err)
	kill, cancelKill := context.WithCancel(context.Background()) // cancelled at the end: kills it if it still runs
	cmd := exec.CommandContext(kill, binary, "--apiserver-port="+strconv.Itoa(ports[0]))
	cmd.Env = append(os.Environ(),
		"MINIMAL_DATA_DIR="+dataDir,
		"MINIMAL_SCHEDULER_PORT="+strconv.Itoa(ports[1]),
		"MINIMAL_CONTROLLER_MANAGER_PORT="+strconv.Itoa(ports[2]),
		"MINIMAL_ETCD_CLIENT_PORT="+strconv.Itoa(ports[3]),
		"MINIMAL_ETCD_PEER_PORT="+strconv.Itoa(ports[4]),
	)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, cmd.Start())
	var log strings.Builder
	readyLine := make(chan string, 1)
	logDone := make(chan struct{})
	go func() { // the log, and the ready line
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "minimal: ready") {
				readyLine <- sc.Text()
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	exited := make(chan struct{}) // closed once the process exited; then exitErr is its Wait's
	var exitErr error
	go func() { <-logDone; exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancelKill()
		<-exited
		if t.Failed() {
			t.Logf("minimal stderr (last 60 lines):\n%s", testenv.Tail(log.String(), 60))
		}
	})

	select {
	case <-readyLine:
		t.Logf("exec to ready: %s", time.Since(start).Round(time.Millisecond))
	case <-exited:
		t.Fatalf("minimal exited before it was ready: %v", exitErr)
	case <-time.After(2 * time.Minute):
		t.Fatal("minimal not ready within 2 minutes")
	}

	// The admin kubeconfig: 0600, and the data dir 0700.
	kubeconfig := filepath.Join(dataDir, "pki", "admin.kubeconfig")
	for path, want := range map[string]os.FileMode{kubeconfig: 0o600, dataDir: 0o700} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode().Perm(), path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:"+strconv.Itoa(ports[0]), cfg.Host)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(body))

	// A Node and a Deployment of 3: the controller-manager makes the Pods,
	// the scheduler binds all three.
	require.NoError(t, testenv.CreateReadyNode(ctx, client, "node-1"))
	require.NoError(t, testenv.DeployAndWaitBound(ctx, client, "web", 3, "node-1"))

	// kubectl get features: every kube feature gate as a Feature object.
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	var features featuresv1alpha1.FeatureList
	known := func(f featuresv1alpha1.Feature) bool { return f.Name == strings.ToLower(testenv.SchedulerGate) }
	assert.Eventually(t, func() bool { // the publisher applies them concurrently
		list, err := dyn.Resource(featuresv1alpha1.Resource).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		features = featuresv1alpha1.FeatureList{}
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(list.UnstructuredContent(), &features)
		return err == nil && len(features.Items) > 200 && slices.ContainsFunc(features.Items, known)
	}, time.Minute, 500*time.Millisecond, "the Feature objects are published")
	t.Logf("%d Feature objects", len(features.Items))
	assert.Greater(t, len(features.Items), 200)
	i := slices.IndexFunc(features.Items, known)
	require.GreaterOrEqual(t, i, 0, "the "+testenv.SchedulerGate+" gate is listed")
	assert.Equal(t, testenv.SchedulerGate, features.Items[i].Status.Name)
	if assert.Len(t, features.Items[i].Status.Servers, 1) {
		assert.Equal(t, "minimal", features.Items[i].Status.Servers[0].Server, "the publisher's Server")
	}

	// SIGTERM: everything stops, exit status 0, within 30 s.
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	stopStart := time.Now()
	select {
	case <-exited:
		require.NoError(t, exitErr, "exit status 0")
		t.Logf("SIGTERM to exit: %s", time.Since(stopStart).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("minimal did not exit within 30 s of SIGTERM")
	}
}
