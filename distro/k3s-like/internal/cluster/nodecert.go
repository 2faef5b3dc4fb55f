package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// NodeClient is what an agent's kubelet needs for its client certificate:
// the node's name and password, the kubelet's certificate directory
// (--cert-dir) and kubeconfig, and the server and CA that kubeconfig names.
type NodeClient struct {
	Node, Password      string
	CertDir, Kubeconfig string
	Server, CAFile      string
}

// nodeClientRenewBefore: a certificate with less than this left is
// requested again at the agent's start, before the kubelet could need it.
const nodeClientRenewBefore = 10 * time.Minute

// NodeClientCertError is a node client certificate the server refused (a
// node name held by another node's password, among others).
type NodeClientCertError struct {
	Node string
	Err  error
}

// Example: the server refused a client certificate for node node-a: …
func (e *NodeClientCertError) Error() string {
	return fmt.Sprintf("the server refused a client certificate for node %s: %v", e.Node, e.Err)
}

func (e *NodeClientCertError) Unwrap() error { return e.Err }

// Ensure makes sure the kubelet has a client certificate for
// system:node:NODE, as the kubelet's own TLS bootstrap would, but with the
// node password: unless the kubeconfig exists and the kubelet's current
// certificate (kubelet-client-current.pem in CertDir) is one for the node
// valid for 10 more minutes, it asks for one with client, a bootstrap
// token's client, by a CSR that carries the node password's proof
// (ProveNodePassword), waits until ctx ends for the server's decision, and
// writes the certificate and its key to the kubelet's certificate store
// and the kubeconfig that points at them. A denied request is a
// *NodeClientCertError with the server's reason. The kubelet renews the
// certificate itself (as the node).
func (n NodeClient) Ensure(ctx context.Context, log logr.Logger, client kubernetes.Interface) error {
	store, err := certificate.NewFileStore("kubelet-client", n.CertDir, n.CertDir, "", "")
	if err != nil {
		return fmt.Errorf("the kubelet's certificate directory %s: %w", n.CertDir, err)
	}
	if n.valid(store) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + n.Node, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		return err
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	proof, err := ProveNodePassword(n.Password, n.Node, request)
	if err != nil {
		return err
	}
	req, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-", Annotations: map[string]string{NodePasswordProofAnnotation: proof}},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: request, SignerName: certificatesv1.KubeAPIServerClientKubeletSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("asking for node %s's client certificate: %w", n.Node, err)
	}
	log.Info("Asked for the node's client certificate with its node password", "node", n.Node, "csr", req.Name)
	certPEM, err := csr.WaitForCertificate(ctx, client, req.Name, req.UID)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("node %s's client certificate (CSR %s): stopped before the server decided", n.Node, req.Name)
		}
		return &NodeClientCertError{Node: n.Node, Err: err}
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if _, err := store.Update(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
		return fmt.Errorf("writing node %s's client certificate: %w", n.Node, err)
	}
	return n.writeKubeconfig(store.CurrentPath())
}

// valid reports whether the kubeconfig exists and the store holds a
// certificate for the node with nodeClientRenewBefore left.
func (n NodeClient) valid(store certificate.FileStore) bool {
	if _, err := os.Stat(n.Kubeconfig); err != nil {
		return false
	}
	c, err := store.Current()
	if err != nil || c.Leaf == nil {
		return false
	}
	return c.Leaf.Subject.CommonName == "system:node:"+n.Node && time.Until(c.Leaf.NotAfter) > nodeClientRenewBefore
}

// writeKubeconfig writes the kubelet's kubeconfig (0600): the server, its
// CA, and the certificate and key in pem.
func (n NodeClient) writeKubeconfig(pem string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: n.Server, CertificateAuthority: n.CAFile}
	kc.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificate: pem, ClientKey: pem}
	kc.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	kc.CurrentContext = "default-context"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(n.Kubeconfig), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(n.Kubeconfig, b, 0o600)
}
