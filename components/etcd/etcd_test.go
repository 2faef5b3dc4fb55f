package etcd_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// newConfig makes the PKI in a temp dir and picks free loopback ports.
func newConfig(t *testing.T) (etcd.Config, *pki.Files) {
	t.Helper()
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	cfg, err := testenv.EtcdConfig(filepath.Join(dir, "etcd"), files)
	require.NoError(t, err)
	return cfg, files
}

// start runs e until the returned stop is called; stop cancels Run's
// context and returns Run's error.
func start(t *testing.T, ctx context.Context, e *etcd.Etcd) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				err = errors.New("Run did not return within 30s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func ready(t *testing.T, e *etcd.Etcd) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, e.Ready(ctx))
}

func TestRunReadyPutGetStop(t *testing.T) {
	cfg, files := newConfig(t)
	e := etcd.New(cfg)
	assert.Equal(t, "etcd", e.Name())
	assert.NoError(t, e.AddFlags(nil), "no flags")
	assert.Equal(t, "https://127.0.0.1:"+strconv.Itoa(cfg.ClientPort), e.ClientURL())
	stop := start(t, context.Background(), e)
	ready(t, e)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := e.Client(klog.Background(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	_, err = c.Put(ctx, "/registry/test", "value")
	require.NoError(t, err)
	resp, err := c.Get(ctx, "/registry/test")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "value", string(resp.Kvs[0].Value))
	require.NoError(t, c.Close())

	// The client port requires a client certificate: TLS that trusts etcd's
	// CA but presents none is refused.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(files.EtcdCA.CertPEM())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(e.ClientURL() + "/health")
	assert.Error(t, err, "a client without a certificate")

	// The peer port: plain HTTP gets no member data (Go's TLS listener
	// answers 400), TLS without a peer certificate fails the handshake, and
	// a certificate of the etcd CA gets in.
	peer := "127.0.0.1:" + strconv.Itoa(cfg.PeerPort)
	plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + peer + "/members")
	if err == nil {
		body, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP to the peer port: %s", body)
		assert.NotContains(t, string(body), "peerURLs")
	}
	_, err = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + peer + "/members")
	assert.Error(t, err, "TLS without a peer certificate")
	cert, err := tls.LoadX509KeyPair(files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	trc := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
	defer trc.CloseIdleConnections()
	withCert, err := (&http.Client{Transport: trc, Timeout: 10 * time.Second}).Get("https://" + peer + "/members")
	require.NoError(t, err, "a certificate of the etcd CA")
	body, _ := io.ReadAll(withCert.Body)
	withCert.Body.Close()
	assert.Equal(t, http.StatusOK, withCert.StatusCode)
	assert.Contains(t, string(body), "https://"+peer, "the member's peer URL is https")

	require.NoError(t, stop(), "a clean stop returns nil")
	for _, p := range []int{cfg.ClientPort, cfg.PeerPort} {
		assert.True(t, testenv.PortFree(p), "port %d is free once Run returned", p)
	}
	assert.NoError(t, e.Ready(context.Background()), "Ready stays nil after a clean stop")
	assert.ErrorContains(t, e.Run(context.Background()), "Run called twice")
}

// A renewed etcd reopens the data dir with what the first one wrote.
func TestRenewReusesDataDir(t *testing.T) {
	cfg, files := newConfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := etcd.New(cfg)
	stop := start(t, context.Background(), first)
	ready(t, first)
	c, err := first.Client(klog.Background(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	_, err = c.Put(ctx, "k", "v1")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, stop())

	second, ok := first.Renew().(*etcd.Etcd)
	require.True(t, ok)
	assert.Equal(t, cfg, second.Config())
	stop = start(t, context.Background(), second)
	ready(t, second)
	c, err = second.Client(klog.Background(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	defer c.Close()
	resp, err := c.Get(ctx, "k")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	assert.Equal(t, "v1", string(resp.Kvs[0].Value))
	require.NoError(t, stop())
}

// A Run that fails before etcd is ready returns its error; Ready, which
// does not watch Run, returns its context's error.
func TestStartFailure(t *testing.T) {
	cfg, _ := newConfig(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.ClientPort)))
	require.NoError(t, err)
	defer l.Close()
	e := etcd.New(cfg)
	runErr := e.Run(context.Background())
	require.Error(t, runErr, "the client port is taken")
	assert.Contains(t, runErr.Error(), "address already in use")
	readyCtx, cancelReady := context.WithCancel(context.Background())
	cancelReady()
	assert.ErrorIs(t, e.Ready(readyCtx), context.Canceled, "never ready: Ready returns its context's error")

	for _, tc := range []struct {
		name string
		edit func(*etcd.Config)
		want string
	}{
		{"no data dir", func(c *etcd.Config) { c.DataDir = "" }, "Config.DataDir is required"},
		{"no TLS", func(c *etcd.Config) { c.CertFile, c.KeyFile, c.TrustedCAFile = "", "", "" }, "Config.CertFile is required"},
		{"bad level", func(c *etcd.Config) { c.LogLevel = "loud" }, "log level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newConfig(t)
			tc.edit(&c)
			assert.ErrorContains(t, etcd.New(c).Run(context.Background()), tc.want)
		})
	}
}

// etcd logs through the logger of Run's context, named "etcd".
func TestLogsThroughContextLogger(t *testing.T) {
	cfg, files := newConfig(t)
	cfg.LogLevel = "info"
	var (
		mu    sync.Mutex
		lines []string
	)
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{})
	e := etcd.New(cfg)
	stop := start(t, klog.NewContext(context.Background(), logger), e)
	ready(t, e)
	// Fast requests are not "expensive": etcd 3.6's embed.NewConfig leaves
	// the warning threshold at 0, which logged every request as a warning.
	c, err := e.Client(klog.Background(), files.APIServerEtcdClient.CertFile, files.APIServerEtcdClient.KeyFile)
	require.NoError(t, err)
	for i := range 20 {
		_, err := c.Put(t.Context(), fmt.Sprintf("/registry/k%d", i), "v")
		require.NoError(t, err)
	}
	require.NoError(t, c.Close())
	require.NoError(t, stop())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, lines)
	assert.False(t, containsAny(lines, "request stats"), "no request is logged as expensive")
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "etcd"), "every line is named etcd: %s", l)
	}
	assert.True(t, containsAny(lines, "closed etcd server"), "the info line of Close: %v", lines)
	assert.False(t, containsAny(lines, "use of closed network connection"), "a clean stop logs its closed listeners at V(2) only: %v", lines)
	assert.False(t, containsAny(lines, "Server closed"), "a clean stop logs its closed servers at V(2) only: %v", lines)
}

func containsAny(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

func TestNewZapLogger(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name  string
		level string
		log   func(*zap.Logger)
		want  []string
	}{
		{"warn drops info and debug", "warn", func(l *zap.Logger) {
			l.Debug("d")
			l.Info("i")
			l.Warn("w", zap.String("k", "v"))
		}, []string{`base: "level"=0 "msg"="w" "k"="v"`}},
		{"info is logr info", "info", func(l *zap.Logger) { l.Info("i", zap.Int("n", 1)) },
			[]string{`base: "level"=0 "msg"="i" "n"=1`}},
		{"debug is V(4)", "debug", func(l *zap.Logger) { l.Debug("d") },
			[]string{`base: "level"=4 "msg"="d"`}},
		{"error with its error field", "warn", func(l *zap.Logger) { l.Error("e", zap.Error(boom), zap.String("k", "v")) },
			[]string{`base: "msg"="e" "error"="boom" "k"="v"`}},
		{"an error field at warn", "warn", func(l *zap.Logger) { l.Warn("w", zap.Error(boom)) },
			[]string{`base: "level"=0 "msg"="w" "err"="boom"`}},
		{"names and fields of With", "warn", func(l *zap.Logger) {
			l.Named("raft").With(zap.String("member", "m1")).Warn("w", zap.Strings("urls", []string{"a", "b"}))
		}, []string{`base/raft: "level"=0 "msg"="w" "member"="m1" "urls"=["a" "b"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			logger := funcr.New(func(prefix, args string) { got = append(got, prefix+": "+args) }, funcr.Options{Verbosity: 4}).WithName("base")
			zl, err := etcd.NewZapLogger(logger, tc.level)
			require.NoError(t, err)
			tc.log(zl)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := etcd.NewZapLogger(logr.Discard(), "loud")
	assert.ErrorContains(t, err, "log level")
}
