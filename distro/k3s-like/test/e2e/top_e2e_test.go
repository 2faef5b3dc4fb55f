package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// topOutput is what `k3s-like top -o json` prints.
type topOutput struct {
	DurationSeconds float64 `json:"durationSeconds"`
	CPUSeconds      float64 `json:"cpuSeconds"`
	Goroutines      int64   `json:"goroutines"`
	Components      []struct {
		Component  string  `json:"component"`
		CPUPercent float64 `json:"cpuPercent"`
		CPUSeconds float64 `json:"cpuSeconds"`
		Goroutines int64   `json:"goroutines"`
	} `json:"components"`
}

// TestTopShowsTheBusyComponent: while clients list ConfigMaps from the
// apiserver's watch cache in a tight loop (resourceVersion=0: no etcd, no
// controller reacts, the apiserver alone works), `k3s-like top` gives
// kube-apiserver the largest share of the CPU, and every running component
// goroutines of its own. The status endpoint serves /debug/pprof (with
// --enable-pprof), labelled — its own goroutines as status-endpoint — but
// not the command line.
func TestTopShowsTheBusyComponent(t *testing.T) {
	s := newServer(t, t.TempDir())
	s.start("--enable-pprof")
	s.waitReady(90 * time.Second)

	get := func(path string) (int, string) {
		resp, err := s.statusGet(path)
		require.NoError(t, err, path)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err, path)
		return resp.StatusCode, string(body)
	}
	code, body := get("/debug/pprof/")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine")
	for _, path := range []string{"/debug/pprof/heap", "/debug/pprof/allocs", "/debug/pprof/symbol"} {
		code, _ := get(path)
		assert.Equal(t, http.StatusOK, code, path)
	}
	code, body = get("/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `# labels: {"component":"kube-apiserver"}`)
	assert.Contains(t, body, `# labels: {"component":"status-endpoint"}`, "the status endpoint's own goroutines are labelled")
	code, body = get("/debug/pprof/cmdline")
	assert.Equal(t, http.StatusNotFound, code, "the command line may carry a secret")
	assert.NotContains(t, body, "--data-dir")

	// The load: ConfigMaps listed from the watch cache, as fast as four
	// clients go, unthrottled (the admin is exempt from API priority and
	// fairness).
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	cfg.QPS = -1
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "top"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for i := range 100 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-" + strconv.Itoa(i)}, Data: map[string]string{"data": strings.Repeat("x", 1024)}}
		_, err := c.CoreV1().ConfigMaps("top").Create(ctx, cm, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var load sync.WaitGroup
	var listErr error
	var errOnce sync.Once
	for range 4 {
		load.Go(func() {
			for loadCtx.Err() == nil {
				_, err := c.CoreV1().ConfigMaps("top").List(loadCtx, metav1.ListOptions{ResourceVersion: "0"})
				if err != nil && loadCtx.Err() == nil {
					errOnce.Do(func() { listErr = err })
					return
				}
			}
		})
	}
	defer func() { stopLoad(); load.Wait() }()
	time.Sleep(time.Second) // past the creations' aftermath

	out, err := exec.Command(binary, "top", "--seconds=5", "-o", "json", "--status-address="+s.statusAddress()).Output()
	require.NoError(t, err, stderrOf(err))
	var top topOutput
	require.NoError(t, json.Unmarshal(out, &top), string(out))
	table, err := exec.Command(binary, "top", "--seconds=2", "--status-address="+s.statusAddress()).Output()
	require.NoError(t, err, stderrOf(err))
	stopLoad()
	load.Wait()
	require.NoError(t, listErr)
	t.Logf("k3s-like top --seconds 2, while 4 clients list ConfigMaps:\n%s", table)
	t.Logf("k3s-like top --seconds 5 -o json: %s", out)

	assert.InDelta(t, 5, top.DurationSeconds, 1)
	assert.Positive(t, top.CPUSeconds)
	// The busy component first of the components, by far (measured: about
	// 60% against 2% at most for another component). (other) is not
	// compared: it is almost all the garbage collector's background
	// workers (about 35% here), which collect what the apiserver
	// allocates but carry no label.
	shares := map[string]float64{}
	goroutines := map[string]int64{}
	var order []string
	for _, row := range top.Components {
		shares[row.Component], goroutines[row.Component] = row.CPUPercent, row.Goroutines
		if row.Component != "(other)" {
			order = append(order, row.Component)
		}
	}
	require.NotEmpty(t, order)
	assert.Equal(t, "kube-apiserver", order[0], "the busy component has the largest share: %s", out)
	for _, name := range order[1:] {
		assert.Less(t, 3*shares[name], shares["kube-apiserver"], "%s against kube-apiserver", name)
	}
	code, body = get("/components")
	require.Equal(t, http.StatusOK, code)
	var status struct {
		Components []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &status))
	require.Len(t, status.Components, 10, "etcd, the apiserver, the scheduler, the controller-manager, node-join, the kubelet serving and node client approvers, manifests, the feature publisher and summarizer: %s", body)
	for _, comp := range status.Components {
		assert.Equal(t, "ready", comp.State, comp.Name)
		assert.Positive(t, goroutines[comp.Name], "goroutines of %s", comp.Name)
	}
	lines := strings.Split(strings.TrimSpace(string(table)), "\n")
	assert.Regexp(t, `^COMPONENT\s+CPU%\s+CPU-SECONDS\s+GOROUTINES$`, lines[0])
	assert.Regexp(t, `(?m)^kube-apiserver\s+\d+\.\d%\s+\d+\.\d\d\s+\d+$`, string(table))

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	exit, _ := s.wait(10 * time.Second)
	assert.Equal(t, 0, exit)
}

// stderrOf is the stderr of a command that exited with an error.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
