package pki_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/pki"
)

// layoutPaths is every path of l, by accessor.
func layoutPaths(l pki.Layout) map[string]string {
	out := map[string]string{
		"ServiceAccountKey":                l.ServiceAccountKey(),
		"ServiceAccountPub":                l.ServiceAccountPub(),
		"AdminKubeconfig":                  l.AdminKubeconfig(),
		"SchedulerKubeconfig":              l.SchedulerKubeconfig(),
		"ControllerManagerKubeconfig":      l.ControllerManagerKubeconfig(),
		"KubeletServingApproverKubeconfig": l.KubeletServingApproverKubeconfig(),
		"FeaturePublisherKubeconfig":       l.FeaturePublisherKubeconfig(),
		"DeployerKubeconfig":               l.DeployerKubeconfig(),
	}
	for name, ck := range map[string]pki.CertKey{
		"ServerCA": l.ServerCA(), "ClientCA": l.ClientCA(), "RequestHeaderCA": l.RequestHeaderCA(), "EtcdCA": l.EtcdCA(),
		"KubeletServingCA": l.KubeletServingCA(), "KubeletServingApprover": l.KubeletServingApprover(),
		"FeaturePublisher": l.FeaturePublisher(), "Deployer": l.Deployer(),
		"APIServerServing": l.APIServerServing(), "APIServerKubeletClient": l.APIServerKubeletClient(),
		"APIServerEtcdClient": l.APIServerEtcdClient(), "FrontProxyClient": l.FrontProxyClient(), "EtcdServer": l.EtcdServer(),
		"Admin": l.Admin(), "Scheduler": l.Scheduler(), "ControllerManager": l.ControllerManager(),
	} {
		out[name+".cert"], out[name+".key"] = ck.CertFile, ck.KeyFile
	}
	return out
}

// TestLayoutPaths pins every file name: they are on disk in existing data
// dirs and, for ClusterFiles, keys of the PKI a cluster shares.
func TestLayoutPaths(t *testing.T) {
	want := map[string]string{
		"ServerCA.cert": "server-ca.crt", "ServerCA.key": "server-ca.key",
		"ClientCA.cert": "client-ca.crt", "ClientCA.key": "client-ca.key",
		"RequestHeaderCA.cert": "request-header-ca.crt", "RequestHeaderCA.key": "request-header-ca.key",
		"EtcdCA.cert": "etcd/ca.crt", "EtcdCA.key": "etcd/ca.key",
		"KubeletServingCA.cert": "kubelet-serving-ca.crt", "KubeletServingCA.key": "kubelet-serving-ca.key",
		"KubeletServingApprover.cert": "client-kubelet-serving-approver.crt", "KubeletServingApprover.key": "client-kubelet-serving-approver.key",
		"KubeletServingApproverKubeconfig": "kubelet-serving-approver.kubeconfig",
		"FeaturePublisher.cert":            "client-feature-publisher.crt", "FeaturePublisher.key": "client-feature-publisher.key",
		"FeaturePublisherKubeconfig": "feature-publisher.kubeconfig",
		"Deployer.cert":              "client-manifest-deployer.crt", "Deployer.key": "client-manifest-deployer.key",
		"DeployerKubeconfig":    "manifest-deployer.kubeconfig",
		"APIServerServing.cert": "serving-kube-apiserver.crt", "APIServerServing.key": "serving-kube-apiserver.key",
		"APIServerKubeletClient.cert": "client-kube-apiserver.crt", "APIServerKubeletClient.key": "client-kube-apiserver.key",
		"APIServerEtcdClient.cert": "etcd/client-kube-apiserver.crt", "APIServerEtcdClient.key": "etcd/client-kube-apiserver.key",
		"FrontProxyClient.cert": "client-front-proxy.crt", "FrontProxyClient.key": "client-front-proxy.key",
		"EtcdServer.cert": "etcd/server.crt", "EtcdServer.key": "etcd/server.key",
		"Admin.cert": "client-admin.crt", "Admin.key": "client-admin.key",
		"Scheduler.cert": "client-kube-scheduler.crt", "Scheduler.key": "client-kube-scheduler.key",
		"ControllerManager.cert": "client-kube-controller-manager.crt", "ControllerManager.key": "client-kube-controller-manager.key",
		"ServiceAccountKey": "service-account.key", "ServiceAccountPub": "service-account.pub",
		"AdminKubeconfig": "admin.kubeconfig", "SchedulerKubeconfig": "kube-scheduler.kubeconfig",
		"ControllerManagerKubeconfig": "kube-controller-manager.kubeconfig",
	}
	for _, tc := range []struct {
		name string
		dir  string
	}{
		{"zero layout: relative to the PKI dir", ""},
		{"absolute", "/var/lib/cp/tls"},
		{"relative", "data/pki"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := layoutPaths(pki.Layout{Dir: tc.dir})
			require.Len(t, got, len(want))
			for k, rel := range want {
				assert.Equal(t, filepath.Join(tc.dir, rel), got[k], k)
			}
		})
	}
	assert.Equal(t, []string{
		"server-ca.crt", "server-ca.key", "client-ca.crt", "client-ca.key",
		"request-header-ca.crt", "request-header-ca.key", "kubelet-serving-ca.crt", "kubelet-serving-ca.key",
		"service-account.key", "service-account.pub",
	}, pki.Layout{}.ClusterFiles())
	assert.Equal(t, "/x/server-ca.crt", pki.Layout{Dir: "/x"}.ClusterFiles()[0])
}

// TestEnsureFollowsLayout: Ensure writes exactly the layout's files, and
// Files names them as the layout does.
func TestEnsureFollowsLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	f, err := pki.Ensure(pki.Config{Dir: dir, APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	l := f.Layout()
	assert.Equal(t, pki.Layout{Dir: dir}, l)

	paths := layoutPaths(l)
	var onDisk []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			onDisk = append(onDisk, path)
		}
		return err
	}))
	var want []string
	for _, p := range paths {
		want = append(want, p)
	}
	assert.ElementsMatch(t, want, onDisk, "Ensure writes the layout's files and nothing else")

	for got, want := range map[pki.CertKey]pki.CertKey{
		{CertFile: f.ServerCA.CertFile, KeyFile: f.ServerCA.KeyFile}:                 l.ServerCA(),
		{CertFile: f.ClientCA.CertFile, KeyFile: f.ClientCA.KeyFile}:                 l.ClientCA(),
		{CertFile: f.RequestHeaderCA.CertFile, KeyFile: f.RequestHeaderCA.KeyFile}:   l.RequestHeaderCA(),
		{CertFile: f.EtcdCA.CertFile, KeyFile: f.EtcdCA.KeyFile}:                     l.EtcdCA(),
		{CertFile: f.KubeletServingCA.CertFile, KeyFile: f.KubeletServingCA.KeyFile}: l.KubeletServingCA(),
		certKey(f.KubeletServingApprover):                                            l.KubeletServingApprover(),
		certKey(f.APIServerServing):                                                  l.APIServerServing(),
		certKey(f.APIServerKubeletClient):                                            l.APIServerKubeletClient(),
		certKey(f.APIServerEtcdClient):                                               l.APIServerEtcdClient(),
		certKey(f.FrontProxyClient):                                                  l.FrontProxyClient(),
		certKey(f.EtcdServer):                                                        l.EtcdServer(),
		certKey(f.Admin):                                                             l.Admin(),
		certKey(f.Scheduler):                                                         l.Scheduler(),
		certKey(f.ControllerManager):                                                 l.ControllerManager(),
	} {
		assert.Equal(t, want, got)
	}
	assert.Equal(t, l.ServiceAccountKey(), f.ServiceAccountKey)
	assert.Equal(t, l.ServiceAccountPub(), f.ServiceAccountPub)
	assert.Equal(t, l.AdminKubeconfig(), f.AdminKubeconfig)
	assert.Equal(t, l.SchedulerKubeconfig(), f.SchedulerKubeconfig)
	assert.Equal(t, l.ControllerManagerKubeconfig(), f.ControllerManagerKubeconfig)
	assert.Equal(t, l.KubeletServingApproverKubeconfig(), f.KubeletServingApproverKubeconfig)
	assert.Equal(t, l.FeaturePublisherKubeconfig(), f.FeaturePublisherKubeconfig)
	assert.Equal(t, l.DeployerKubeconfig(), f.DeployerKubeconfig)
}

func certKey(p *pki.Pair) pki.CertKey { return pki.CertKey{CertFile: p.CertFile, KeyFile: p.KeyFile} }

// A binary knows where every file will be before Ensure made any: enough
// to write the components' flags, or to tell a user where the admin
// kubeconfig is.
func ExampleLayout() {
	l := pki.Layout{Dir: "/var/lib/cp/pki"}
	fmt.Println("--tls-cert-file=" + l.APIServerServing().CertFile)
	fmt.Println("--client-ca-file=" + l.ClientCA().CertFile)
	fmt.Println("--etcd-certfile=" + l.APIServerEtcdClient().CertFile)
	fmt.Println("KUBECONFIG=" + l.AdminKubeconfig())
	// Output:
	// --tls-cert-file=/var/lib/cp/pki/serving-kube-apiserver.crt
	// --client-ca-file=/var/lib/cp/pki/client-ca.crt
	// --etcd-certfile=/var/lib/cp/pki/etcd/client-kube-apiserver.crt
	// KUBECONFIG=/var/lib/cp/pki/admin.kubeconfig
}

// The zero Layout names the files relative to the PKI directory: the
// cluster-wide files a second server of the same cluster must get from the
// first.
func ExampleLayout_ClusterFiles() {
	for _, name := range (pki.Layout{}).ClusterFiles() {
		fmt.Println(name)
	}
	// Output:
	// server-ca.crt
	// server-ca.key
	// client-ca.crt
	// client-ca.key
	// request-header-ca.crt
	// request-header-ca.key
	// kubelet-serving-ca.crt
	// kubelet-serving-ca.key
	// service-account.key
	// service-account.pub
}
