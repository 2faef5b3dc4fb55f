package cluster

import (
	"context"
	"crypto"
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
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/components/pki"
)

// TestJoinCredential: fixed for a secret, another for another secret, the
// CA hash no part of it, the secret not in it; a string the apiserver's
// token file and a bearer header carry as it is.
func TestJoinCredential(t *testing.T) {
	c := Token{Secret: "s3cret"}.JoinCredential()
	assert.Regexp(t, `^k3s-like-join\.[0-9a-f]{64}$`, c)
	assert.Equal(t, c, Token{Secret: "s3cret", CAHash: strings.Repeat("a", 64)}.JoinCredential(), "from the secret alone")
	assert.NotEqual(t, c, Token{Secret: "other"}.JoinCredential())
	assert.NotContains(t, c, "s3cret")

	dir := t.TempDir()
	require.NoError(t, WriteJoinAuthFile(dir, Token{Secret: "s3cret"}, Token{}))
	st, err := os.Stat(JoinAuthFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	sc := Token{Secret: "s3cret"}.ServerJoinCredential()
	assert.Regexp(t, `^k3s-like-server-join\.[0-9a-f]{64}$`, sc)
	assert.NotEqual(t, strings.TrimPrefix(c, "k3s-like-join."), strings.TrimPrefix(sc, "k3s-like-server-join."), "the agents' credential does not let a server join")
	assert.Equal(t, c+","+JoinUser+","+JoinUser+"\n"+sc+","+ServerJoinUser+","+ServerJoinUser+"\n", string(read(t, JoinAuthFile(dir))))

	// With an agent token: its join credential authenticates as JoinUser
	// too, and it has no server join line.
	agent := Token{Secret: "agent-s3cret", Kind: AgentToken}
	require.NoError(t, WriteJoinAuthFile(dir, Token{Secret: "s3cret"}, agent))
	got := string(read(t, JoinAuthFile(dir)))
	assert.Contains(t, got, agent.JoinCredential()+","+JoinUser+","+JoinUser+"\n")
	assert.NotContains(t, got, agent.ServerJoinCredential(), "an agent token never joins a server")
	assert.Contains(t, got, c+","+JoinUser, "the server token still joins agents, as k3s's")
	assert.NotContains(t, got, "s3cret")
	// The same secret twice: one line each.
	require.NoError(t, WriteJoinAuthFile(dir, Token{Secret: "s3cret"}, Token{Secret: "s3cret", Kind: AgentToken}))
	assert.Equal(t, 2, strings.Count(string(read(t, JoinAuthFile(dir))), "\n"))
}

// TestNewBootstrapToken: upstream's shape, and random: nothing of the
// cluster token goes into it.
func TestNewBootstrapToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id, secret, err := newBootstrapToken()
		require.NoError(t, err)
		assert.Regexp(t, `^[a-z0-9]{6}$`, id)
		assert.Regexp(t, `^[a-z0-9]{16}$`, secret)
		assert.False(t, seen[secret], "a secret twice")
		seen[secret] = true
	}
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
// agent settings and the bootstrap token they name to the join credential
// (the settings also to the bootstrap token), join writes the cluster CA
// and the client CA, no serving certificate (the kubelet requests it),
// removes an older release's bootstrap kubeconfig, and returns the
// settings and a client with the bootstrap token; a bootstrap token joins
// by itself, an unknown one is a JoinError naming its ID; an unknown
// bearer is retried until the context ends; malformed settings are an
// error naming them.
func TestJoin(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "server"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	caPEM, err := os.ReadFile(f.ServerCA.CertFile)
	require.NoError(t, err)
	clientCA, err := os.ReadFile(f.ClientCA.CertFile)
	require.NoError(t, err)
	tok := Token{Secret: "s3cret", CAHash: CAHashOf(caPEM)}
	const id, secret = "abc123", "0123456789abcdef"
	var expiration atomic.Value // the handler's goroutine reads it
	expiration.Store(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	settingsCA := string(clientCA)
	// The key that signs the settings: the cluster CA's, or another's.
	type signerBox struct{ k crypto.Signer }
	var signer atomic.Value
	signer.Store(signerBox{f.ServerCA.Key})
	other, err := pki.LoadOrCreateCA(filepath.Join(dir, "other-ca.crt"), filepath.Join(dir, "other-ca.key"), "other")
	require.NoError(t, err)
	pair, err := tls.LoadX509KeyPair(f.APIServerServing.CertFile, f.APIServerServing.KeyFile)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		asBootstrap := auth == "Bearer "+id+"."+secret && r.URL.Path == "/api/v1/namespaces/kube-system/configmaps/"+agentSettings
		if auth != "Bearer "+tok.JoinCredential() && !asBootstrap {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		var obj map[string]any
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/configmaps/" + agentSettings:
			data := map[string]string{settingClientCA: settingsCA, settingClusterDNS: "10.43.0.10", settingClusterDomain: "cluster.local",
				settingBootstrapToken: id}
			if k := signer.Load().(signerBox).k; k != nil {
				data[settingSignature], _ = signSettings(k, data)
			}
			obj = map[string]any{"kind": "ConfigMap", "apiVersion": "v1",
				"metadata": map[string]any{"name": agentSettings, "namespace": "kube-system"}, "data": data}
		case "/api/v1/namespaces/kube-system/secrets/bootstrap-token-" + id:
			obj = map[string]any{"kind": "Secret", "apiVersion": "v1",
				"metadata": map[string]any{"name": "bootstrap-token-" + id, "namespace": "kube-system"},
				"type":     "bootstrap.kubernetes.io/token",
				"data": map[string][]byte{"token-id": []byte(id), "token-secret": []byte(secret), "expiration": []byte(expiration.Load().(string)),
					"auth-extra-groups": []byte(bootstrapGroup)}}
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		b, _ := json.Marshal(obj)
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
	// An agent's bootstrap kubeconfig of an older release (it held a
	// bootstrap token) is removed.
	require.NoError(t, os.MkdirAll(l.Dir, 0o700))
	require.NoError(t, os.WriteFile(BootstrapKubeconfig(l), []byte("old"), 0o600))
	joined, err := Join(ctx, logr.Discard(), u, tok, l)
	require.NoError(t, err)
	assert.Equal(t, "10.43.0.10", joined.ClusterDNS)
	assert.Equal(t, caPEM, read(t, l.ServerCA().CertFile), "the pinned CA, byte for byte")
	assert.Equal(t, clientCA, read(t, l.ClientCA().CertFile))
	_, err = os.Stat(BootstrapKubeconfig(l))
	assert.True(t, os.IsNotExist(err), "no bootstrap kubeconfig: %v", err)
	// The client Join returns authenticates with the bootstrap token.
	cm, err := joined.Bootstrap.CoreV1().ConfigMaps("kube-system").Get(ctx, agentSettings, metav1.GetOptions{})
	require.NoError(t, err, "the server accepts the bootstrap token the settings name")
	assert.Equal(t, id, cm.Data[settingBootstrapToken])
	// No serving certificate: the kubelet requests one from the signer.
	_, err = os.Stat(l.NodeLayout("node-b").Serving().CertFile)
	assert.True(t, os.IsNotExist(err), "join writes no serving certificate: %v", err)
	_, err = Join(ctx, logr.Discard(), u, tok, l)
	require.NoError(t, err, "a second join")

	// A bootstrap token (k3s-like token create's): it reads the settings
	// itself, and is the returned client's credential.
	joined, err = Join(ctx, logr.Discard(), u, Token{Secret: id + "." + secret, CAHash: tok.CAHash, Kind: BootstrapToken}, pki.Layout{Dir: filepath.Join(dir, "bt")})
	require.NoError(t, err)
	_, err = joined.Bootstrap.CoreV1().ConfigMaps("kube-system").Get(ctx, agentSettings, metav1.GetOptions{})
	require.NoError(t, err)
	// One the server does not know (expired, or deleted): refused, named
	// by its ID, never its secret.
	unknown, cancelUnknown := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancelUnknown()
	_, err = Join(unknown, logr.Discard(), u, Token{Secret: "zzzzzz.0000000000000000", CAHash: tok.CAHash, Kind: BootstrapToken}, pki.Layout{Dir: filepath.Join(dir, "bt2")})
	var je *JoinError
	require.ErrorAs(t, err, &je)
	assert.Contains(t, err.Error(), "does not accept the bootstrap token zzzzzz: it expired, was deleted, or was never made")
	assert.NotContains(t, err.Error(), "0000000000000000")

	// An expired bootstrap token is not taken: join waits for the server
	// to renew it.
	expiration.Store(time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	expired, cancelExpired := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancelExpired()
	_, err = Join(expired, logr.Discard(), u, tok, pki.Layout{Dir: filepath.Join(dir, "expired")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the bootstrap token "+id+" expired at")
	assert.NotContains(t, err.Error(), secret)
	expiration.Store(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))

	// Another secret with the same CA: its join credential is refused, and
	// join retries until stopped, naming what it last saw.
	short, cancelShort := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancelShort()
	_, err = Join(short, logr.Discard(), u, Token{Secret: "other", CAHash: tok.CAHash}, pki.Layout{Dir: filepath.Join(dir, "other")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped before the server answered")
	assert.Contains(t, err.Error(), "does not accept the token")
	assert.NotContains(t, err.Error(), "other\"")

	// Settings another key signed (someone who may write ConfigMaps in
	// kube-system, with a client CA of their own), or none did (a server
	// older than the agent): not taken, retried until stopped, nothing
	// written.
	for name, k := range map[string]crypto.Signer{"forged": other.Key, "unsigned": nil} {
		signer.Store(signerBox{k})
		forged, cancelForged := context.WithTimeout(context.Background(), 3*time.Second)
		_, err = Join(forged, logr.Discard(), u, tok, pki.Layout{Dir: filepath.Join(dir, name)})
		cancelForged()
		require.Error(t, err, name)
		if k != nil {
			assert.Contains(t, err.Error(), "not signed by the cluster CA the token pins", name)
		} else {
			assert.Contains(t, err.Error(), "carry no signature", name)
		}
		_, statErr := os.Stat(filepath.Join(dir, name))
		assert.True(t, os.IsNotExist(statErr), "%s: nothing written: %v", name, statErr)
	}
	signer.Store(signerBox{f.ServerCA.Key})

	// Malformed settings, signed: named.
	settingsCA = "not a certificate"
	_, err = Join(ctx, logr.Discard(), u, tok, pki.Layout{Dir: filepath.Join(dir, "bad")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kube-system/"+agentSettings+"): "+settingClientCA)
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
