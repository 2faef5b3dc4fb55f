package approvers

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// ServingApproverName is the approver's component name in the harness.
const ServingApproverName = "kubelet-serving-approver"

// ServingApprover is a server's harness component that approves the
// kubelets' serving certificate requests (signer
// kubernetes.io/kubelet-serving, the kubelet's serverTLSBootstrap), which
// upstream's controller-manager signs but never approves. It approves a
// request only as ReviewServing allows; it denies one that can never be
// valid and leaves pending one whose Node does not (yet) list its
// addresses, denying it after PendingLimit. It never fails the harness.
// It logs each decision through the logger in Run's context
// (klog.FromContext).
type ServingApprover struct {
	// Kubeconfig is the approver's own kubeconfig (pki's
	// KubeletServingApprover identity, with a role to read Nodes and
	// requests and to approve for the kubelet-serving signer).
	Kubeconfig string
	// Resync is how often every pending request is looked at again; 0
	// means 30 s.
	Resync time.Duration
	// PendingLimit is how long a request whose addresses no Node lists
	// stays pending before it is denied; 0 means 10 minutes.
	PendingLimit time.Duration
}

var (
	_ harness.Component = (*ServingApprover)(nil)
	_ harness.Readier   = (*ServingApprover)(nil)
	_ harness.Renewer   = (*ServingApprover)(nil)
)

// Name returns ServingApproverName.
func (a *ServingApprover) Name() string { return ServingApproverName }

// AddFlags adds no flags.
func (a *ServingApprover) AddFlags(*scoping.Scope) error { return nil }

// Ready returns nil at once: a kubelet waits for its certificate itself.
func (a *ServingApprover) Ready(context.Context) error { return nil }

// Renew is harness.Renewer's: a new, unstarted approver with the same
// settings.
func (a *ServingApprover) Renew() harness.Component {
	return &ServingApprover{Kubeconfig: a.Kubeconfig, Resync: a.Resync, PendingLimit: a.PendingLimit}
}

// Run reviews requests until ctx ends; it always returns nil (a client
// that cannot be made is logged, and the component idles).
func (a *ServingApprover) Run(ctx context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
	if err == nil {
		cfg.UserAgent = "kubeharness-" + ServingApproverName
	}
	var client kubernetes.Interface
	if err == nil {
		client, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "No client; approving nothing", "kubeconfig", a.Kubeconfig)
		<-ctx.Done()
		return nil
	}
	return a.run(ctx, client)
}

func (a *ServingApprover) run(ctx context.Context, client kubernetes.Interface) error {
	limit := a.PendingLimit
	if limit <= 0 {
		limit = 10 * time.Minute
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	nodes := factory.Core().V1().Nodes().Informer()
	factory.Start(ctx.Done())
	return Review(ctx, client, certificatesv1.KubeletServingSignerName, a.Resync, []cache.SharedIndexInformer{nodes},
		func(pending []*certificatesv1.CertificateSigningRequest) {
			var all []*corev1.Node
			for _, o := range nodes.GetStore().List() {
				all = append(all, o.(*corev1.Node))
			}
			for _, csr := range pending {
				a.decide(ctx, client, csr, all, limit)
			}
		})
}

// Review calls decide with the requests of signer not yet approved,
// denied or failed (Decided), once its informer and those of also
// (started by the caller) have synced, again on every change to any of
// them, and every resync (0 means 30 s), until ctx ends; it returns nil
// then, or the error of adding an event handler.
func Review(ctx context.Context, client kubernetes.Interface, signer string, resync time.Duration, also []cache.SharedIndexInformer,
	decide func(pending []*certificatesv1.CertificateSigningRequest)) error {
	if resync <= 0 {
		resync = 30 * time.Second
	}
	csrFactory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.signerName", signer).String()
	}))
	defer csrFactory.Shutdown()
	dirty := make(chan struct{}, 1)
	mark := func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: func(any) { mark() }, UpdateFunc: func(any, any) { mark() }}
	csrs := csrFactory.Certificates().V1().CertificateSigningRequests().Informer()
	synced := []cache.InformerSynced{csrs.HasSynced}
	for _, inf := range append([]cache.SharedIndexInformer{csrs}, also...) {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
	}
	csrFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	tick := time.NewTicker(resync)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-dirty:
		case <-tick.C:
		}
		var pending []*certificatesv1.CertificateSigningRequest
		for _, o := range csrs.GetStore().List() {
			if csr := o.(*certificatesv1.CertificateSigningRequest); !Decided(csr) {
				pending = append(pending, csr)
			}
		}
		decide(pending)
	}
}

// decide approves or denies csr as ReviewServing says; an error is logged
// and the request looked at again on the next change or resync.
func (a *ServingApprover) decide(ctx context.Context, client kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, nodes []*corev1.Node, limit time.Duration) {
	verdict, reason := ReviewServing(csr, nodes)
	cond := certificatesv1.CertificateSigningRequestCondition{Status: corev1.ConditionTrue, Message: reason}
	switch verdict {
	case Approve:
		cond.Type, cond.Reason = certificatesv1.CertificateApproved, "KubeletServingApproved"
	case Deny:
		cond.Type, cond.Reason = certificatesv1.CertificateDenied, "KubeletServingDenied"
	default:
		if time.Since(csr.CreationTimestamp.Time) < limit {
			return
		}
		cond.Type, cond.Reason = certificatesv1.CertificateDenied, "KubeletServingDenied"
		cond.Message = fmt.Sprintf("pending for more than %s: %s", limit, reason)
	}
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, cond)
	logger := klog.FromContext(ctx).WithValues("csr", csr.Name, "decision", cond.Type)
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, upd.Name, upd, metav1.UpdateOptions{}); err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Recording the decision on a kubelet serving certificate request")
		}
		return
	}
	logger.Info("Decided on a kubelet serving certificate request", "user", csr.Spec.Username, "reason", cond.Message)
}

// Decided reports whether csr was approved, denied or failed.
func Decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied || c.Type == certificatesv1.CertificateFailed {
			return true
		}
	}
	return false
}

// Verdict is ReviewServing's answer.
type Verdict int

const (
	// Wait leaves the request pending: its Node does not (yet) list every
	// address it asks for.
	Wait Verdict = iota
	// Approve approves it.
	Approve
	// Deny denies it: nothing can make it valid.
	Deny
)

// ReviewServing decides on a kubelet-serving request, as a kubelet with
// serverTLSBootstrap makes it: the requester is system:node:NAME in
// system:nodes, the subject is that user in O=system:nodes, the usages are
// server auth (with digital signature and key encipherment), there is no
// e-mail or URI name, every DNS name is NAME or a host name Node NAME
// lists, and every IP is one of Node NAME's addresses that no other Node
// lists. The reason says why, naming the field and value.
func ReviewServing(csr *certificatesv1.CertificateSigningRequest, nodes []*corev1.Node) (Verdict, string) {
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		return Deny, fmt.Sprintf("signer %q is not %s", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	name, ok := strings.CutPrefix(csr.Spec.Username, "system:node:")
	if !ok || name == "" || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return Deny, fmt.Sprintf("requested by %q (groups %v), not by a node's credential (system:node:NAME in system:nodes)", csr.Spec.Username, csr.Spec.Groups)
	}
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return Deny, fmt.Sprintf("usage %q: a kubelet's serving certificate has server auth, digital signature and key encipherment only", u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certificatesv1.UsageServerAuth) {
		return Deny, "no server auth usage"
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return Deny, "spec.request is not a PEM CERTIFICATE REQUEST"
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return Deny, fmt.Sprintf("spec.request: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return Deny, fmt.Sprintf("spec.request: %v", err)
	}
	if req.Subject.CommonName != csr.Spec.Username || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return Deny, fmt.Sprintf("subject CN=%q O=%v: want CN=%q O=[system:nodes]", req.Subject.CommonName, req.Subject.Organization, csr.Spec.Username)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return Deny, "e-mail or URI names: a kubelet's serving certificate has DNS names and IPs only"
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return Deny, "no DNS name or IP"
	}
	var self *corev1.Node
	claimed := map[string]string{} // IP → the other node that lists it
	for _, n := range nodes {
		if n.Name == name {
			self = n
			continue
		}
		for _, addr := range n.Status.Addresses {
			if addr.Type == corev1.NodeInternalIP || addr.Type == corev1.NodeExternalIP {
				claimed[canonicalIP(addr.Address)] = n.Name
			}
		}
	}
	for _, ip := range req.IPAddresses {
		if other, ok := claimed[ip.String()]; ok {
			return Deny, fmt.Sprintf("IP %s is node %s's address", ip, other)
		}
	}
	if self == nil {
		return Wait, fmt.Sprintf("no Node %s yet", name)
	}
	hosts, ips := map[string]bool{name: true}, map[string]bool{}
	for _, addr := range self.Status.Addresses {
		switch addr.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			hosts[addr.Address] = true
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			ips[canonicalIP(addr.Address)] = true
		}
	}
	for _, d := range req.DNSNames {
		if !hosts[d] {
			return Wait, fmt.Sprintf("DNS name %q is not a host name of Node %s", d, name)
		}
	}
	for _, ip := range req.IPAddresses {
		if !ips[ip.String()] {
			return Wait, fmt.Sprintf("IP %s is not an address of Node %s", ip, name)
		}
	}
	return Approve, fmt.Sprintf("the serving certificate of node %s for its own names and addresses", name)
}

func canonicalIP(s string) string {
	if ip := net.ParseIP(s); ip != nil {
		return ip.String()
	}
	return s
}

// ServingApproverRules are the permissions a ServingApprover uses, and no
// more: read Nodes and certificate requests, and approve or deny for the
// kubelet-serving signer only. Bind them to the identity in its
// Kubeconfig.
func ServingApproverRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
		{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{certificatesv1.KubeletServingSignerName}, Verbs: []string{"approve"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
	}
}
