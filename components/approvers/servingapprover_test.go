package approvers_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/internal/logtest"
)

// csrFor is what a kubelet with serverTLSBootstrap sends, for user with
// the given subject and names.
func csrFor(t *testing.T, user string, groups []string, cn string, org []string, dns []string, ips []string, mutate func(*x509.CertificateRequest)) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: org}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if mutate != nil {
		mutate(tmpl)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tmpl, key)
	require.NoError(t, err)
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-" + cn, CreationTimestamp: metav1.Now()},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			Username:   user,
			Groups:     groups,
		},
	}
}

func nodeWith(name string, addrs ...corev1.NodeAddress) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Addresses: addrs}}
}

// TestReviewServing: a kubelet gets a serving certificate for its own
// names and addresses only; everything else is denied, or waits while its
// Node does not list the address.
func TestReviewServing(t *testing.T) {
	nodes := []*corev1.Node{
		nodeWith("agent-1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.11"}, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "agent-1.lan"}),
		nodeWith("server", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.10"}),
	}
	nodeGroups := []string{"system:nodes", "system:authenticated"}
	good := func(mut func(*x509.CertificateRequest)) *certificatesv1.CertificateSigningRequest {
		return csrFor(t, "system:node:agent-1", nodeGroups, "system:node:agent-1", []string{"system:nodes"}, []string{"agent-1", "agent-1.lan"}, []string{"192.0.2.11"}, mut)
	}
	for _, tc := range []struct {
		name   string
		csr    func() *certificatesv1.CertificateSigningRequest
		want   approvers.Verdict
		reason string
	}{
		{"its own names and IP", func() *certificatesv1.CertificateSigningRequest { return good(nil) }, approvers.Approve, "node agent-1"},
		{"another node's IP", func() *certificatesv1.CertificateSigningRequest {
			return good(func(r *x509.CertificateRequest) { r.IPAddresses = append(r.IPAddresses, net.ParseIP("192.0.2.10")) })
		}, approvers.Deny, "IP 192.0.2.10 is node server's address"},
		{"an address its Node does not list (yet)", func() *certificatesv1.CertificateSigningRequest {
			return good(func(r *x509.CertificateRequest) { r.IPAddresses = []net.IP{net.ParseIP("198.51.100.7")} })
		}, approvers.Wait, "IP 198.51.100.7 is not an address of Node agent-1"},
		{"a DNS name its Node does not list", func() *certificatesv1.CertificateSigningRequest {
			return good(func(r *x509.CertificateRequest) { r.DNSNames = []string{"kubernetes.default.svc"} })
		}, approvers.Wait, `DNS name "kubernetes.default.svc"`},
		{"no Node yet", func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:node:agent-2", nodeGroups, "system:node:agent-2", []string{"system:nodes"}, []string{"agent-2"}, nil, nil)
		}, approvers.Wait, "no Node agent-2 yet"},
		{"a node asks in another node's name", func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:node:agent-1", nodeGroups, "system:node:server", []string{"system:nodes"}, []string{"server"}, nil, nil)
		}, approvers.Deny, `subject CN="system:node:server"`},
		{"a bootstrap token asks", func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:bootstrap:abcdef", []string{"system:bootstrappers"}, "system:node:agent-1", []string{"system:nodes"}, []string{"agent-1"}, nil, nil)
		}, approvers.Deny, "not by a node's credential"},
		{"a user named like a node but not in system:nodes", func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:node:agent-1", []string{"system:authenticated"}, "system:node:agent-1", []string{"system:nodes"}, []string{"agent-1"}, nil, nil)
		}, approvers.Deny, "not by a node's credential"},
		{"another organization", func() *certificatesv1.CertificateSigningRequest {
			return csrFor(t, "system:node:agent-1", nodeGroups, "system:node:agent-1", []string{"system:masters"}, []string{"agent-1"}, nil, nil)
		}, approvers.Deny, "O=[system:masters]"},
		{"a URI name", func() *certificatesv1.CertificateSigningRequest {
			return good(func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "x"}} })
		}, approvers.Deny, "URI"},
		{"no names", func() *certificatesv1.CertificateSigningRequest {
			return good(func(r *x509.CertificateRequest) { r.DNSNames, r.IPAddresses = nil, nil })
		}, approvers.Deny, "no DNS name or IP"},
		{"client auth usage", func() *certificatesv1.CertificateSigningRequest {
			c := good(nil)
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
			return c
		}, approvers.Deny, `usage "client auth"`},
		{"another signer", func() *certificatesv1.CertificateSigningRequest {
			c := good(nil)
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
			return c
		}, approvers.Deny, "signer"},
		{"not a PEM request", func() *certificatesv1.CertificateSigningRequest {
			c := good(nil)
			c.Spec.Request = []byte("garbage")
			return c
		}, approvers.Deny, "not a PEM"},
		{"a corrupted signature", func() *certificatesv1.CertificateSigningRequest {
			c := good(nil)
			block, _ := pem.Decode(c.Spec.Request)
			block.Bytes[len(block.Bytes)-3] ^= 0xff
			c.Spec.Request = pem.EncodeToMemory(block)
			return c
		}, approvers.Deny, "spec.request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := approvers.ReviewServing(tc.csr(), nodes)
			assert.Equal(t, tc.want, got, reason)
			assert.Contains(t, reason, tc.reason)
		})
	}
}

// TestServingApproverRun: the component approves a valid request, denies
// an invalid one at once, leaves a waiting one pending until PendingLimit
// and then denies it, and returns when its context ends.
func TestServingApproverRun(t *testing.T) {
	nodeGroups := []string{"system:nodes"}
	ok := csrFor(t, "system:node:agent-1", nodeGroups, "system:node:agent-1", []string{"system:nodes"}, []string{"agent-1"}, []string{"192.0.2.11"}, nil)
	bad := csrFor(t, "system:node:agent-1", nodeGroups, "system:node:server", []string{"system:nodes"}, []string{"server"}, nil, nil)
	waiting := csrFor(t, "system:node:agent-9", nodeGroups, "system:node:agent-9", []string{"system:nodes"}, []string{"agent-9"}, nil, nil)
	waiting.CreationTimestamp = metav1.NewTime(time.Now().Add(-time.Hour))
	fresh := csrFor(t, "system:node:agent-8", nodeGroups, "system:node:agent-8", []string{"system:nodes"}, []string{"agent-8"}, nil, nil)
	client := fake.NewClientset(ok, bad, waiting, fresh,
		nodeWith("agent-1", corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "192.0.2.11"}))

	a := &approvers.ServingApprover{Resync: 50 * time.Millisecond, PendingLimit: 30 * time.Minute}
	ctx, lines := logtest.Capture(t.Context())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- approvers.RunServingApprover(ctx, a, client) }()

	condition := func(name string) certificatesv1.RequestConditionType {
		c, err := client.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err)
		if len(c.Status.Conditions) == 0 {
			return ""
		}
		return c.Status.Conditions[len(c.Status.Conditions)-1].Type
	}
	require.Eventually(t, func() bool {
		return condition(ok.Name) == certificatesv1.CertificateApproved &&
			condition(bad.Name) == certificatesv1.CertificateDenied &&
			condition(waiting.Name) == certificatesv1.CertificateDenied
	}, 10*time.Second, 20*time.Millisecond)
	assert.Empty(t, condition(fresh.Name), "a request younger than PendingLimit waits for its Node")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the approver did not return after its context ended")
	}
	for _, csr := range []*certificatesv1.CertificateSigningRequest{ok, bad, waiting} {
		assert.NotEmpty(t, lines(`"msg"="Decided on a kubelet serving certificate request"`, `"csr"="`+csr.Name+`"`),
			"each decision is logged, through the context's logger: %s in %q", csr.Name, lines())
	}
}
