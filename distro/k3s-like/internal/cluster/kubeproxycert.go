package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/components/pki"
)

// KubeProxyClient is what an agent's kube-proxy needs for an identity of
// its own (pki.KubeProxyUser, which upstream's ClusterRoleBinding
// system:node-proxier binds system:node-proxier), not its kubelet's: the
// node's name, where its certificate, key and kubeconfig go
// (pki.NodeLayout.KubeProxy, KubeProxyKubeconfig), and the server and CA
// that kubeconfig names.
type KubeProxyClient struct {
	Node                          string
	CertFile, KeyFile, Kubeconfig string
	Server, CAFile                string
}

// kubeProxyRenewBefore: a kube-proxy certificate with less than this left
// is requested again at the agent's start (kube-proxy does not renew it;
// the controller-manager signs for a year).
const kubeProxyRenewBefore = 30 * 24 * time.Hour

// Ensure makes sure the node's kube-proxy has its client certificate:
// unless the kubeconfig exists and the certificate is pki.KubeProxyUser's,
// matches its key and has kubeProxyRenewBefore left, it asks for one with
// client, the node's own (system:node:NODE), by a CSR of the
// kubernetes.io/kube-apiserver-client signer that NodeClientApprover
// approves (ReviewKubeProxyClient), waits until ctx ends, and writes the
// key (0600), the certificate and the kubeconfig (0600).
func (k KubeProxyClient) Ensure(ctx context.Context, log logr.Logger, client kubernetes.Interface) error {
	if k.valid() {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: pki.KubeProxyUser}}, key)
	if err != nil {
		return err
	}
	req, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kube-proxy-csr-"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking for node %s's kube-proxy client certificate: %w", k.Node, err)
	}
	log.Info("Asked for the node's kube-proxy client certificate", "node", k.Node, "csr", req.Name)
	certPEM, err := csr.WaitForCertificate(ctx, client, req.Name, req.UID)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("node %s's kube-proxy client certificate (CSR %s): stopped before the server decided", k.Node, req.Name)
		}
		return fmt.Errorf("node %s's kube-proxy client certificate (CSR %s): %w", k.Node, req.Name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(k.CAFile)
	if err != nil {
		return err
	}
	pair := &pki.Pair{CertFile: k.CertFile, KeyFile: k.KeyFile, CertPEM: certPEM, KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
	if err := pki.WritePair(pair); err != nil {
		return fmt.Errorf("writing node %s's kube-proxy client certificate: %w", k.Node, err)
	}
	return pki.WriteKubeconfig(k.Kubeconfig, k.Server, caPEM, pair)
}

// valid reports whether the kubeconfig exists and the certificate is
// kube-proxy's, matches its key, and has kubeProxyRenewBefore left.
func (k KubeProxyClient) valid() bool {
	if _, err := os.Stat(k.Kubeconfig); err != nil {
		return false
	}
	c, err := tls.LoadX509KeyPair(k.CertFile, k.KeyFile)
	if err != nil || c.Leaf == nil {
		return false
	}
	return c.Leaf.Subject.CommonName == pki.KubeProxyUser && len(c.Leaf.Subject.Organization) == 0 &&
		time.Until(c.Leaf.NotAfter) > kubeProxyRenewBefore
}

// ReviewKubeProxyClient decides on a node's request for its kube-proxy's
// client certificate: Wait for a request that is not a node's
// (system:node:NAME in system:nodes) for the
// kubernetes.io/kube-apiserver-client signer, someone else's to decide;
// Approve for exactly CN=system:kube-proxy, no organization, no DNS, IP,
// e-mail or URI name, usages client auth with digital signature and key
// encipherment; Deny anything else a node asks for, with the reason. A
// node gains nothing by it: system:node-proxier reads less than a node
// may.
func ReviewKubeProxyClient(r *certificatesv1.CertificateSigningRequest) (approvers.Verdict, string) {
	if r.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName ||
		!strings.HasPrefix(r.Spec.Username, "system:node:") || !slices.Contains(r.Spec.Groups, pki.NodesGroup) {
		return approvers.Wait, "not a node's kube-apiserver-client request"
	}
	block, _ := pem.Decode(r.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return approvers.Deny, "spec.request is not a PEM CERTIFICATE REQUEST"
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return approvers.Deny, fmt.Sprintf("spec.request: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return approvers.Deny, fmt.Sprintf("spec.request: %v", err)
	}
	if req.Subject.CommonName != pki.KubeProxyUser || len(req.Subject.Organization) > 0 {
		return approvers.Deny, fmt.Sprintf("subject CN=%q O=%v: a node may ask only for its kube-proxy's, CN=%s with no organization", req.Subject.CommonName, req.Subject.Organization, pki.KubeProxyUser)
	}
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return approvers.Deny, "a kube-proxy client certificate has no DNS, IP, e-mail or URI names"
	}
	for _, u := range r.Spec.Usages {
		switch u {
		case certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return approvers.Deny, fmt.Sprintf("usage %q: a kube-proxy client certificate has client auth, digital signature and key encipherment only", u)
		}
	}
	if !slices.Contains(r.Spec.Usages, certificatesv1.UsageClientAuth) {
		return approvers.Deny, "no client auth usage"
	}
	return approvers.Approve, fmt.Sprintf("node %s's kube-proxy (%s)", strings.TrimPrefix(r.Spec.Username, "system:node:"), pki.KubeProxyUser)
}
