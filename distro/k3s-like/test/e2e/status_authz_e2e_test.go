package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// statusAs returns a GET of the TLS status endpoint at addr, with cert,
// trusting the server CA of dataDir: the code and body.
func statusAs(t *testing.T, dataDir, addr string, cert tls.Certificate) func(path string) (int, string) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	return func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("https://" + addr + path)
		require.NoError(t, err, path)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, path)
		return resp.StatusCode, string(b)
	}
}

// issueClientCert issues a certificate of the cluster's client CA in
// dataDir for CN name in groups, as an admin holding that CA could.
func issueClientCert(t *testing.T, dataDir, name string, groups ...string) tls.Certificate {
	t.Helper()
	l := pki.Layout{Dir: filepath.Join(dataDir, "tls")}
	ca, err := pki.LoadOrCreateCA(l.ClientCA().CertFile, l.ClientCA().KeyFile, "")
	require.NoError(t, err)
	dir := t.TempDir()
	p, err := ca.Issue(filepath.Join(dir, "crt"), filepath.Join(dir, "key"), pki.Leaf{CommonName: name, Organization: groups, Client: true})
	require.NoError(t, err)
	c, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	require.NoError(t, err)
	return c
}

// joinAsNode gets the client certificate of node as a joining agent gets
// it: with the server's bootstrap token, a CSR for system:node:NODE (group
// system:nodes) to signer kube-apiserver-client-kubelet carrying the proof
// of a new node password, which the node-client approver approves (the
// name's first claim) and the controller-manager signs with the client CA.
func joinAsNode(ctx context.Context, t *testing.T, dataDir, node string) tls.Certificate {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	admin, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	var token *corev1.Secret
	require.Eventually(t, func() bool {
		list, err := admin.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{FieldSelector: "type=" + string(corev1.SecretTypeBootstrapToken)})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		token = &list.Items[0]
		return true
	}, 60*time.Second, 500*time.Millisecond, "the bootstrap token")
	bootstrap := rest.AnonymousClientConfig(cfg)
	bootstrap.BearerToken = string(token.Data["token-id"]) + "." + string(token.Data["token-secret"])
	c, err := kubernetes.NewForConfig(bootstrap)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}}, key)
	require.NoError(t, err)
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	password, err := cluster.NewSecret()
	require.NoError(t, err)
	proof, err := cluster.ProveNodePassword(password, node, request)
	require.NoError(t, err)
	req, err := c.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-", Annotations: map[string]string{cluster.NodePasswordProofAnnotation: proof}},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	name, uid := req.Name, req.UID
	waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(waitCtx, c, name, uid)
	require.NoError(t, err, "the node-client approver approves and the controller-manager signs the CSR %s", name)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, err)
	return cert
}

// requireClientCA checks that cert is the client CA's in dataDir, for CN
// user in groups.
func requireClientCA(t *testing.T, dataDir string, cert tls.Certificate, user string, groups ...string) {
	t.Helper()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, user, leaf.Subject.CommonName)
	assert.Equal(t, groups, leaf.Subject.Organization)
	ca, err := os.ReadFile(filepath.Join(dataDir, "tls", "client-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "a certificate of the cluster's client CA")
}

// TestStatusAuthorization: over TLS (--status-tls=always, what a
// non-loopback --status-address gets), with --enable-pprof, a client
// certificate of the cluster's client CA is not enough:
//
//   - a node's credential, got as a joining agent's kubelet gets it (signed
//     by the controller-manager with the client CA), reads /livez, /readyz
//     and /healthz, and gets 403 on /flagz, /debug/pprof/ and the rest;
//   - a system:masters certificate reads them;
//   - a user RBAC allows to get /debug/pprof/* (a ClusterRole's
//     nonResourceURLs) reads the profiles and not /flagz, and
//     system:monitoring reads /metrics (upstream's bootstrap policy): the
//     apiserver decides, by SubjectAccessReview;
//   - ?seconds above 60 is 400, naming the cap.
func TestStatusAuthorization(t *testing.T) {
	s := newServer(t, t.TempDir())
	s.statusTLS = true
	s.start("--status-tls=always", "--enable-pprof")
	s.waitReady(90 * time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	nodeCert := joinAsNode(ctx, t, s.dataDir, "node-b")
	requireClientCA(t, s.dataDir, nodeCert, "system:node:node-b", "system:nodes")
	node := statusAs(t, s.dataDir, s.statusAddress(), nodeCert)
	for _, path := range []string{"/livez", "/readyz", "/healthz", "/readyz/kube-apiserver"} {
		code, body := node(path)
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
	for _, path := range []string{"/flagz", "/flagz/kube-apiserver", "/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/goroutine", "/debug/pprof/trace", "/components", "/metrics", "/statusz", "/features", "/leader-election"} {
		code, body := node(path)
		assert.Equal(t, http.StatusForbidden, code, "%s: %s", path, body)
		assert.Contains(t, body, `forbidden: User "system:node:node-b" cannot get path`, path)
		assert.NotContains(t, body, "kube-apiserver flagz", path)
	}

	admin := statusAs(t, s.dataDir, s.statusAddress(), issueClientCert(t, s.dataDir, "ops", "system:masters"))
	code, body := admin("/flagz")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "kube-apiserver flagz")
	code, body = admin("/debug/pprof/")
	assert.Equal(t, http.StatusOK, code, body)
	code, _ = admin("/debug/pprof/profile?seconds=1")
	assert.Equal(t, http.StatusOK, code)
	code, body = admin("/debug/pprof/profile?seconds=86400")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Equal(t, "seconds=86400: want a number of seconds, at most 60\n", body)

	// RBAC grants a user the profiles, and no more.
	c := s.client()
	_, err := c.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "status-pprof-reader"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/pprof", "/debug/pprof/*"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "status-pprof-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "status-pprof-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "pprof-reader"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	reader := statusAs(t, s.dataDir, s.statusAddress(), issueClientCert(t, s.dataDir, "pprof-reader"))
	assert.Eventually(t, func() bool { // RBAC's informer, then a denial kept 10 s
		code, _ := reader("/debug/pprof/")
		return code == http.StatusOK
	}, 30*time.Second, time.Second, "a user RBAC allows")
	code, _ = reader("/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusOK, code)
	code, body = reader("/flagz")
	assert.Equal(t, http.StatusForbidden, code, body)

	monitoring := statusAs(t, s.dataDir, s.statusAddress(), issueClientCert(t, s.dataDir, "prometheus", "system:monitoring"))
	code, body = monitoring("/metrics")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "kubeharness_component_state")
	code, _ = monitoring("/debug/pprof/")
	assert.Equal(t, http.StatusForbidden, code)
}
