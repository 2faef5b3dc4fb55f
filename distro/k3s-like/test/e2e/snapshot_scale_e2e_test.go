package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// snapshotPods is how many Pods TestEtcdSnapshotAtScale creates:
// $K3S_LIKE_SNAPSHOT_PODS (make faults: 5000), else 500.
func snapshotPods(t *testing.T) int { return envInt(t, "K3S_LIKE_SNAPSHOT_PODS", 500) }

var savedRevision = regexp.MustCompile(`\((\d+) bytes\), revision (\d+), (\d+) keys`)

// TestEtcdSnapshotAtScale: a server with --cluster-init holds
// K3S_LIKE_SNAPSHOT_PODS Pods (Pending: no node matches their selector);
// `etcd-snapshot save` takes a snapshot that holds every one of them (its
// revision is at least the last Pod's resourceVersion), its file the size
// it reports; the time, size and count are logged as an "HA snapshot" line.
func TestEtcdSnapshotAtScale(t *testing.T) {
	n := snapshotPods(t)
	s := newServer(t, t.TempDir())
	s.start("--cluster-init")
	s.waitReady(2 * time.Minute)

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.dataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 500, 500
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ctx := t.Context()
	_, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "scale"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	created := time.Now()
	var (
		next    atomic.Int64
		lastRV  atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				p, err := c.CoreV1().Pods("scale").Create(ctx, scalePod(int(i)), metav1.CreateOptions{})
				if err != nil {
					errOnce.Do(func() { first = err })
					return
				}
				rv, _ := strconv.ParseInt(p.ResourceVersion, 10, 64)
				for old := lastRV.Load(); rv > old && !lastRV.CompareAndSwap(old, rv); old = lastRV.Load() {
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, first, "creating the Pods")
	t.Logf("HA snapshot: %d Pods created in %.1fs", n, time.Since(created).Seconds())
	pods, err := c.CoreV1().Pods("scale").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	require.NoError(t, err)
	require.Len(t, pods.Items, n)

	saveCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(saveCtx, s.binary(), "etcd-snapshot", "save", "--data-dir="+s.dataDir,
		"--etcd-client-port="+strconv.Itoa(s.ports["etcd-client"]), "--node-name=server", "--name=scale").CombinedOutput()
	took := time.Since(began)
	require.NoError(t, err, "%s", out)
	m := savedRevision.FindStringSubmatch(string(out))
	require.NotNil(t, m, "save's output: %s", out)
	size, _ := strconv.ParseInt(m[1], 10, 64)
	revision, _ := strconv.ParseInt(m[2], 10, 64)
	assert.GreaterOrEqual(t, revision, lastRV.Load(), "the snapshot holds the last Pod created")
	files, err := filepath.Glob(filepath.Join(s.dataDir, "snapshots", "scale-server-*"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	fi, err := os.Stat(files[0])
	require.NoError(t, err)
	assert.Equal(t, size, fi.Size(), "the size save reports is the file's")
	t.Logf("HA snapshot at %d Pods: %.2fs, %d bytes (%.1f MiB), revision %d, %s keys", n, took.Seconds(), size, float64(size)/(1<<20), revision, m[3])
}

// scalePod is a Pod no node runs: its selector matches none.
func scalePod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%05d", i), Labels: map[string]string{"app": "scale"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"k3s-like.io/snapshot-test": "nowhere"},
			Containers: []corev1.Container{{
				Name: "c", Image: "kubeharness.local/busybox:none", Command: []string{"sh", "-c", "exec sleep 36000"},
			}},
		},
	}
}
