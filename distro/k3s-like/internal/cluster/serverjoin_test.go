package cluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
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

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
)

// serverBootstrapServer serves the Secret a joining server reads, with
// the CA of its PKI in dir, to the bearer token accept says yes to.
func serverBootstrapServer(t *testing.T, f *pki.Files, record []byte, accept func(bearer string) bool) *url.URL {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(f.APIServerServing.CertFile, f.APIServerServing.KeyFile)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !accept(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
			return
		}
		if r.URL.Path != "/api/v1/namespaces/kube-system/secrets/"+serverBootstrap {
			http.NotFound(w, r)
			return
		}
		b, _ := json.Marshal(map[string]any{"kind": "Secret", "apiVersion": "v1",
			"metadata": map[string]any{"name": serverBootstrap, "namespace": "kube-system"},
			"data":     map[string][]byte{recordKey: record, etcdKeyPrefix + "server-0": []byte("https://192.0.2.10:2379")}})
		_, _ = w.Write(b)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u
}

// TestFetchServerPKI: a joining server takes the cluster's PKI, the etcd
// CA among it, only from a server whose CA the token pins, reading it with
// the server join credential and opening it with the token's secret; a
// CA the token does not pin is an error at once, a record the secret does
// not open an error, and neither writes anything.
func TestFetchServerPKI(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "server"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	caPEM, err := os.ReadFile(f.ServerCA.CertFile)
	require.NoError(t, err)
	tok := Token{Secret: "s3cret", CAHash: CAHashOf(caPEM)}
	record, err := bootstrap.Seal(tok.Secret, f.Dir, bootstrap.EmbeddedFiles)
	require.NoError(t, err)
	u := serverBootstrapServer(t, f, record, func(b string) bool { return b == tok.ServerJoinCredential() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	joiner := filepath.Join(dir, "joiner")
	urls, err := FetchServerPKI(ctx, logr.Discard(), u, tok, joiner)
	require.NoError(t, err)
	assert.Equal(t, []string{"https://192.0.2.10:2379"}, urls)
	for _, name := range bootstrap.EmbeddedFiles {
		assert.Equal(t, read(t, filepath.Join(f.Dir, name)), read(t, filepath.Join(joiner, name)), name)
	}
	st, err := os.Stat(filepath.Join(joiner, pki.Layout{}.EtcdCA().KeyFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	var je *ServerJoinError
	other := filepath.Join(dir, "other")
	_, err = FetchServerPKI(ctx, logr.Discard(), u, Token{Secret: tok.Secret, CAHash: strings.Repeat("0", 64)}, other)
	require.ErrorAs(t, err, &je)
	assert.Contains(t, err.Error(), "sent no certificate with the sha256 the token pins")
	assert.NoDirExists(t, other)

	// A server that hands the record to anyone: the wrong secret does
	// not open it.
	open := serverBootstrapServer(t, f, record, func(string) bool { return true })
	_, err = FetchServerPKI(ctx, logr.Discard(), open, Token{Secret: "wrong", CAHash: tok.CAHash}, other)
	require.ErrorAs(t, err, &je)
	assert.Contains(t, err.Error(), "cannot be decrypted with this token's secret")
	assert.NotContains(t, err.Error(), "wrong")
	assert.NoDirExists(t, other)

	// The wrong secret's join credential is refused: retried until the
	// context ends, nothing written.
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	_, err = FetchServerPKI(short, logr.Discard(), u, Token{Secret: "wrong", CAHash: tok.CAHash}, other)
	require.ErrorAs(t, err, &je)
	assert.Contains(t, err.Error(), "does not accept the token's server join credential")
	assert.NoDirExists(t, other)

	// A bare secret pins nothing: refused before any connection.
	_, err = FetchServerPKI(ctx, logr.Discard(), u, Token{Secret: tok.Secret}, other)
	require.Error(t, err)
	assert.False(t, errors.As(err, &je))
}

// TestFetchServerPKIRefusesAgentTokens: an agent token or a bootstrap
// token never joins a server: refused at once, before any connection
// (the URL answers nothing), naming the kind and never the secret.
func TestFetchServerPKIRefusesAgentTokens(t *testing.T) {
	u := &url.URL{Scheme: "https", Host: "127.0.0.1:1"}
	hash := strings.Repeat("ab", 32)
	for _, tok := range []Token{{Secret: "agent-s3cret", CAHash: hash, Kind: AgentToken}, {Secret: "abcdef.0123456789abcdef", CAHash: hash, Kind: BootstrapToken}} {
		_, err := FetchServerPKI(t.Context(), logr.Discard(), u, tok, t.TempDir())
		var je *ServerJoinError
		require.ErrorAs(t, err, &je, tok.Kind)
		assert.Contains(t, err.Error(), "joins agents only", tok.Kind)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.NotContains(t, err.Error(), "0123456789abcdef")
	}
}
