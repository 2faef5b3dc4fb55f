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
	certutil "k8s.io/client-go/util/cert"

	"github.com/kubeharness/kubeharness/components/pki"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Mode().Perm()
}

func leaf(t *testing.T, p *pki.Pair) *x509.Certificate {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(p.CertPEM)
	require.NoError(t, err)
	return certs[0]
}

func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)

	assert.Equal(t, os.FileMode(0o700), mode(t, dir))
	for _, ca := range []*pki.CA{f.ServerCA, f.ClientCA, f.RequestHeaderCA, f.EtcdCA} {
		assert.Equal(t, os.FileMode(0o600), mode(t, ca.KeyFile), ca.KeyFile)
		assert.Equal(t, os.FileMode(0o644), mode(t, ca.CertFile), ca.CertFile)
	}
	for _, p := range []*pki.Pair{f.APIServerServing, f.Admin, f.Scheduler, f.ControllerManager, f.EtcdServer, f.APIServerEtcdClient, f.FrontProxyClient, f.APIServerKubeletClient} {
		assert.Equal(t, os.FileMode(0o600), mode(t, p.KeyFile), p.KeyFile)
	}
	assert.Equal(t, os.FileMode(0o600), mode(t, f.ServiceAccountKey))
	for _, kc := range []string{f.AdminKubeconfig, f.SchedulerKubeconfig, f.ControllerManagerKubeconfig} {
		assert.Equal(t, os.FileMode(0o600), mode(t, kc), kc)
	}

	// The serving certificate is valid for loopback and the service names.
	roots := x509.NewCertPool()
	roots.AddCert(f.ServerCA.Cert)
	for _, name := range []string{"127.0.0.1", "10.0.0.1", "localhost", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"} {
		_, err := leaf(t, f.APIServerServing).Verify(x509.VerifyOptions{Roots: roots, DNSName: name})
		assert.NoError(t, err, name)
	}
	// Client certificates carry the identities RBAC expects.
	clientRoots := x509.NewCertPool()
	clientRoots.AddCert(f.ClientCA.Cert)
	for p, want := range map[*pki.Pair][2]string{
		f.Admin:             {"system:admin", "system:masters"},
		f.Scheduler:         {"system:kube-scheduler", ""},
		f.ControllerManager: {"system:kube-controller-manager", ""},
		// The kubelets authorize the apiserver by a role bound to this
		// group, not as system:masters.
		f.APIServerKubeletClient: {"system:kube-apiserver", pki.KubeletAPIAdminGroup},
		f.KubeletServingApprover: {pki.KubeletServingApproverUser, ""},
		f.FeaturePublisher:       {pki.FeaturePublisherUser, ""},
		f.Deployer:               {pki.DeployerUser, ""},
	} {
		c := leaf(t, p)
		assert.Equal(t, want[0], c.Subject.CommonName)
		if want[1] != "" {
			assert.Equal(t, []string{want[1]}, c.Subject.Organization)
		} else {
			assert.Empty(t, c.Subject.Organization, want[0])
		}
		_, err := c.Verify(x509.VerifyOptions{Roots: clientRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		assert.NoError(t, err, want[0])
	}
	// Kubeconfigs embed everything.
	kc, err := clientcmd.LoadFromFile(f.SchedulerKubeconfig)
	require.NoError(t, err)
	cl := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	assert.Equal(t, "https://127.0.0.1:6443", cl.Server)
	assert.Equal(t, f.ServerCA.CertPEM(), cl.CertificateAuthorityData)
	assert.Empty(t, kc.AuthInfos[kc.Contexts[kc.CurrentContext].AuthInfo].ClientCertificate, "data, not a file")
}

func TestEnsureReuses(t *testing.T) {
	dir := t.TempDir()
	first, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	caBefore, adminBefore, servingBefore := read(t, first.ServerCA.CertFile), read(t, first.Admin.CertFile), read(t, first.APIServerServing.CertFile)
	saBefore := read(t, first.ServiceAccountKey)

	// Same config, another port: CAs, leaves and the SA key are reused; the
	// kubeconfigs follow the new URL.
	second, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:7443"})
	require.NoError(t, err)
	assert.Equal(t, caBefore, read(t, second.ServerCA.CertFile))
	assert.Equal(t, adminBefore, read(t, second.Admin.CertFile))
	assert.Equal(t, servingBefore, read(t, second.APIServerServing.CertFile))
	assert.Equal(t, saBefore, read(t, second.ServiceAccountKey))
	kc, err := clientcmd.LoadFromFile(second.AdminKubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:7443", kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster].Server)

	// A new serving address: the serving certificate is issued again by the
	// same CA; the rest stays.
	third, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:7443", ServingIPs: []net.IP{net.ParseIP("192.0.2.10")}})
	require.NoError(t, err)
	assert.Equal(t, caBefore, read(t, third.ServerCA.CertFile))
	assert.Equal(t, adminBefore, read(t, third.Admin.CertFile))
	assert.NotEqual(t, servingBefore, read(t, third.APIServerServing.CertFile))
	roots := x509.NewCertPool()
	roots.AddCert(third.ServerCA.Cert)
	_, err = leaf(t, third.APIServerServing).Verify(x509.VerifyOptions{Roots: roots, DNSName: "192.0.2.10"})
	assert.NoError(t, err)
}

func TestHalfACAIsAnError(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	require.NoError(t, os.Remove(f.ClientCA.KeyFile))
	_, err = pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	assert.ErrorContains(t, err, "refusing to generate a new CA")
}

// The apiserver's serving certificate file carries its CA after it, so a
// TLS client receives the CA in the handshake; a file written without it
// (an older version) is issued again, and other leaves stay leaf-only.
func TestServingCertificateCarriesItsCA(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	certs, err := certutil.ParseCertsPEM(read(t, f.APIServerServing.CertFile))
	require.NoError(t, err)
	require.Len(t, certs, 2)
	assert.True(t, certs[1].Equal(f.ServerCA.Cert))
	admin, err := certutil.ParseCertsPEM(read(t, f.Admin.CertFile))
	require.NoError(t, err)
	assert.Len(t, admin, 1)

	// Reused as it is.
	again, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	assert.Equal(t, f.APIServerServing.CertPEM, read(t, again.APIServerServing.CertFile))

	// A leaf-only file, as an older version wrote it: issued again, chained.
	leafOnly, err := certutil.EncodeCertificates(certs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.APIServerServing.CertFile, leafOnly, 0o644))
	third, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	certs, err = certutil.ParseCertsPEM(read(t, third.APIServerServing.CertFile))
	require.NoError(t, err)
	require.Len(t, certs, 2)
	assert.True(t, certs[1].Equal(f.ServerCA.Cert))
}

// TestWriteKubeconfigReplacesSymlink: a symbolic link planted where a
// kubeconfig goes is replaced by the file, 0600; what it pointed to is
// neither written nor chmodded.
func TestWriteKubeconfigReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	f, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	link := filepath.Join(dir, "admin.kubeconfig")
	require.NoError(t, os.Symlink(victim, link))
	require.NoError(t, pki.WriteKubeconfig(link, "https://127.0.0.1:6443", f.ServerCA.CertPEM(), f.Admin))
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.True(t, st.Mode().IsRegular(), "%v", st.Mode())
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(got))
	vst, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), vst.Mode().Perm())
}
