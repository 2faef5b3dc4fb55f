package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// featureApplies is the apiserver's count of APPLY requests to Features
// (apiserver_request_total, every code).
func featureApplies(t *testing.T, c kubernetes.Interface) int {
	t.Helper()
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	require.NoError(t, err)
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="APPLY"`) ||
			!strings.Contains(line, `resource="features"`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		require.NoError(t, err, line)
		n += int(v)
	}
	require.NoError(t, sc.Err())
	return n
}

// TestFeatureDiscoveryQuietWhileNodesJoin: on a fresh data dir, feature
// discovery writes each Feature at most twice (the publisher creates it,
// the summarizer adds the cluster's summary), then nothing while 50 Nodes
// without reports are created: nothing it reports changed.
func TestFeatureDiscoveryQuietWhileNodesJoin(t *testing.T) {
	s := newServer(t, t.TempDir())
	s.start()
	s.waitReady(90 * time.Second)
	c := s.client()
	plan := s.plan()
	require.NotEmpty(t, plan)

	// Settled: every Feature summarized and no apply for 5 s (the
	// summarizer gathers changes for 2 s).
	settled := time.Now()
	last := -1
	require.Eventually(t, func() bool {
		n := featureApplies(t, c)
		if n != last {
			last, settled = n, time.Now()
			return false
		}
		features := s.features()
		for _, f := range features {
			if str(f, "status", "clusterEnabled") == "" {
				return false
			}
		}
		return len(features) == len(plan) && time.Since(settled) >= 5*time.Second
	}, 90*time.Second, 250*time.Millisecond, "feature discovery settles")
	first := last
	t.Logf("FEATURES first publication: %d applies for %d Features", first, len(plan))
	assert.LessOrEqual(t, first, 2*len(plan), "each Feature created once and summarized once")
	assert.GreaterOrEqual(t, first, 2*len(plan), "every Feature created and summarized")

	for i := range 50 {
		_, err := c.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("quiet-node-%02d", i)}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	time.Sleep(6 * time.Second) // three of the summarizer's intervals
	during := featureApplies(t, c) - first
	t.Logf("FEATURES applies while 50 Nodes without reports were created (and 6 s after): %d", during)
	assert.Zero(t, during)
}
