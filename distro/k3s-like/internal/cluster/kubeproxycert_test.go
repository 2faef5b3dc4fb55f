package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/pki"
)

// kubeProxyCSR is a CSR for subject with usages, by user in groups.
func kubeProxyCSR(t *testing.T, name string, subject pkix.Name, dns []string, user string, groups []string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns}, key)
	require.NoError(t, err)
	if usages == nil {
		usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	}
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
		Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
		SignerName: certificatesv1.KubeAPIServerClientSignerName, Usages: usages, Username: user, Groups: groups,
	}}
}

// signCSR is the client certificate ca issues for the PEM request, valid
// for lifetime, with serial.
func signCSR(t *testing.T, ca *pki.CA, request []byte, serial int, lifetime time.Duration) []byte {
	t.Helper()
	block, _ := pem.Decode(request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	require.NoError(t, err)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(int64(serial)), Subject: req.Subject,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(lifetime), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
		ca.Cert, req.PublicKey, ca.Key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestReviewKubeProxyClient: a node's request for CN=system:kube-proxy is
// approved; anything else a node asks of the kube-apiserver-client signer
// is denied with the reason; requests of other users or signers are left
// to others.
func TestReviewKubeProxyClient(t *testing.T) {
	node, nodes := "system:node:node-b", []string{"system:nodes", "system:authenticated"}
	proxy := pkix.Name{CommonName: "system:kube-proxy"}
	v, reason := ReviewKubeProxyClient(kubeProxyCSR(t, "ok", proxy, nil, node, nodes))
	assert.Equal(t, approvers.Approve, v, reason)
	assert.Equal(t, "node node-b's kube-proxy (system:kube-proxy)", reason)

	for name, tc := range map[string]struct {
		csr  *certificatesv1.CertificateSigningRequest
		want string
	}{
		"admin":        {kubeProxyCSR(t, "a", pkix.Name{CommonName: "system:admin"}, nil, node, nodes), `subject CN="system:admin"`},
		"masters":      {kubeProxyCSR(t, "m", pkix.Name{CommonName: "system:kube-proxy", Organization: []string{"system:masters"}}, nil, node, nodes), "O=[system:masters]"},
		"another node": {kubeProxyCSR(t, "n", pkix.Name{CommonName: "system:node:node-a", Organization: []string{"system:nodes"}}, nil, node, nodes), `CN="system:node:node-a"`},
		"names":        {kubeProxyCSR(t, "d", proxy, []string{"evil.example"}, node, nodes), "no DNS, IP, e-mail or URI names"},
		"server auth":  {kubeProxyCSR(t, "s", proxy, nil, node, nodes, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), `usage "server auth"`},
		"no client":    {kubeProxyCSR(t, "c", proxy, nil, node, nodes, certificatesv1.UsageDigitalSignature), "no client auth usage"},
	} {
		v, reason := ReviewKubeProxyClient(tc.csr)
		assert.Equal(t, approvers.Deny, v, name)
		assert.Contains(t, reason, tc.want, name)
	}

	for name, csr := range map[string]*certificatesv1.CertificateSigningRequest{
		"an admin's request":  kubeProxyCSR(t, "u", proxy, nil, "alice", []string{"system:authenticated"}),
		"node name, no group": kubeProxyCSR(t, "g", proxy, nil, node, []string{"system:authenticated"}),
		"a bootstrap token's": kubeProxyCSR(t, "b", proxy, nil, "system:bootstrap:abcdef", []string{"system:bootstrappers"}),
		"the kubelet's signer": func() *certificatesv1.CertificateSigningRequest {
			c := kubeProxyCSR(t, "k", proxy, nil, node, nodes)
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
			return c
		}(),
	} {
		v, _ := ReviewKubeProxyClient(csr)
		assert.Equal(t, approvers.Wait, v, name)
	}
}

// TestKubeProxyClientEnsure: with no certificate, the node asks for
// kube-proxy's by a CSR ReviewKubeProxyClient approves, and writes the
// key (0600), the certificate and a kubeconfig (0600) with them and the
// server; a valid one is kept; one about to expire is asked for again.
func TestKubeProxyClientEnsure(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "")
	require.NoError(t, err)
	requests := 0
	lifetime := 365 * 24 * time.Hour
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		requests++
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		csr.Name = csr.GenerateName + "x"
		review := csr.DeepCopy()
		review.Spec.Username, review.Spec.Groups = "system:node:node-b", []string{"system:nodes"}
		v, reason := ReviewKubeProxyClient(review)
		require.Equal(t, approvers.Approve, v, reason)
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = signCSR(t, ca, csr.Spec.Request, requests, lifetime)
		return false, nil, nil
	}
	client := func() *fake.Clientset { // fresh: the fake ignores the wait's name selector
		c := fake.NewClientset()
		c.PrependReactor("create", "certificatesigningrequests", react)
		return c
	}
	nl := pki.Layout{Dir: filepath.Join(dir, "pki")}.NodeLayout("node-b")
	k := KubeProxyClient{Node: "node-b", CertFile: nl.KubeProxy().CertFile, KeyFile: nl.KubeProxy().KeyFile, Kubeconfig: nl.KubeProxyKubeconfig(),
		Server: "https://192.0.2.10:6443", CAFile: filepath.Join(dir, "ca.crt")}
	require.NoError(t, k.Ensure(ctx, logr.Discard(), client()))
	assert.Equal(t, 1, requests)
	for path, want := range map[string]os.FileMode{k.KeyFile: 0o600, k.Kubeconfig: 0o600, k.CertFile: 0o644} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode().Perm(), path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://192.0.2.10:6443", cfg.Host)
	block, _ := pem.Decode(cfg.CertData)
	crt, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	assert.Equal(t, "system:kube-proxy", crt.Subject.CommonName)

	require.NoError(t, k.Ensure(ctx, logr.Discard(), client()))
	assert.Equal(t, 1, requests, "a valid certificate is kept")

	lifetime = 24 * time.Hour
	short := k
	short.CertFile, short.KeyFile, short.Kubeconfig = filepath.Join(dir, "s.crt"), filepath.Join(dir, "s.key"), filepath.Join(dir, "s.kubeconfig")
	require.NoError(t, short.Ensure(ctx, logr.Discard(), client()))
	lifetime = 365 * 24 * time.Hour
	require.NoError(t, short.Ensure(ctx, logr.Discard(), client()))
	assert.Equal(t, 3, requests, "a certificate with less than 30 days left is replaced")
}

// TestNodeClientApproverRunsKubeProxy: the approver's loop approves a
// node's kube-proxy request too.
func TestNodeClientApproverRunsKubeProxy(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- NodeClientApprover{Resync: 100 * time.Millisecond}.run(ctx, client) }()
	_, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx,
		kubeProxyCSR(t, "proxy", pkix.Name{CommonName: "system:kube-proxy"}, nil, "system:node:node-b", []string{"system:nodes"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "proxy", metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) == 1 && got.Status.Conditions[0].Type == certificatesv1.CertificateApproved &&
			got.Status.Conditions[0].Reason == "KubeProxyClientVerified"
	}, 10*time.Second, 50*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the approver did not stop")
	}
}
