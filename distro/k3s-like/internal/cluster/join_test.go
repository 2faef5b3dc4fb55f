package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/pki"
)

func TestBootstrapToken(t *testing.T) {
	id, secret := Token{Secret: "s3cret"}.BootstrapToken()
	assert.Regexp(t, `^[a-z0-9]{6}$`, id)
	assert.Regexp(t, `^[a-z0-9]{16}$`, secret)
	id2, secret2 := Token{Secret: "s3cret", CAHash: strings.Repeat("a", 64)}.BootstrapToken()
	assert.Equal(t, [2]string{id, secret}, [2]string{id2, secret2}, "derived from the secret alone")
	id3, secret3 := Token{Secret: "other"}.BootstrapToken()
	assert.NotEqual(t, id, id3)
	assert.NotEqual(t, secret, secret3)
	assert.NotContains(t, id+secret, "s3cret")
}

// TestPinServerCA: the CA is taken from the server's TLS handshake only
// when its hash is the token's and it signed the server's certificate for
// the URL's host; a mismatch is a *caPinError (not retried), a server that
// does not answer is another error (retried).
func TestPinServerCA(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	caPEM, err := os.ReadFile(f.ServerCA.CertFile)
	require.NoError(t, err)
	serveOn := func(addr, certFile, keyFile string) *url.URL {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		require.NoError(t, err)
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		l, err := net.Listen("tcp", addr)
		require.NoError(t, err)
		srv.Listener.Close()
		srv.Listener = l
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
		srv.StartTLS()
		t.Cleanup(srv.Close)
		u, err := url.Parse(srv.URL)
		require.NoError(t, err)
		return u
	}
	serve := func(certFile, keyFile string) *url.URL { return serveOn("127.0.0.1:0", certFile, keyFile) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	good := Token{Secret: "s", CAHash: CAHashOf(caPEM)}

	u := serve(f.APIServerServing.CertFile, f.APIServerServing.KeyFile)
	got, err := pinServerCA(ctx, u, good)
	require.NoError(t, err)
	assert.Equal(t, caPEM, got, "the CA file's exact bytes")

	var pe *caPinError
	_, err = pinServerCA(ctx, u, Token{Secret: "s", CAHash: strings.Repeat("0", 64)})
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "sent no certificate with the sha256 the token pins ("+strings.Repeat("0", 64)+")")

	// The right CA in the chain, but the URL names a host its certificate
	// does not cover.
	_, err = pinServerCA(ctx, serveOn("127.0.0.2:0", f.APIServerServing.CertFile, f.APIServerServing.KeyFile), good)
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "the pinned CA does not vouch for as 127.0.0.2")

	// A leaf-only certificate (no CA in the handshake): refused.
	leafOnly := filepath.Join(dir, "leaf-only.crt")
	b, err := os.ReadFile(f.APIServerServing.CertFile)
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "-----END CERTIFICATE-----")
	require.NoError(t, os.WriteFile(leafOnly, []byte(first+"-----END CERTIFICATE-----\n"), 0o600))
	_, err = pinServerCA(ctx, serve(leafOnly, f.APIServerServing.KeyFile), good)
	require.ErrorAs(t, err, &pe)

	// Nothing listening: not a pin error.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	_, err = pinServerCA(ctx, &url.URL{Scheme: "https", Host: addr}, good)
	require.Error(t, err)
	assert.False(t, errors.As(err, &pe), "%v", err)
}

// TestJoin: against a TLS server carrying the pinned CA that serves the
// agent settings to the bootstrap token alone, join writes the cluster CA,
// the client CA and the bootstrap kubeconfig (0600), no serving
// certificate (the kubelet requests it), and returns the settings; an unknown bearer is retried
// until the context ends; malformed settings are an error naming them.
func TestJoin(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "server"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	caPEM, err := os.ReadFile(f.ServerCA.CertFile)
	require.NoError(t, err)
	clientCA, err := os.ReadFile(f.ClientCA.CertFile)
	require.NoError(t, err)
	tok := Token{Secret: "s3cret", CAHash: CAHashOf(caPEM)}
	id, secret := tok.BootstrapToken()
	settingsCA := string(clientCA)
	pair, err := tls.LoadX509KeyPair(f.APIServerServing.CertFile, f.APIServerServing.KeyFile)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+id+"."+secret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		if r.URL.Path != "/api/v1/namespaces/kube-system/configmaps/"+agentSettings {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
			"metadata": map[string]any{"name": agentSettings, "namespace": "kube-system"},
			"data":     map[string]string{settingClientCA: settingsCA, settingClusterDNS: "10.43.0.10", settingClusterDomain: "cluster.local"}})
		_, _ = w.Write(b)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)

	l := pki.Layout{Dir: filepath.Join(dir, "agent", "pki")}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	settings, err := Join(ctx, logr.Discard(), u, tok, l, "node-b")
	require.NoError(t, err)
	assert.Equal(t, "10.43.0.10", settings.ClusterDNS)
	assert.Equal(t, caPEM, read(t, l.ServerCA().CertFile), "the pinned CA, byte for byte")
	assert.Equal(t, clientCA, read(t, l.ClientCA().CertFile))
	kc, err := clientcmd.LoadFromFile(BootstrapKubeconfig(l))
	require.NoError(t, err)
	assert.Equal(t, id+"."+secret, kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].Token)
	assert.Equal(t, u.String(), kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)
	st, err := os.Stat(BootstrapKubeconfig(l))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	// No serving certificate: the kubelet requests one from the signer.
	_, err = os.Stat(l.NodeLayout("node-b").Serving().CertFile)
	assert.True(t, os.IsNotExist(err), "join writes no serving certificate: %v", err)
	_, err = Join(ctx, logr.Discard(), u, tok, l, "node-b")
	require.NoError(t, err, "a second join")

	// Another secret with the same CA: its bootstrap token is refused, and
	// join retries until stopped, naming what it last saw.
	short, cancelShort := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancelShort()
	_, err = Join(short, logr.Discard(), u, Token{Secret: "other", CAHash: tok.CAHash}, pki.Layout{Dir: filepath.Join(dir, "other")}, "node-c")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped before the server answered")
	assert.Contains(t, err.Error(), "does not accept the token's bootstrap token")
	assert.NotContains(t, err.Error(), "other\"")

	// Malformed settings: named.
	settingsCA = "not a certificate"
	_, err = Join(ctx, logr.Discard(), u, tok, pki.Layout{Dir: filepath.Join(dir, "bad")}, "node-d")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kube-system/"+agentSettings+"): "+settingClientCA)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
