package status

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
)

// statusPKI is the part of a cluster's PKI the TLS status endpoint uses,
// in a temporary layout: the server and client CAs and the serving
// certificate (127.0.0.1).
func statusPKI(t *testing.T) (pki.Layout, *pki.CA) {
	t.Helper()
	l := pki.Layout{Dir: t.TempDir()}
	serverCA, err := pki.LoadOrCreateCA(l.ServerCA().CertFile, l.ServerCA().KeyFile, "server-ca")
	require.NoError(t, err)
	clientCA, err := pki.LoadOrCreateCA(l.ClientCA().CertFile, l.ClientCA().KeyFile, "client-ca")
	require.NoError(t, err)
	_, err = serverCA.Issue(l.APIServerServing().CertFile, l.APIServerServing().KeyFile, pki.Leaf{CommonName: "kube-apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true})
	require.NoError(t, err)
	return l, clientCA
}

// clientCert issues a client certificate of ca for CN user in groups.
func clientCert(t *testing.T, ca *pki.CA, name string, groups ...string) tls.Certificate {
	t.Helper()
	dir := t.TempDir()
	p, err := ca.Issue(filepath.Join(dir, "crt"), filepath.Join(dir, "key"), pki.Leaf{CommonName: name, Organization: groups, Client: true})
	require.NoError(t, err)
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	require.NoError(t, err)
	return c
}

// fakeAuthz allows what allow says, and records what it was asked.
type fakeAuthz struct {
	mu    sync.Mutex
	asked []authorizer.Attributes
	allow func(authorizer.Attributes) (authorizer.Decision, error)
}

func (f *fakeAuthz) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, a)
	f.mu.Unlock()
	d, err := f.allow(a)
	return d, "", err
}

func (f *fakeAuthz) reset() []authorizer.Attributes {
	f.mu.Lock()
	defer f.mu.Unlock()
	asked := f.asked
	f.asked = nil
	return asked
}

// TestStatusGuardTLS: over TLS, with the status endpoint's own TLS
// configuration, a node's certificate (system:nodes) reads the health paths
// and nothing else (403, naming the user); system:masters reads everything
// without asking the apiserver; any other user reads what the authorizer
// (the apiserver's SubjectAccessReview) allows, for the verb and path of
// the request; an authorizer that fails is 503, never an allow; a
// system:masters certificate of another CA is refused at the handshake.
func TestStatusGuardTLS(t *testing.T) {
	l, clientCA := statusPKI(t)
	cfg, err := statusServerTLS(l)
	require.NoError(t, err)
	authz := &fakeAuthz{allow: func(a authorizer.Attributes) (authorizer.Decision, error) {
		switch {
		case a.GetUser().GetName() == "broken":
			return authorizer.DecisionNoOpinion, errors.New("the apiserver is not ready")
		case a.GetUser().GetName() == "pprof-reader" && strings.HasPrefix(a.GetPath(), "/debug/pprof/"):
			return authorizer.DecisionAllow, nil
		}
		return authorizer.DecisionNoOpinion, nil
	}}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served "+r.URL.Path) })
	guard := statusGuard{next: next, authz: authz}
	srv := httptest.NewUnstartedServer(&guard)
	srv.TLS = cfg
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(mustRead(t, l.ServerCA().CertFile)))
	as := func(cert tls.Certificate) func(method, path string) (int, string) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
		t.Cleanup(tr.CloseIdleConnections)
		return func(method, path string) (int, string) {
			req, err := http.NewRequest(method, srv.URL+path, nil)
			require.NoError(t, err)
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err, path)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
	}

	node := as(clientCert(t, clientCA, "system:node:node-b", "system:nodes"))
	for _, p := range []string{"/livez", "/readyz", "/healthz", "/readyz/kube-scheduler", "/livez/etcd"} {
		code, body := node("GET", p)
		assert.Equal(t, http.StatusOK, code, p)
		assert.Equal(t, "served "+p, body)
	}
	assert.Empty(t, authz.reset(), "the health paths ask no one")
	for _, p := range []string{"/flagz", "/flagz/kube-apiserver", "/debug/pprof/", "/debug/pprof/profile", "/components", "/metrics", "/statusz", "/livez/../flagz", "/livezz"} {
		code, body := node("GET", p)
		assert.Equal(t, http.StatusForbidden, code, p)
		assert.Equal(t, `forbidden: User "system:node:node-b" cannot get path "`+p+`"`+"\n", body)
	}
	code, _ := node("POST", "/debug/pprof/symbol")
	assert.Equal(t, http.StatusForbidden, code)
	asked := authz.reset()
	require.NotEmpty(t, asked)
	assert.Equal(t, "post", asked[len(asked)-1].GetVerb(), "the request's method, as upstream asks")
	a := asked[0]
	assert.Equal(t, "get", a.GetVerb())
	assert.Equal(t, "/flagz", a.GetPath())
	assert.False(t, a.IsResourceRequest())
	assert.Equal(t, []string{"system:nodes", "system:authenticated"}, a.GetUser().GetGroups())

	admin := as(clientCert(t, clientCA, "someone", "ops", "system:masters"))
	for _, p := range []string{"/flagz", "/debug/pprof/", "/components", "/metrics"} {
		code, body := admin("GET", p)
		assert.Equal(t, http.StatusOK, code, p)
		assert.Equal(t, "served "+p, body)
	}
	assert.Empty(t, authz.reset(), "system:masters asks no one")

	reader := as(clientCert(t, clientCA, "pprof-reader"))
	code, _ = reader("GET", "/debug/pprof/profile")
	assert.Equal(t, http.StatusOK, code, "allowed by the authorizer")
	code, _ = reader("GET", "/flagz")
	assert.Equal(t, http.StatusForbidden, code)
	assert.Len(t, authz.reset(), 2)

	code, body := as(clientCert(t, clientCA, "broken"))("GET", "/flagz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, `cannot authorize User "broken" to get path "/flagz": the apiserver is not ready`)

	guard.authz = nil
	code, _ = reader("GET", "/debug/pprof/profile")
	assert.Equal(t, http.StatusForbidden, code, "no authorizer: system:masters only")

	other, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "ca.crt"), filepath.Join(t.TempDir(), "ca.key"), "other")
	require.NoError(t, err)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert(t, other, "mallory", "system:masters")}}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/flagz")
	if err == nil {
		resp.Body.Close()
	}
	assert.Error(t, err, "a certificate of another CA")
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	return b
}

// TestStatusGuardLoopback: on plain HTTP, only a Host of loopback is
// answered (DNS rebinding), and no request a browser marks as another
// site's; the rest as before, to anyone.
func TestStatusGuardLoopback(t *testing.T) {
	guard := statusGuard{next: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	for host, want := range map[string]int{
		"127.0.0.1:10290":          http.StatusOK,
		"127.0.0.2:10290":          http.StatusOK,
		"127.0.0.1":                http.StatusOK,
		"[::1]:10290":              http.StatusOK,
		"[::ffff:127.0.0.1]:10290": http.StatusOK,
		"localhost:10290":          http.StatusOK,
		"LocalHost":                http.StatusOK,
		"evil.example:10290":       http.StatusForbidden,
		"evil.example":             http.StatusForbidden,
		"127.0.0.1.evil.example":   http.StatusForbidden,
		"localhost.evil.example":   http.StatusForbidden,
		"10.0.0.5:10290":           http.StatusForbidden,
		"0.0.0.0:10290":            http.StatusForbidden,
		"":                         http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodGet, "/flagz", nil)
		r.Host = host
		w := httptest.NewRecorder()
		guard.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, "Host %q", host)
		if want != http.StatusOK {
			assert.Contains(t, w.Body.String(), "answers only a Host of loopback", host)
		}
	}
	for site, want := range map[string]int{
		"":            http.StatusOK,
		"none":        http.StatusOK,
		"same-origin": http.StatusOK,
		"same-site":   http.StatusForbidden,
		"cross-site":  http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodGet, "/debug/pprof/profile", nil)
		r.Host = "127.0.0.1:10290"
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		w := httptest.NewRecorder()
		guard.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, "Sec-Fetch-Site %q", site)
	}
}

// TestStatusPprofOptIn: without --enable-pprof every /debug/pprof path is
// 404, saying how to turn it on, and /statusz does not list it; with it,
// ?seconds above statusProfileMaxSeconds is 400 on every path that takes
// it (profile, trace, and the named profiles' deltas).
func TestStatusPprofOptIn(t *testing.T) {
	get := func(h http.Handler, path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	off := Endpoint{Harness: &harness.Harness{}}.Handler()
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace", "/debug/pprof/goroutine", "/debug/pprof/symbol"} {
		code, body := get(off, p)
		assert.Equal(t, http.StatusNotFound, code, p)
		assert.Contains(t, body, "start it with --enable-pprof", p)
	}
	assert.NotContains(t, statusPaths(false), "/debug/pprof")
	assert.Contains(t, statusPaths(true), "/debug/pprof")
	_, body := get(off, "/statusz") // it lists first segments
	assert.Contains(t, body, "/components")
	assert.NotContains(t, body, "/debug")

	on := Endpoint{EnablePprof: true, Harness: &harness.Harness{}}.Handler()
	for _, p := range []string{"/debug/pprof/profile?seconds=86400", "/debug/pprof/profile?seconds=61", "/debug/pprof/trace?seconds=60.5", "/debug/pprof/heap?seconds=3600", "/debug/pprof/profile?seconds=NaN", "/debug/pprof/trace?seconds=x", "/debug/pprof/profile?seconds=Inf"} {
		code, body := get(on, p)
		assert.Equal(t, http.StatusBadRequest, code, p)
		assert.Contains(t, body, ": want a number of seconds, at most 60", p)
	}
	code, body := get(on, "/debug/pprof/profile?seconds=86400")
	require.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "seconds=86400: want a number of seconds, at most 60\n", body)
	code, _ = get(on, "/debug/pprof/trace?seconds=0.05")
	assert.Equal(t, http.StatusOK, code, "within the cap")
	_, body = get(on, "/statusz")
	assert.Contains(t, body, " /debug ")
}

// TestStatusServerTimeouts: every response of the status endpoint ends
// within its write timeout, just above the longest profile it serves, and
// idle connections are closed.
func TestStatusServerTimeouts(t *testing.T) {
	srv := newStatusServer(http.NotFoundHandler())
	assert.Greater(t, srv.WriteTimeout, statusProfileMaxSeconds*time.Second, "a profile of the longest allowed still ends")
	assert.LessOrEqual(t, srv.WriteTimeout, (statusProfileMaxSeconds+15)*time.Second)
	assert.Positive(t, srv.ReadHeaderTimeout)
	assert.Positive(t, srv.ReadTimeout)
	assert.Positive(t, srv.IdleTimeout)
}
