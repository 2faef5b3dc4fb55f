package pki

import "path/filepath"

// Layout is where a control plane's PKI lives: the path of every
// certificate, key and kubeconfig Ensure makes in Dir. Its paths are known
// before the files exist, so a binary can put them in the components' flags
// (package controlplane) before Ensure runs, or without it. The zero Layout
// gives the paths relative to the PKI directory.
type Layout struct {
	Dir string
}

// CertKey is the paths of a certificate and its private key.
type CertKey struct {
	CertFile, KeyFile string
}

func (l Layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.Dir}, elem...)...)
}

func (l Layout) certKey(elem ...string) CertKey {
	name := l.path(elem...)
	return CertKey{CertFile: name + ".crt", KeyFile: name + ".key"}
}

// ServerCA signs the apiserver's serving certificate; clients trust it
// (the controller-manager's --root-ca-file).
func (l Layout) ServerCA() CertKey { return l.certKey("server-ca") }

// ClientCA signs the client certificates (--client-ca-file) and is the
// controller-manager's cluster signer.
func (l Layout) ClientCA() CertKey { return l.certKey("client-ca") }

// RequestHeaderCA signs the front-proxy client certificate
// (--requestheader-client-ca-file).
func (l Layout) RequestHeaderCA() CertKey { return l.certKey("request-header-ca") }

// KubeletServingCA signs the kubelets' serving certificates (the
// controller-manager's kubernetes.io/kubelet-serving signer); the
// apiserver verifies kubelets against it (--kubelet-certificate-authority).
// It signs nothing else, so a kubelet's certificate is never one a client
// of the apiserver would trust.
func (l Layout) KubeletServingCA() CertKey { return l.certKey("kubelet-serving-ca") }

// EtcdCA signs etcd's serving certificate and its clients'.
func (l Layout) EtcdCA() CertKey { return l.certKey("etcd", "ca") }

// APIServerServing is the apiserver's serving certificate.
func (l Layout) APIServerServing() CertKey { return l.certKey("serving-kube-apiserver") }

// APIServerKubeletClient is the apiserver's client certificate towards
// kubelets (--kubelet-client-certificate).
func (l Layout) APIServerKubeletClient() CertKey { return l.certKey("client-kube-apiserver") }

// APIServerEtcdClient is the apiserver's client certificate towards etcd
// (--etcd-certfile).
func (l Layout) APIServerEtcdClient() CertKey { return l.certKey("etcd", "client-kube-apiserver") }

// FrontProxyClient is the apiserver's front-proxy client certificate
// (--proxy-client-cert-file).
func (l Layout) FrontProxyClient() CertKey { return l.certKey("client-front-proxy") }

// EtcdServer is etcd's serving certificate.
func (l Layout) EtcdServer() CertKey { return l.certKey("etcd", "server") }

// Admin is the admin's client certificate (O=system:masters).
func (l Layout) Admin() CertKey { return l.certKey("client-admin") }

// Scheduler is kube-scheduler's client certificate.
func (l Layout) Scheduler() CertKey { return l.certKey("client-kube-scheduler") }

// ControllerManager is kube-controller-manager's client certificate.
func (l Layout) ControllerManager() CertKey { return l.certKey("client-kube-controller-manager") }

// KubeletServingApprover is the client certificate of the approver of
// kubelet serving certificate requests (CN KubeletServingApproverUser).
func (l Layout) KubeletServingApprover() CertKey { return l.certKey("client-kubelet-serving-approver") }

// KubeletServingApproverKubeconfig is that approver's kubeconfig (0600).
func (l Layout) KubeletServingApproverKubeconfig() string {
	return l.path("kubelet-serving-approver.kubeconfig")
}

// FeaturePublisher is the client certificate of the feature publisher and
// summarizer (CN FeaturePublisherUser).
func (l Layout) FeaturePublisher() CertKey { return l.certKey("client-feature-publisher") }

// FeaturePublisherKubeconfig is their kubeconfig (0600).
func (l Layout) FeaturePublisherKubeconfig() string { return l.path("feature-publisher.kubeconfig") }

// Deployer is the client certificate of the manifest deployer (CN
// DeployerUser).
func (l Layout) Deployer() CertKey { return l.certKey("client-manifest-deployer") }

// DeployerKubeconfig is its kubeconfig (0600).
func (l Layout) DeployerKubeconfig() string { return l.path("manifest-deployer.kubeconfig") }

// ServiceAccountKey is the service-account signing key (PEM, 0600).
func (l Layout) ServiceAccountKey() string { return l.path("service-account.key") }

// ServiceAccountPub is the service-account public key (PEM).
func (l Layout) ServiceAccountPub() string { return l.path("service-account.pub") }

// AdminKubeconfig is the admin's kubeconfig (0600).
func (l Layout) AdminKubeconfig() string { return l.path("admin.kubeconfig") }

// SchedulerKubeconfig is kube-scheduler's kubeconfig (0600).
func (l Layout) SchedulerKubeconfig() string { return l.path("kube-scheduler.kubeconfig") }

// ControllerManagerKubeconfig is kube-controller-manager's kubeconfig
// (0600).
func (l Layout) ControllerManagerKubeconfig() string {
	return l.path("kube-controller-manager.kubeconfig")
}

// ClusterFiles are the files every server of one cluster must share: the
// server, client, request-header and kubelet serving CAs (certificate and key) and the
// service-account key pair. Each server issues its own leaf certificates
// from these CAs. The etcd CA is not among them: the servers of one
// cluster share an external etcd, which has its own.
func (l Layout) ClusterFiles() []string {
	var out []string
	for _, ca := range []CertKey{l.ServerCA(), l.ClientCA(), l.RequestHeaderCA(), l.KubeletServingCA()} {
		out = append(out, ca.CertFile, ca.KeyFile)
	}
	return append(out, l.ServiceAccountKey(), l.ServiceAccountPub())
}
