package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// TestStatusTLS: with --status-tls=always (what a non-loopback
// --status-address gets by default) the status endpoint refuses plain HTTP
// and TLS without a client certificate, serves a client certificate of
// the cluster's client CA (the admin kubeconfig's), and `k3s-like features`
// reaches it with the kubeconfig. A bad mode is refused before anything
// listens.
func TestStatusTLS(t *testing.T) {
	s := newServer(t, t.TempDir())
	s.statusTLS = true
	s.start("--status-tls=always")
	s.waitReady(90 * time.Second)

	plain, err := http.Get("http://" + s.statusAddress() + "/components")
	if err == nil {
		body, _ := io.ReadAll(plain.Body)
		plain.Body.Close()
		assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "plain HTTP: %s", body)
		assert.NotContains(t, string(body), "kube-apiserver")
	}
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	_, err = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + s.statusAddress() + "/components")
	assert.Error(t, err, "TLS without a client certificate")

	resp, err := s.statusGet("/components")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "kube-apiserver")

	kubeconfig := filepath.Join(s.dataDir, "admin.kubeconfig")
	out, err := exec.Command(binary, "features", "--status-address="+s.statusAddress(), "--status-tls=always", "--status-kubeconfig="+kubeconfig, "-o", "json").Output()
	require.NoError(t, err)
	var list featuresv1alpha1.FeatureList
	require.NoError(t, json.Unmarshal(out, &list))
	assert.NotEmpty(t, list.Items)
	cmd := exec.Command(binary, "features", "--status-address="+s.statusAddress(), "--status-tls=always")
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	msg, err := cmd.CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(msg), "is TLS: give --status-kubeconfig")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)

	bad := newServer(t, t.TempDir())
	bad.start("--status-tls=sometimes")
	code, _ = bad.wait(30 * time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(bad.stderr.String()), "--status-tls=sometimes: want auto or always")
	_, err = os.Stat(filepath.Join(bad.dataDir, "tls"))
	assert.True(t, os.IsNotExist(err), "refused before anything is written")
}
