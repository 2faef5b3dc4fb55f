package inproc

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is an http.Client whose requests s serves, made the way client-go
// makes one from cfg (its wrappers, its bearer token).
func client(t *testing.T, s *Server, cfg *rest.Config) *http.Client {
	t.Helper()
	if cfg == nil {
		cfg = &rest.Config{Host: "https://127.0.0.1:6443"}
	}
	require.NoError(t, Wrap(cfg, s))
	c, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	return c
}

func certPEM(t *testing.T, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestServesAsTheClient(t *testing.T) {
	s := &Server{Name: "kube-apiserver"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cn := "-"
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		fmt.Fprintf(w, "%s %s?%s cn=%s auth=%q proto=%s remote=%s body=%s",
			r.Method, r.URL.Path, r.URL.RawQuery, cn, r.Header.Get("Authorization"), r.Proto, r.RemoteAddr, body)
	}))
	defer s.Stop(time.Second)
	c := client(t, s, &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "tok",
		TLSClientConfig: rest.TLSClientConfig{CertData: certPEM(t, "system:kube-controller-manager")}})

	resp, err := c.Post("https://127.0.0.1:6443/api/v1/namespaces?fieldManager=x", "application/json", strings.NewReader(`{"a":1}`))
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `POST /api/v1/namespaces?fieldManager=x cn=system:kube-controller-manager auth="Bearer tok" proto=HTTP/2.0 remote=127.0.0.1:0 body={"a":1}`, string(got))
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"), "sniffed, as net/http does")
}

func TestWithoutCertificate(t *testing.T) {
	s := &Server{Name: "kube-apiserver"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"tls":%t,"peers":%d}`, r.TLS != nil, len(r.TLS.PeerCertificates))
		w.Header().Set("Late", "x") // after the header went: not sent
	}))
	defer s.Stop(time.Second)
	resp, err := client(t, s, nil).Get("https://127.0.0.1:6443/x")
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "201 Created", resp.Status)
	assert.Equal(t, `{"tls":true,"peers":0}`, string(got))
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Empty(t, resp.Header.Get("Late"))
}

func TestNoContent(t *testing.T) {
	s := &Server{Name: "x"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusContinue) // informational: not the status
		w.WriteHeader(http.StatusNoContent)
		w.WriteHeader(http.StatusInternalServerError) // superfluous: ignored
	}))
	defer s.Stop(time.Second)
	resp, err := client(t, s, nil).Get("https://127.0.0.1:6443/x")
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Equal(t, int64(0), resp.ContentLength)
	assert.Empty(t, got)
}

// A watch: the client gets each flushed event as it comes; closing the body
// ends the handler's request context, and the handler returns.
func TestStreamEndsWhenTheBodyCloses(t *testing.T) {
	s := &Server{Name: "x"}
	ended := make(chan error, 1)
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		notify := w.(http.CloseNotifier).CloseNotify() //nolint:staticcheck // what the apiserver's wrappers look for
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "event %d\n", i); err != nil {
				<-notify
				ended <- r.Context().Err()
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(5 * time.Millisecond)
		}
	}))
	resp, err := client(t, s, nil).Get("https://127.0.0.1:6443/watch")
	require.NoError(t, err)
	lines := bufio.NewScanner(resp.Body)
	for i := range 3 {
		require.True(t, lines.Scan())
		assert.Equal(t, fmt.Sprintf("event %d", i), lines.Text())
	}
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not end when the client closed the body")
	}
	assert.True(t, s.Stop(time.Second))
}

// A client that neither reads nor closes does not keep Stop waiting: the
// handler's blocked write fails, and the client's next read says why.
func TestStopEndsABlockedWrite(t *testing.T) {
	s := &Server{Name: "kube-apiserver"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 4096)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	resp, err := client(t, s, nil).Get("https://127.0.0.1:6443/big")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.True(t, s.Stop(5*time.Second), "the handler returned")
	_, err = io.ReadAll(resp.Body)
	var ns *NotServingError
	require.ErrorAs(t, err, &ns)
	assert.Equal(t, "kube-apiserver: not serving in this process", err.Error())

	_, err = client(t, s, nil).Get("https://127.0.0.1:6443/after")
	require.ErrorAs(t, err, &ns, "a request after Stop")
}

func TestNotServingBeforeServe(t *testing.T) {
	s := &Server{Name: "kube-apiserver"}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1:6443/x", body)
	require.NoError(t, err)
	_, err = client(t, s, nil).Do(req)
	var ns *NotServingError
	require.ErrorAs(t, err, &ns)
	assert.True(t, body.closed, "the request body is closed, as a transport closes it")
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// The client's context ending before the header went: the request fails
// with its cause, and the handler's context ends.
func TestContextEndsBeforeTheHeader(t *testing.T) {
	s := &Server{Name: "x"}
	returned := make(chan struct{})
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		<-r.Context().Done()
	}))
	defer s.Stop(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:6443/slow", nil)
	_, err := client(t, s, nil).Do(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context did not end")
	}
}

func TestPanics(t *testing.T) {
	s := &Server{Name: "x"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/after" {
			fmt.Fprint(w, "partial")
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		panic("before the header")
	}))
	defer s.Stop(time.Second)
	c := client(t, s, nil)
	_, err := c.Get("https://127.0.0.1:6443/before")
	require.ErrorIs(t, err, errAborted)

	resp, err := c.Get("https://127.0.0.1:6443/after")
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, errAborted, "a cut response is an error, not a short body")
	assert.Equal(t, "partial", string(got))
}

func TestUpgradeGoesOverTheNetwork(t *testing.T) {
	s := &Server{Name: "x"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("an upgrade served in process") }))
	defer s.Stop(time.Second)
	var network []string
	cfg := &rest.Config{Host: "https://127.0.0.1:6443"}
	require.NoError(t, Wrap(cfg, s))
	rt := cfg.WrapTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		network = append(network, r.URL.Path)
		return nil, errors.New("no network here")
	}))
	req, _ := http.NewRequest(http.MethodPost, "https://127.0.0.1:6443/api/v1/namespaces/a/pods/b/exec", nil)
	req.Header.Set("Upgrade", "SPDY/3.1")
	_, err := rt.RoundTrip(req)
	require.Error(t, err)
	assert.Equal(t, []string{"/api/v1/namespaces/a/pods/b/exec"}, network)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The in-process transport is innermost: wrappers already on the
// configuration see every request.
func TestWrapKeepsTheWrappers(t *testing.T) {
	s := &Server{Name: "x"}
	s.Serve(context.Background(), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Header.Get("Seen")) }))
	defer s.Stop(time.Second)
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Seen", "outer")
			return rt.RoundTrip(r)
		})
	}}
	resp, err := client(t, s, cfg).Get("https://127.0.0.1:6443/x")
	require.NoError(t, err)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "outer", string(got))
}

func TestWrapRefusesBadInput(t *testing.T) {
	s := &Server{Name: "kube-apiserver"}
	err := Wrap(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CertData: []byte("not pem")}}, s)
	assert.EqualError(t, err, "kube-apiserver: the client certificate: no PEM certificate in it")
	err = Wrap(&rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: "/nonexistent/cert.pem"}}, s)
	assert.ErrorContains(t, err, "kube-apiserver: the client certificate: open /nonexistent/cert.pem")
	err = Wrap(&rest.Config{Host: "127.0.0.1"}, s)
	assert.EqualError(t, err, `kube-apiserver: the client configuration's host "127.0.0.1" is not a URL`)
}

// The handler's goroutine wears the server's profiler labels, not the
// client's: the apiserver's work is profiled as the apiserver's.
func TestHandlerWearsTheServersLabels(t *testing.T) {
	s := &Server{Name: "x"}
	inHandler, release := make(chan struct{}), make(chan struct{})
	s.Serve(pprof.WithLabels(context.Background(), pprof.Labels("component", "the-server")), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inHandler)
		<-release
	}))
	defer s.Stop(time.Second)
	c := client(t, s, nil)
	errs := make(chan error, 1)
	pprof.Do(context.Background(), pprof.Labels("component", "the-client"), func(context.Context) {
		go func() {
			resp, err := c.Get("https://127.0.0.1:6443/x")
			if err == nil {
				resp.Body.Close()
			}
			errs <- err
		}()
	})
	<-inHandler
	var dump strings.Builder
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&dump, 1))
	close(release)
	require.NoError(t, <-errs)
	var handler string
	for _, g := range strings.Split(dump.String(), "\n\n") {
		if strings.Contains(g, "TestHandlerWearsTheServersLabels.func1") {
			handler = g
		}
	}
	require.NotEmpty(t, handler, "the handler's goroutine in the dump")
	assert.Contains(t, handler, `"component":"the-server"`)
	assert.NotContains(t, handler, "the-client")
}
