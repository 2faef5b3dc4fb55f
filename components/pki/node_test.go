package pki_test

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/pki"
)

// TestEnsureNode: the kubelet's client certificate is system:node:NAME in
// system:nodes from the client CA; its serving certificate covers the
// node's names and IPs from the kubelet serving CA, which no client of
// the apiserver trusts; its kubeconfig uses the client
// certificate; a second call reuses both; a name that is not a node name
// (a path, say) is refused before anything is written.
func TestEnsureNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	n := pki.Node{Name: "node-a", IPs: []net.IP{net.ParseIP("192.0.2.10")}, DNSNames: []string{"node-a.example.internal"}}
	nf, err := f.EnsureNode(n, "https://127.0.0.1:6443")
	require.NoError(t, err)

	client := leaf(t, nf.Client)
	assert.Equal(t, "system:node:node-a", client.Subject.CommonName)
	assert.Equal(t, []string{"system:nodes"}, client.Subject.Organization)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, client.ExtKeyUsage)
	require.NoError(t, client.CheckSignatureFrom(f.ClientCA.Cert))

	proxy := leaf(t, nf.KubeProxy)
	assert.Equal(t, "system:kube-proxy", proxy.Subject.CommonName, "kube-proxy's own identity, not the kubelet's")
	assert.Empty(t, proxy.Subject.Organization)
	assert.Equal(t, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, proxy.ExtKeyUsage)
	require.NoError(t, proxy.CheckSignatureFrom(f.ClientCA.Cert))
	pkc, err := clientcmd.LoadFromFile(nf.KubeProxyKubeconfig)
	require.NoError(t, err)
	assert.Equal(t, nf.KubeProxy.CertPEM, pkc.AuthInfos[pkc.Contexts[pkc.CurrentContext].AuthInfo].ClientCertificateData)
	assert.Equal(t, f.Layout().NodeLayout("node-a").KubeProxyKubeconfig(), nf.KubeProxyKubeconfig)
	assert.Equal(t, os.FileMode(0o600), mode(t, nf.KubeProxy.KeyFile))
	assert.Equal(t, os.FileMode(0o600), mode(t, nf.KubeProxyKubeconfig))

	serving := leaf(t, nf.Serving)
	require.NoError(t, serving.CheckSignatureFrom(f.KubeletServingCA.Cert))
	require.Error(t, serving.CheckSignatureFrom(f.ServerCA.Cert), "not the CA kubectl and agents trust for the apiserver")
	roots := x509.NewCertPool()
	roots.AddCert(f.KubeletServingCA.Cert)
	for _, name := range []string{"192.0.2.10", "127.0.0.1", "node-a", "node-a.example.internal", "localhost"} {
		_, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		assert.NoError(t, err, name)
	}
	assert.Equal(t, os.FileMode(0o600), mode(t, nf.Client.KeyFile))
	assert.Equal(t, os.FileMode(0o600), mode(t, nf.Kubeconfig))

	kc, err := clientcmd.LoadFromFile(nf.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)
	assert.Equal(t, nf.Client.CertPEM, kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].ClientCertificateData)
	assert.Equal(t, f.Layout().NodeLayout("node-a").Kubeconfig(), nf.Kubeconfig)

	again, err := f.EnsureNode(n, "https://127.0.0.1:6443")
	require.NoError(t, err)
	assert.Equal(t, nf.Client.CertPEM, again.Client.CertPEM, "reused")
	assert.Equal(t, nf.Serving.CertPEM, again.Serving.CertPEM, "reused")
	assert.Equal(t, nf.KubeProxy.CertPEM, again.KubeProxy.CertPEM, "reused")

	_, err = (&pki.Files{Dir: dir, ServerCA: f.ServerCA, ClientCA: f.ClientCA}).EnsureNode(n, "https://127.0.0.1:6443")
	assert.ErrorContains(t, err, "kubelet serving CA", "without the kubelet serving CA nothing is issued")

	for _, bad := range []string{"", "../escape", "Node_A"} {
		_, err := f.EnsureNode(pki.Node{Name: bad}, "https://127.0.0.1:6443")
		assert.ErrorContains(t, err, "node name", bad)
	}
	_, err = os.Stat(filepath.Join(dir, "escape"))
	assert.True(t, os.IsNotExist(err), "nothing written outside node/")
}
