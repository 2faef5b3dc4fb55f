package pki

import (
	"errors"
	"fmt"
	"net"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Config says what Ensure makes the control plane's PKI for.
type Config struct {
	// Dir is the PKI directory; it is created 0700 if missing.
	Dir string
	// APIServerURL is the server the kubeconfigs point at, e.g.
	// https://127.0.0.1:6443. Kubeconfigs are rewritten on every Ensure,
	// so a changed port is picked up.
	APIServerURL string
	// ServingIPs and ServingDNSNames are added to the apiserver serving
	// certificate's default names: 127.0.0.1, ServiceIP, localhost,
	// kubernetes, kubernetes.default, kubernetes.default.svc and
	// kubernetes.default.svc.<ClusterDomain>.
	ServingIPs      []net.IP
	ServingDNSNames []string
	// ServiceIP is the apiserver's service IP, the first address of
	// --service-cluster-ip-range; default 10.0.0.1 (upstream's default range
	// 10.0.0.0/24).
	ServiceIP net.IP
	// ClusterDomain defaults to cluster.local.
	ClusterDomain string
	// EtcdIPs and EtcdDNSNames are added to the etcd serving certificate's
	// defaults, 127.0.0.1 and localhost.
	EtcdIPs      []net.IP
	EtcdDNSNames []string
}

// Files is the control plane's PKI, as files in Config.Dir, where Layout
// says.
type Files struct {
	Dir string

	// ServerCA signs the apiserver's serving certificate; clients trust it.
	ServerCA *CA
	// ClientCA signs client certificates (--client-ca-file) and is the
	// controller-manager's cluster signer.
	ClientCA *CA
	// RequestHeaderCA signs the front-proxy client certificate
	// (--requestheader-client-ca-file).
	RequestHeaderCA *CA
	// EtcdCA signs etcd's serving certificate and its clients'.
	EtcdCA *CA
	// KubeletServingCA signs the kubelets' serving certificates only.
	KubeletServingCA *CA

	// APIServerServing is the apiserver's serving certificate.
	APIServerServing *Pair
	// APIServerKubeletClient is the apiserver's client certificate towards
	// kubelets (--kubelet-client-certificate), in KubeletAPIAdminGroup.
	APIServerKubeletClient *Pair
	// APIServerEtcdClient is the apiserver's client certificate towards etcd.
	APIServerEtcdClient *Pair
	// FrontProxyClient is the apiserver's front-proxy client certificate
	// (--proxy-client-cert-file), CN front-proxy-client.
	FrontProxyClient *Pair
	// EtcdServer is etcd's serving certificate.
	EtcdServer *Pair

	// Admin (O=system:masters), Scheduler (CN=system:kube-scheduler) and
	// ControllerManager (CN=system:kube-controller-manager) are client
	// certificates signed by ClientCA.
	Admin, Scheduler, ControllerManager *Pair
	// KubeletServingApprover is the approver of kubelet serving
	// certificate requests (CN KubeletServingApproverUser, no group).
	KubeletServingApprover *Pair
	// FeaturePublisher is the feature publisher's and summarizer's (CN
	// FeaturePublisherUser, no group).
	FeaturePublisher *Pair
	// Deployer is the manifest deployer's (CN DeployerUser, no group).
	Deployer *Pair

	// ServiceAccountKey and ServiceAccountPub are the service-account
	// signing key pair (PEM private key 0600, PEM public key).
	ServiceAccountKey, ServiceAccountPub string

	// Kubeconfigs for the admin, the scheduler and the controller-manager,
	// with the CA and the client certificate embedded (no file references,
	// so client-go starts no certificate-reloading goroutine), 0600.
	AdminKubeconfig, SchedulerKubeconfig, ControllerManagerKubeconfig string
	// KubeletServingApproverKubeconfig is the approver's kubeconfig.
	KubeletServingApproverKubeconfig string
	// FeaturePublisherKubeconfig is the feature publisher's kubeconfig.
	FeaturePublisherKubeconfig string
	// DeployerKubeconfig is the manifest deployer's kubeconfig.
	DeployerKubeconfig string
}

// Layout is where f's files are.
func (f *Files) Layout() Layout { return Layout{Dir: f.Dir} }

// FrontProxyClientName is the CN of the front-proxy client certificate,
// for --requestheader-allowed-names.
const FrontProxyClientName = "front-proxy-client"

// KubeletServingCAName is the common name of the kubelet serving CA.
const KubeletServingCAName = "kubeharness-kubelet-serving-ca"

// KubeletAPIAdminGroup is the group of the apiserver's client certificate
// towards kubelets: bind upstream's ClusterRole system:kubelet-api-admin
// to it (the kubelets authorize the apiserver by that role, not by
// system:masters).
const KubeletAPIAdminGroup = "kubeharness:kubelet-api-admin"

// KubeletServingApproverUser is the user of the KubeletServingApprover
// certificate: bind it a role to read Nodes and certificate requests and
// to approve for the kubernetes.io/kubelet-serving signer.
const KubeletServingApproverUser = "kubeharness:kubelet-serving-approver"

// FeaturePublisherUser is the user of the FeaturePublisher certificate:
// bind it featurepub.ServerRules.
const FeaturePublisherUser = "kubeharness:feature-publisher"

// DeployerUser is the user of the Deployer certificate, the manifest
// deployer's: not system:masters, so RBAC decides what it may do (bind it
// cluster-admin: it applies whatever manifest the server's root wrote) and
// a binding taken away revokes it.
const DeployerUser = "kubeharness:manifest-deployer"

// Ensure creates what is missing in cfg.Dir and reuses what is there (see
// the package documentation), and returns the files.
func Ensure(cfg Config) (*Files, error) {
	if cfg.Dir == "" {
		return nil, errors.New("pki: Config.Dir is empty")
	}
	if cfg.APIServerURL == "" {
		return nil, errors.New("pki: Config.APIServerURL is empty")
	}
	if cfg.ServiceIP == nil {
		cfg.ServiceIP = net.IPv4(10, 0, 0, 1)
	}
	if cfg.ClusterDomain == "" {
		cfg.ClusterDomain = "cluster.local"
	}
	l := Layout{Dir: cfg.Dir}
	f := &Files{Dir: cfg.Dir}
	var err error
	for _, ca := range []struct {
		dst   **CA
		files CertKey
		cn    string
	}{
		{&f.ServerCA, l.ServerCA(), "kubeharness-server-ca"},
		{&f.ClientCA, l.ClientCA(), "kubeharness-client-ca"},
		{&f.RequestHeaderCA, l.RequestHeaderCA(), "kubeharness-request-header-ca"},
		{&f.EtcdCA, l.EtcdCA(), "kubeharness-etcd-ca"},
		{&f.KubeletServingCA, l.KubeletServingCA(), KubeletServingCAName},
	} {
		if *ca.dst, err = LoadOrCreateCA(ca.files.CertFile, ca.files.KeyFile, ca.cn); err != nil {
			return nil, err
		}
	}

	loopback := net.IPv4(127, 0, 0, 1)
	servingIPs := uniqIPs(append([]net.IP{loopback, cfg.ServiceIP}, cfg.ServingIPs...))
	servingDNS := uniq(append([]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + cfg.ClusterDomain}, cfg.ServingDNSNames...))
	etcdIPs := uniqIPs(append([]net.IP{loopback}, cfg.EtcdIPs...))
	etcdDNS := uniq(append([]string{"localhost"}, cfg.EtcdDNSNames...))

	for _, leaf := range []struct {
		dst   **Pair
		ca    *CA
		files CertKey
		leaf  Leaf
	}{
		{&f.APIServerServing, f.ServerCA, l.APIServerServing(), Leaf{CommonName: "kube-apiserver", DNSNames: servingDNS, IPs: servingIPs, Server: true, Chain: true}},
		{&f.APIServerKubeletClient, f.ClientCA, l.APIServerKubeletClient(), Leaf{CommonName: "system:kube-apiserver", Organization: []string{KubeletAPIAdminGroup}, Client: true}},
		{&f.FrontProxyClient, f.RequestHeaderCA, l.FrontProxyClient(), Leaf{CommonName: FrontProxyClientName, Client: true}},
		{&f.Admin, f.ClientCA, l.Admin(), Leaf{CommonName: "system:admin", Organization: []string{"system:masters"}, Client: true}},
		{&f.Scheduler, f.ClientCA, l.Scheduler(), Leaf{CommonName: "system:kube-scheduler", Client: true}},
		{&f.ControllerManager, f.ClientCA, l.ControllerManager(), Leaf{CommonName: "system:kube-controller-manager", Client: true}},
		{&f.KubeletServingApprover, f.ClientCA, l.KubeletServingApprover(), Leaf{CommonName: KubeletServingApproverUser, Client: true}},
		{&f.FeaturePublisher, f.ClientCA, l.FeaturePublisher(), Leaf{CommonName: FeaturePublisherUser, Client: true}},
		{&f.Deployer, f.ClientCA, l.Deployer(), Leaf{CommonName: DeployerUser, Client: true}},
		{&f.EtcdServer, f.EtcdCA, l.EtcdServer(), Leaf{CommonName: "etcd", DNSNames: etcdDNS, IPs: etcdIPs, Server: true, Client: true}},
		{&f.APIServerEtcdClient, f.EtcdCA, l.APIServerEtcdClient(), Leaf{CommonName: "kube-apiserver-etcd-client", Client: true}},
	} {
		if *leaf.dst, err = leaf.ca.Ensure(leaf.files.CertFile, leaf.files.KeyFile, leaf.leaf); err != nil {
			return nil, err
		}
	}

	f.ServiceAccountKey, f.ServiceAccountPub = l.ServiceAccountKey(), l.ServiceAccountPub()
	if err := EnsureKeyPair(f.ServiceAccountKey, f.ServiceAccountPub); err != nil {
		return nil, err
	}

	f.AdminKubeconfig = l.AdminKubeconfig()
	f.SchedulerKubeconfig = l.SchedulerKubeconfig()
	f.ControllerManagerKubeconfig = l.ControllerManagerKubeconfig()
	f.KubeletServingApproverKubeconfig = l.KubeletServingApproverKubeconfig()
	f.FeaturePublisherKubeconfig = l.FeaturePublisherKubeconfig()
	f.DeployerKubeconfig = l.DeployerKubeconfig()
	for path, p := range map[string]*Pair{f.AdminKubeconfig: f.Admin, f.SchedulerKubeconfig: f.Scheduler, f.ControllerManagerKubeconfig: f.ControllerManager,
		f.KubeletServingApproverKubeconfig: f.KubeletServingApprover, f.FeaturePublisherKubeconfig: f.FeaturePublisher,
		f.DeployerKubeconfig: f.Deployer} {
		if err := WriteKubeconfig(path, cfg.APIServerURL, f.ServerCA.CertPEM(), p); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// WriteKubeconfig writes a kubeconfig (mode 0600) for server, trusting caPEM
// and authenticating with client, all embedded as data.
func WriteKubeconfig(path, server string, caPEM []byte, client *Pair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: client.CertPEM, ClientKeyData: client.KeyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("pki: kubeconfig %s: %w", path, err)
	}
	return writeFile(path, b, 0o600)
}

func uniq(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func uniqIPs(ips []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range ips {
		if ip != nil && !slices.ContainsFunc(out, ip.Equal) {
			out = append(out, ip)
		}
	}
	return out
}
