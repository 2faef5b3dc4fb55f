package cluster

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/approvers"
	"github.com/kubeharness/kubeharness/harness"
)

// NodeClientApproverName is the harness component that approves
// bootstrapping nodes' client certificates.
const NodeClientApproverName = "node-client-approver"

// NodeClientApprover approves the client certificate requests of
// bootstrapping nodes (signer kubernetes.io/kube-apiserver-client-kubelet,
// requested with a bootstrap token), which no one else approves: the
// controller-manager approves only a node's renewal of its own
// certificate (selfnodeclient). It approves a request only with a valid
// node password proof (ReviewNodeClient), once the node's name is claimed
// for that password (EnsureNodePasswordSecret), and denies every other
// such request with the reason. Requests of other signers or requesters
// are left alone.
type NodeClientApprover struct {
	AdminKubeconfig string
	// Resync is how often every pending request is looked at again; 0
	// means 30 s.
	Resync time.Duration
}

// Add adds the approver to h, after the node-join component (which claims
// the server's own node name first and removes the controller-manager's
// automatic approval of bootstrap requests).
func (a NodeClientApprover) Add(h *harness.Harness) error {
	return h.Add(&harness.Func{ComponentName: NodeClientApproverName, RunFunc: func(ctx context.Context) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", a.AdminKubeconfig)
		if err != nil {
			return err
		}
		cfg.UserAgent = "k3s-like-" + NodeClientApproverName
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		return a.run(ctx, client)
	}}, nil, NodeJoinName)
}

// run reviews requests until ctx ends: bootstrapping nodes' client
// certificates, and nodes' requests for their kube-proxy's
// (ReviewKubeProxyClient).
func (a NodeClientApprover) run(ctx context.Context, client kubernetes.Interface) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return approvers.Review(ctx, client, certificatesv1.KubeAPIServerClientKubeletSignerName, a.Resync, nil,
			func(pending []*certificatesv1.CertificateSigningRequest) {
				for _, csr := range pending {
					decideNodeClient(ctx, client, csr)
				}
			})
	})
	g.Go(func() error {
		return approvers.Review(ctx, client, certificatesv1.KubeAPIServerClientSignerName, a.Resync, nil,
			func(pending []*certificatesv1.CertificateSigningRequest) {
				for _, csr := range pending {
					verdict, reason := ReviewKubeProxyClient(csr)
					if verdict != approvers.Wait {
						logger := klog.FromContext(ctx).WithValues("csr", csr.Name, "user", csr.Spec.Username, "signer", csr.Spec.SignerName)
						decide(ctx, logger, client, csr, verdict == approvers.Approve, "KubeProxyClient", reason)
					}
				}
			})
	})
	return g.Wait()
}

// decideNodeClient approves or denies csr as ReviewNodeClient and the
// node's password Secret say; an error is logged and the request looked
// at again on the next change or resync.
func decideNodeClient(ctx context.Context, client kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest) {
	verdict, node, pub, reason := ReviewNodeClient(csr)
	if verdict == approvers.Wait {
		return // not a bootstrapping node's request
	}
	logger := klog.FromContext(ctx).WithValues("csr", csr.Name, "user", csr.Spec.Username, "node", node)
	if verdict == approvers.Approve {
		err := EnsureNodePasswordSecret(ctx, client, node, pub)
		var pe *NodePasswordError
		switch {
		case errors.As(err, &pe):
			verdict, reason = approvers.Deny, err.Error()
		case err != nil:
			if ctx.Err() == nil {
				logger.Error(err, "Checking a node's password; retrying")
			}
			return
		default:
			reason = "the node presented the password its name is claimed with"
		}
	}
	decide(ctx, logger, client, csr, verdict == approvers.Approve, "NodePassword", reason)
}

// decide records the decision on csr: approved (reason why+"Verified") or
// denied (why+"Rejected"), with the message reason, logged to logger; an
// error is logged and the request looked at again on the next change or
// resync.
func decide(ctx context.Context, logger klog.Logger, client kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, approve bool, why, reason string) {
	cond := certificatesv1.CertificateSigningRequestCondition{Status: corev1.ConditionTrue, Message: reason,
		Type: certificatesv1.CertificateApproved, Reason: why + "Verified"}
	if !approve {
		cond.Type, cond.Reason = certificatesv1.CertificateDenied, why+"Rejected"
	}
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, cond)
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, upd.Name, upd, metav1.UpdateOptions{}); err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Recording the decision on a client certificate request")
		}
		return
	}
	logger.Info("Decided on a client certificate request", "decision", cond.Type, "reason", reason)
}

// ReviewNodeClient decides on a request for a node client certificate by
// a bootstrapping node: Wait (not such a request: another signer, or a
// requester that is not a bootstrap token, such as a node renewing its
// own), Deny with the reason, or Approve for node with the public key of
// the node password it proved, which the caller must still match against
// the node's password Secret. The requester is system:bootstrap:ID in
// system:bootstrappers; the subject CN=system:node:NODE O=system:nodes with
// no other name; the usages client auth with digital signature and key
// encipherment; and the annotation NodePasswordProofAnnotation a signature
// of the request by the node password's key.
func ReviewNodeClient(csr *certificatesv1.CertificateSigningRequest) (verdict approvers.Verdict, node string, pub ed25519.PublicKey, reason string) {
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
		!strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") || !slices.Contains(csr.Spec.Groups, "system:bootstrappers") {
		return approvers.Wait, "", nil, "not a bootstrapping node's client certificate request"
	}
	deny := func(format string, args ...any) (approvers.Verdict, string, ed25519.PublicKey, string) {
		return approvers.Deny, node, nil, fmt.Sprintf(format, args...)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return deny("spec.request is not a PEM CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return deny("spec.request: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return deny("spec.request: %v", err)
	}
	name, ok := strings.CutPrefix(req.Subject.CommonName, "system:node:")
	if !ok || name == "" || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return deny("subject CN=%q O=%v: want CN=system:node:NODE O=[system:nodes]", req.Subject.CommonName, req.Subject.Organization)
	}
	node = name
	if len(req.DNSNames)+len(req.IPAddresses)+len(req.EmailAddresses)+len(req.URIs) > 0 {
		return deny("a node client certificate has no DNS, IP, e-mail or URI names")
	}
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return deny("usage %q: a node client certificate has client auth, digital signature and key encipherment only", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageClientAuth) {
		return deny("no client auth usage")
	}
	pub, err = verifyProof(csr.Annotations[NodePasswordProofAnnotation], node, csr.Spec.Request)
	if err != nil {
		return deny("node %s: %v", node, err)
	}
	return approvers.Approve, node, pub, ""
}
