package components

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompat "k8s.io/component-base/compatibility"

	"github.com/kubeharness/kubeharness/components/internal/fence"
	"github.com/kubeharness/kubeharness/scoping"
)

// TestControllerManagerRESTConfig: with WithRESTConfig, the
// controller-manager's configuration and client (what upstream's Run makes
// every other client from) come from the rest.Config — its host, CA,
// credentials and transport wrapper, which no kubeconfig file can hold —
// with upstream's client-connection flags and user agent applied; a
// request reaches the server with them. No kubeconfig flag is given;
// --kubeconfig and --master are refused. In-process, no apiserver: the
// server is an httptest one that records what it was sent.
func TestControllerManagerRESTConfig(t *testing.T) {
	type seen struct{ host, userAgent, auth, path string }
	var (
		mu      sync.Mutex
		reqs    []seen
		hanging atomic.Bool // answer nothing until the request ends, as without a datastore
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hanging.Load() {
			<-r.Context().Done()
			return
		}
		mu.Lock()
		reqs = append(reqs, seen{r.Host, r.UserAgent(), r.Header.Get("Authorization"), r.URL.Path})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer srv.Close()
	var wrapped int
	cfg := &rest.Config{
		Host:            srv.URL,
		BearerToken:     "in-memory-token",
		UserAgent:       "replaced-by-upstream's",
		QPS:             1, // replaced by --kube-api-qps
		TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
				mu.Lock()
				wrapped++
				mu.Unlock()
				return rt.RoundTrip(r)
			})
		},
	}

	m := NewControllerManager().WithRESTConfig(cfg)
	cfg.Host = "https://changed-after-WithRESTConfig.invalid" // a copy was kept
	s := kcmScope(t, m)
	require.NoError(t, s.Parse([]string{"--secure-port=0", "--leader-elect=false", "--kube-api-qps=33", "--kube-api-burst=44"}))
	clients := fence.New(100*time.Millisecond, false)
	c, leaseConfig, err := m.config(context.Background(), clients)
	require.NoError(t, err)
	defer closeUnserved(c)

	assert.Equal(t, srv.URL, c.Kubeconfig.Host)
	assert.Equal(t, "in-memory-token", c.Kubeconfig.BearerToken)
	assert.NotNil(t, c.Kubeconfig.WrapTransport)
	assert.Equal(t, float32(33), c.Kubeconfig.QPS, "--kube-api-qps, as upstream applies it")
	assert.Equal(t, 44, c.Kubeconfig.Burst, "--kube-api-burst")
	assert.True(t, c.Kubeconfig.DisableCompression, "as upstream")
	assert.Empty(t, m.opts.Generic.ClientConnection.Kubeconfig, "no kubeconfig file")

	v, err := c.Client.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, reqs, 1)
	assert.Equal(t, strings.TrimPrefix(srv.URL, "https://"), reqs[0].host)
	assert.Equal(t, "/version", reqs[0].path)
	assert.Equal(t, "Bearer in-memory-token", reqs[0].auth)
	assert.True(t, strings.HasSuffix(reqs[0].userAgent, "/kube-controller-manager"), "upstream's user agent: %q", reqs[0].userAgent)
	assert.Equal(t, 1, wrapped, "through the rest.Config's transport wrapper")
	mu.Unlock()

	// The fence bounds the controllers' requests once stopped; the
	// lease's configuration is not fenced (the elector bounds the release
	// itself).
	clients.MarkStopped("kube-controller-manager", "was asked to stop")
	hanging.Store(true)
	_, err = c.Client.Discovery().ServerVersion()
	require.ErrorContains(t, err, "kube-controller-manager was asked to stop: its API requests get 100ms to answer")
	leaseClient, err := clientset.NewForConfig(leaseConfig)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	err = leaseClient.CoreV1().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	require.ErrorIs(t, err, context.DeadlineExceeded, "the lease's client is not fenced: its own context decides")
	assert.NotContains(t, err.Error(), "to answer")
	hanging.Store(false)
	_, err = leaseClient.Discovery().ServerVersion()
	require.NoError(t, err)
	mu.Lock()
	assert.Len(t, reqs, 2, "the version request before the stop and the lease client's last one")
}

// TestControllerManagerRESTConfigRefusesKubeconfig: a controller-manager
// given a rest.Config refuses --kubeconfig and --master at parse time, and
// its Renew keeps the rest.Config.
func TestControllerManagerRESTConfigRefusesKubeconfig(t *testing.T) {
	m := NewControllerManager().WithRESTConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	for _, arg := range []string{"--kubeconfig=/etc/kcm.kubeconfig", "--master=https://127.0.0.1:2"} {
		err := kcmScope(t, NewControllerManager().WithRESTConfig(&rest.Config{Host: "https://127.0.0.1:1"})).Parse([]string{arg})
		require.Error(t, err, arg)
		assert.ErrorContains(t, err, "WithRESTConfig", arg)
	}
	renewed := m.Renew().(*ControllerManager)
	require.NotNil(t, renewed.restConfig)
	assert.Equal(t, "https://127.0.0.1:1", renewed.restConfig.Host)
	assert.Nil(t, NewControllerManager().Renew().(*ControllerManager).restConfig)
	require.NoError(t, kcmScope(t, NewControllerManager()).Parse([]string{"--kubeconfig=/etc/kcm.kubeconfig"}), "without a rest.Config, --kubeconfig is the connection")
}

// kcmScope adds m's flags to a new scope of a private target (a copy of
// the process gate, a fresh registry): parsing touches nothing process-wide.
func kcmScope(t *testing.T, m *ControllerManager) *scoping.Scope {
	t.Helper()
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	reg := basecompat.NewComponentGlobalsRegistry()
	require.NoError(t, reg.Register(scoping.KubeComponent, apiservercompat.DefaultBuildEffectiveVersion(), gate))
	b, err := scoping.NewBarrier(scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: apiservercompat.DefaultBuildEffectiveVersion}, scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(m.Name())
	require.NoError(t, err)
	require.NoError(t, m.AddFlags(s))
	return s
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
