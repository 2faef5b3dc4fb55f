package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
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

	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/pki"
)

// TestEnsureNodePassword: a missing file is made (0600, 64 hex digits) and
// kept; a short or unreadable one is an error naming the file, never its
// content.
func TestEnsureNodePassword(t *testing.T) {
	dir := t.TempDir()
	p, err := EnsureNodePassword(dir)
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{64}$`, p)
	st, err := os.Stat(NodePasswordFile(dir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	again, err := EnsureNodePassword(dir)
	require.NoError(t, err)
	assert.Equal(t, p, again, "kept across restarts")

	require.NoError(t, os.WriteFile(NodePasswordFile(dir), []byte("short-garbage\n"), 0o600))
	_, err = EnsureNodePassword(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), NodePasswordFile(dir))
	assert.NotContains(t, err.Error(), "short-garbage")

	other := t.TempDir()
	require.NoError(t, os.MkdirAll(NodePasswordFile(other), 0o700)) // a directory: unreadable as a file
	_, err = EnsureNodePassword(other)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "node password file")
}

// request is a PEM CSR for subject with dns names.
func request(t *testing.T, cn string, org []string, dns ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: org}, DNSNames: dns}, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// bootstrapCSR is a node client CSR of a bootstrap token for node,
// proved with password ("" for no proof).
func bootstrapCSR(t *testing.T, name, node, password string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	req := request(t, "system:node:"+node, []string{"system:nodes"})
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: req, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Username: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", bootstrapGroup, "system:authenticated"},
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
	if password != "" {
		proof, err := ProveNodePassword(password, node, req)
		require.NoError(t, err)
		csr.Annotations[NodePasswordProofAnnotation] = proof
	}
	return csr
}

// TestReviewNodeClient: a bootstrap token's node client request is
// approved only with a proof of some node password for that very request
// and node; everything malformed is denied with the reason; others'
// requests are left alone.
func TestReviewNodeClient(t *testing.T) {
	const pw = "0123456789abcdef0123456789abcdef"
	good := bootstrapCSR(t, "good", "node-b", pw)
	v, node, pub, reason := ReviewNodeClient(good)
	require.Equal(t, approvers.Approve, v, reason)
	assert.Equal(t, "node-b", node)
	want, err := NodePasswordPublicKey(pw)
	require.NoError(t, err)
	assert.Equal(t, want, pub)

	renewal := good.DeepCopy()
	renewal.Spec.Username, renewal.Spec.Groups = "system:node:node-b", []string{"system:nodes"}
	v, _, _, _ = ReviewNodeClient(renewal)
	assert.Equal(t, approvers.Wait, v, "a node's renewal is the controller-manager's")
	serving := good.DeepCopy()
	serving.Spec.SignerName = certificatesv1.KubeletServingSignerName
	v, _, _, _ = ReviewNodeClient(serving)
	assert.Equal(t, approvers.Wait, v, "another signer")

	for name, tc := range map[string]struct {
		mutate func(*certificatesv1.CertificateSigningRequest)
		reason string
	}{
		"no proof": {func(c *certificatesv1.CertificateSigningRequest) { delete(c.Annotations, NodePasswordProofAnnotation) }, "did not present its node password"},
		"garbage proof": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Annotations[NodePasswordProofAnnotation] = "not-base64!.x"
		}, "is not base64"},
		"proof of another request": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Annotations[NodePasswordProofAnnotation] = bootstrapCSR(t, "x", "node-b", pw).Annotations[NodePasswordProofAnnotation]
		}, "signature does not match"},
		"proof for another node": {func(c *certificatesv1.CertificateSigningRequest) {
			proof, err := ProveNodePassword(pw, "node-a", c.Spec.Request)
			require.NoError(t, err)
			c.Annotations[NodePasswordProofAnnotation] = proof
		}, "signature does not match"},
		"not PEM": {func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("garbage") }, "not a PEM CERTIFICATE REQUEST"},
		"bad DER": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{1, 2}})
		}, "spec.request:"},
		"not a node": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = request(t, "admin", []string{"system:masters"})
		}, `CN="admin"`},
		"extra group": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = request(t, "system:node:x", []string{"system:nodes", "system:masters"})
		}, "O=[system:nodes system:masters]"},
		"DNS name": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = request(t, "system:node:x", []string{"system:nodes"}, "x")
		}, "no DNS"},
		"server usage": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageServerAuth)
		}, `usage "server auth"`},
		"no client auth": {func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}
		}, "no client auth"},
	} {
		c := good.DeepCopy()
		tc.mutate(c)
		v, _, _, reason := ReviewNodeClient(c)
		assert.Equal(t, approvers.Deny, v, name)
		assert.Contains(t, reason, tc.reason, name)
		assert.NotContains(t, reason, pw, name)
	}
}

// TestEnsureNodePasswordSecret: the first claim creates the Secret
// (immutable, holding the public key only); the same password matches; a
// different one, a Secret of another type or with garbage is a
// *NodePasswordError and the Secret is left as it was.
func TestEnsureNodePasswordSecret(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	pub, err := NodePasswordPublicKey("password-one-0123456789abcdef0123")
	require.NoError(t, err)
	require.NoError(t, EnsureNodePasswordSecret(ctx, client, "Node-A", pub))
	s, err := client.CoreV1().Secrets("kube-system").Get(ctx, "node-a.node-password.k3s-like", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, NodePasswordSecretType, s.Type)
	assert.True(t, *s.Immutable)
	assert.Equal(t, []byte(pub), s.Data[nodePasswordKey])
	require.NoError(t, EnsureNodePasswordSecret(ctx, client, "node-a", pub), "the same password again")

	other, err := NodePasswordPublicKey("password-two-0123456789abcdef0123")
	require.NoError(t, err)
	var pe *NodePasswordError
	err = EnsureNodePasswordSecret(ctx, client, "node-a", other)
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "node name node-a is held by another node")
	assert.Contains(t, err.Error(), "kube-system/node-a.node-password.k3s-like")

	for name, secret := range map[string]*corev1.Secret{
		"another type": {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{nodePasswordKey: pub}},
		"garbage":      {Type: NodePasswordSecretType, Data: map[string][]byte{nodePasswordKey: []byte("garbage")}},
		"empty":        {Type: NodePasswordSecretType},
	} {
		secret.Name, secret.Namespace = NodePasswordSecret(name[:3]), "kube-system"
		c := fake.NewClientset(secret)
		err := EnsureNodePasswordSecret(ctx, c, name[:3], pub)
		require.ErrorAs(t, err, &pe, name)
		assert.Contains(t, err.Error(), "delete it if the node name is free", name)
		got, err := c.CoreV1().Secrets("kube-system").Get(ctx, secret.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, secret.Data, got.Data, "%s: never overwritten", name)
	}
}

// TestDecideNodeClient: the approver approves the first claim of a name
// and the same password again, and denies another password for that name
// with the reason, through the API; a request that is not a bootstrap
// token's is not touched.
func TestDecideNodeClient(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	decide := func(csr *certificatesv1.CertificateSigningRequest) certificatesv1.CertificateSigningRequestCondition {
		t.Helper()
		_, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
		require.NoError(t, err)
		decideNodeClient(ctx, client, csr)
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, csr.Name, metav1.GetOptions{})
		require.NoError(t, err)
		if len(got.Status.Conditions) == 0 {
			return certificatesv1.CertificateSigningRequestCondition{}
		}
		return got.Status.Conditions[0]
	}
	const pw, thief = "node-b-password-0123456789abcdef01", "thief-password-0123456789abcdef0123"
	assert.Equal(t, certificatesv1.CertificateApproved, decide(bootstrapCSR(t, "first", "node-b", pw)).Type)
	assert.Equal(t, certificatesv1.CertificateApproved, decide(bootstrapCSR(t, "again", "node-b", pw)).Type, "the node again, with its password")
	denied := decide(bootstrapCSR(t, "stolen", "node-b", thief))
	assert.Equal(t, certificatesv1.CertificateDenied, denied.Type)
	assert.Contains(t, denied.Message, "node name node-b is held by another node")
	assert.Equal(t, certificatesv1.CertificateDenied, decide(bootstrapCSR(t, "unproved", "node-c", "")).Type)
	renewal := bootstrapCSR(t, "renewal", "node-b", "")
	renewal.Spec.Username, renewal.Spec.Groups = "system:node:node-b", []string{"system:nodes"}
	assert.Empty(t, decide(renewal).Type, "the controller-manager's")
	assert.False(t, approvers.Decided(renewal))
}

// TestNodeClientEnsure: with no certificate, the node asks for one by a
// CSR with its password's proof (ReviewNodeClient approves it), writes
// the store's current pair and a kubeconfig (0600) naming it; a valid
// certificate is kept without a request; a denial is a
// *NodeClientCertError with the server's reason.
func TestNodeClientEnsure(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	ca, err := pki.LoadOrCreateCA(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"), "")
	require.NoError(t, err)
	client := fake.NewClientset()
	requests := 0
	deny := ""
	lifetime := time.Hour
	client.PrependReactor("create", "certificatesigningrequests", func(a k8stesting.Action) (bool, runtime.Object, error) {
		requests++
		csr := a.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		csr.Name = csr.GenerateName + strings.Repeat("x", requests)
		v, _, _, reason := ReviewNodeClient(&certificatesv1.CertificateSigningRequest{ObjectMeta: csr.ObjectMeta, Spec: func() certificatesv1.CertificateSigningRequestSpec {
			s := csr.Spec
			s.Username, s.Groups = "system:bootstrap:abcdef", []string{"system:bootstrappers"}
			return s
		}()})
		if v != approvers.Approve || deny != "" {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NodePasswordRejected", Message: reason + deny}}
			return false, nil, nil
		}
		issued := signCSR(t, ca, csr.Spec.Request, requests, lifetime)
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		csr.Status.Certificate = issued
		return false, nil, nil
	})
	n := NodeClient{Node: "node-b", Password: "node-b-password-0123456789abcdef01", CertDir: filepath.Join(dir, "kubelet", "pki"),
		Kubeconfig: filepath.Join(dir, "node", "kubelet.kubeconfig"), Server: "https://" + net.JoinHostPort("192.0.2.10", "6443"), CAFile: filepath.Join(dir, "ca.crt")}
	require.NoError(t, n.Ensure(ctx, logr.Discard(), client))
	assert.Equal(t, 1, requests)
	st, err := os.Stat(n.Kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	kc, err := os.ReadFile(n.Kubeconfig)
	require.NoError(t, err)
	assert.Contains(t, string(kc), filepath.Join(n.CertDir, "kubelet-client-current.pem"))
	assert.Contains(t, string(kc), "https://192.0.2.10:6443")

	require.NoError(t, n.Ensure(ctx, logr.Discard(), client))
	assert.Equal(t, 1, requests, "a valid certificate is kept")

	// One with less than 10 minutes left is asked for again (a fresh
	// fake: it ignores the wait's name selector); so is one with the
	// kubeconfig gone.
	lifetime = 5 * time.Minute
	short := NodeClient{Node: "node-s", Password: n.Password, CertDir: filepath.Join(dir, "s", "pki"), Kubeconfig: filepath.Join(dir, "s", "kubelet.kubeconfig"), Server: n.Server, CAFile: n.CAFile}
	first := fake.NewClientset()
	first.PrependReactor("create", "certificatesigningrequests", client.ReactionChain[0].React)
	require.NoError(t, short.Ensure(ctx, logr.Discard(), first))
	lifetime = time.Hour
	again := fake.NewClientset()
	again.PrependReactor("create", "certificatesigningrequests", client.ReactionChain[0].React)
	require.NoError(t, short.Ensure(ctx, logr.Discard(), again))
	assert.Equal(t, 3, requests, "a certificate about to expire is replaced")
	require.NoError(t, os.Remove(short.Kubeconfig))
	third := fake.NewClientset()
	third.PrependReactor("create", "certificatesigningrequests", client.ReactionChain[0].React)
	require.NoError(t, short.Ensure(ctx, logr.Discard(), third))
	assert.Equal(t, 4, requests, "no kubeconfig: asked again")

	// Another node's name in the same store: asked for again, and refused
	// (a fresh fake: it ignores the wait's name selector).
	deny = ": node name node-a is held by another node"
	m := n
	m.Node = "node-a"
	fresh := fake.NewClientset()
	fresh.PrependReactor("create", "certificatesigningrequests", client.ReactionChain[0].React)
	err = m.Ensure(ctx, logr.Discard(), fresh)
	var ce *NodeClientCertError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 5, requests)
	assert.Contains(t, err.Error(), "the server refused a client certificate for node node-a")
	assert.Contains(t, err.Error(), "held by another node")
	assert.NotContains(t, err.Error(), n.Password)
}

// TestNodeClientApproverRun: the approver's loop decides a request created
// while it runs, and returns nil, leaving no goroutine, when stopped.
func TestNodeClientApproverRun(t *testing.T) {
	client := fake.NewClientset()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- NodeClientApprover{Resync: 100 * time.Millisecond}.run(ctx, client) }()
	_, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, bootstrapCSR(t, "late", "node-z", "node-z-password-0123456789abcdef01"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, "late", metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) == 1 && got.Status.Conditions[0].Type == certificatesv1.CertificateApproved
	}, 10*time.Second, 50*time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the approver did not stop")
	}
}
