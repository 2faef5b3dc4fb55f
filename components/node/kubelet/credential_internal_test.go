package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWaitCredential: a bootstrapping kubelet's kubeconfig names a client
// certificate file it writes only once its request is signed; the kubelet
// is not ready before that file exists, nor before the kubeconfig does.
func TestWaitCredential(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubelet.kubeconfig")
	pem := filepath.Join(dir, "pki", "kubelet-client-current.pem")
	notYet := func() {
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, waitCredential(ctx, kubeconfig), context.DeadlineExceeded)
	}
	notYet()
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.10:6443"}}]
users: [{name: u, user: {client-certificate: `+pem+`, client-key: `+pem+`}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	notYet()
	done := make(chan error, 1)
	go func() { done <- waitCredential(t.Context(), kubeconfig) }()
	require.NoError(t, os.MkdirAll(filepath.Dir(pem), 0o700))
	require.NoError(t, os.WriteFile(pem, []byte("signed"), 0o600))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("not ready after the certificate was written")
	}
}
