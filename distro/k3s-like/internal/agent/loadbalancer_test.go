package agent

import (
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// TestLoadBalancerKubeconfigs: the agent's load balancer starts with the
// server joined through, and the kubelet's kubeconfig, if it exists,
// points at it, 0600, the rest of it kept; one that does not exist yet is
// not made.
func TestLoadBalancerKubeconfigs(t *testing.T) {
	dir := t.TempDir()
	c := node.Config{DataDir: dir, Name: "node-b", Layout: pki.Layout{Dir: filepath.Join(dir, "agent", "pki")}}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["server"] = &clientcmdapi.Cluster{Server: "https://192.0.2.10:6443", CertificateAuthority: "/ca.crt"}
	kc.AuthInfos["node"] = &clientcmdapi.AuthInfo{ClientCertificate: "/kubelet-client-current.pem"}
	kc.Contexts["node"] = &clientcmdapi.Context{Cluster: "server", AuthInfo: "node"}
	kc.CurrentContext = "node"
	a := &options{lbPort: 16444}
	u, err := url.Parse("https://192.0.2.10:6443")
	require.NoError(t, err)
	_, err = a.loadBalancer(c, u)
	require.NoError(t, err)
	_, err = os.Stat(c.Kubeconfig())
	assert.True(t, os.IsNotExist(err), "none is made")

	boot := c.Kubeconfig()
	require.NoError(t, os.MkdirAll(filepath.Dir(boot), 0o700))
	require.NoError(t, clientcmd.WriteToFile(*kc, boot))
	lb, err := a.loadBalancer(c, u)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.10:6443"}, lb.Servers)
	assert.Equal(t, "127.0.0.1:16444", lb.Address)
	assert.Equal(t, c.Kubeconfig(), lb.Kubeconfig)
	got, err := clientcmd.LoadFromFile(boot)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:16444", got.Clusters["server"].Server)
	assert.Equal(t, "/kubelet-client-current.pem", got.AuthInfos["node"].ClientCertificate, "the rest kept")
	st, err := os.Stat(boot)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}
