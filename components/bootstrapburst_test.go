package components

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

// TestBootstrapBurstLetsTheBuildThroughAtOnce: Config.Client's copy lets
// the service-account bootstrap of every known controller through without
// waiting for the rate limiter, then keeps the configured QPS; the
// configuration the controllers' clients are made from keeps its burst.
func TestBootstrapBurstLetsTheBuildThroughAtOnce(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"x","namespace":"kube-system"}}`))
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, QPS: 20, Burst: 30}
	controllers := len(kcmapp.KnownControllers())
	require.Greater(t, controllers, 30, "upstream's known controllers")

	boot := withBootstrapBurst(cfg, controllers)
	assert.Equal(t, 30, cfg.Burst, "the controllers' configuration keeps its burst")
	assert.Equal(t, float32(20), boot.QPS, "the QPS stays")
	client, err := kubernetes.NewForConfig(boot)
	require.NoError(t, err)
	ctx := context.Background()
	get := func(n int) time.Duration {
		t0 := time.Now()
		for range n {
			_, err := client.CoreV1().ServiceAccounts("kube-system").Get(ctx, "x", metav1.GetOptions{})
			require.NoError(t, err)
		}
		return time.Since(t0)
	}
	// Without the extra burst, 5 requests per controller beyond the first 30
	// wait 50 ms each: (5·controllers−30)/20 s, over 7 s.
	took := get(saBootstrapRequests * controllers)
	assert.Less(t, took, 3*time.Second, "the bootstrap's %d requests", saBootstrapRequests*controllers)
	// What is left is the configured burst (and what refilled meanwhile):
	// 60 more, of which about 30 wait for the configured 20 QPS.
	took = get(60)
	assert.GreaterOrEqual(t, took, 500*time.Millisecond, "after the burst, the configured QPS")
	assert.Equal(t, int64(saBootstrapRequests*controllers+60), served.Load())
}

// TestBootstrapBurstKeepsOtherLimits: no rate limit, or a limiter of its
// own, is left as it is.
func TestBootstrapBurstKeepsOtherLimits(t *testing.T) {
	unlimited := withBootstrapBurst(&rest.Config{QPS: -1, Burst: 30}, 40)
	assert.Equal(t, 30, unlimited.Burst)
	rl := flowcontrol.NewTokenBucketRateLimiter(5, 10)
	own := withBootstrapBurst(&rest.Config{QPS: 20, Burst: 30, RateLimiter: rl}, 40)
	assert.Equal(t, 30, own.Burst)
	assert.Same(t, rl, own.RateLimiter)
	raised := withBootstrapBurst(&rest.Config{QPS: 20, Burst: 30}, 40)
	assert.Equal(t, 30+saBootstrapRequests*40, raised.Burst)
}
