package controlplane_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
)

// TestDefaultArgsDefaults pins every flag of the zero Settings.
func TestDefaultArgsDefaults(t *testing.T) {
	args := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, controlplane.Settings{})
	assert.Equal(t, map[string][]string{
		names.APIServer: {
			"--etcd-servers=https://127.0.0.1:2379",
			"--etcd-cafile=/p/etcd/ca.crt",
			"--etcd-certfile=/p/etcd/client-kube-apiserver.crt",
			"--etcd-keyfile=/p/etcd/client-kube-apiserver.key",
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--endpoint-reconciler-type=none",
			"--secure-port=6443",
			"--tls-cert-file=/p/serving-kube-apiserver.crt",
			"--tls-private-key-file=/p/serving-kube-apiserver.key",
			"--client-ca-file=/p/client-ca.crt",
			"--anonymous-auth=false",
			"--enable-bootstrap-token-auth=true",
			"--authorization-mode=Node,RBAC",
			"--enable-admission-plugins=NodeRestriction",
			"--allow-privileged=true",
			"--service-cluster-ip-range=10.0.0.0/24",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=/p/service-account.pub",
			"--service-account-signing-key-file=/p/service-account.key",
			"--requestheader-client-ca-file=/p/request-header-ca.crt",
			"--requestheader-allowed-names=front-proxy-client",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-username-headers=X-Remote-User",
			"--proxy-client-cert-file=/p/client-front-proxy.crt",
			"--proxy-client-key-file=/p/client-front-proxy.key",
			"--kubelet-client-certificate=/p/client-kube-apiserver.crt",
			"--kubelet-client-key=/p/client-kube-apiserver.key",
			"--kubelet-certificate-authority=/p/kubelet-serving-ca.crt",
			"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
			"--profiling=false",
		},
		names.Scheduler: {
			"--kubeconfig=/p/kube-scheduler.kubeconfig",
			"--authentication-kubeconfig=/p/kube-scheduler.kubeconfig",
			"--authorization-kubeconfig=/p/kube-scheduler.kubeconfig",
			"--bind-address=127.0.0.1",
			"--secure-port=10259",
			"--leader-elect=false",
			"--profiling=false",
		},
		names.ControllerManager: {
			"--kubeconfig=/p/kube-controller-manager.kubeconfig",
			"--authentication-kubeconfig=/p/kube-controller-manager.kubeconfig",
			"--authorization-kubeconfig=/p/kube-controller-manager.kubeconfig",
			"--bind-address=127.0.0.1",
			"--secure-port=10257",
			"--leader-elect=false",
			"--profiling=false",
			"--service-account-private-key-file=/p/service-account.key",
			"--root-ca-file=/p/server-ca.crt",
			"--use-service-account-credentials=true",
			"--cluster-signing-kubelet-client-cert-file=/p/client-ca.crt",
			"--cluster-signing-kubelet-client-key-file=/p/client-ca.key",
			"--cluster-signing-kube-apiserver-client-cert-file=/p/client-ca.crt",
			"--cluster-signing-kube-apiserver-client-key-file=/p/client-ca.key",
			"--cluster-signing-kubelet-serving-cert-file=/p/kubelet-serving-ca.crt",
			"--cluster-signing-kubelet-serving-key-file=/p/kubelet-serving-ca.key",
			"--service-cluster-ip-range=10.0.0.0/24",
		},
	}, args)
}

func TestDefaultArgsSettings(t *testing.T) {
	api, sched, kcm := names.APIServer, names.Scheduler, names.ControllerManager
	for _, tc := range []struct {
		name string
		s    controlplane.Settings
		want map[string]map[string]string // component → flag → value
	}{
		{"ports", controlplane.Settings{APIServerPort: 7443, SchedulerPort: 11259, ControllerManagerPort: 11257}, map[string]map[string]string{
			api: {"secure-port": "7443"}, sched: {"secure-port": "11259"}, kcm: {"secure-port": "11257"},
		}},
		{"a specific bind address is advertised; the endpoints are reconciled", controlplane.Settings{BindAddress: "192.0.2.10"}, map[string]map[string]string{
			api:   {"bind-address": "192.0.2.10", "advertise-address": "192.0.2.10", "endpoint-reconciler-type": "lease"},
			sched: {"bind-address": "127.0.0.1"}, kcm: {"bind-address": "127.0.0.1"},
		}},
		{"an advertised address is the endpoint; the endpoints are reconciled", controlplane.Settings{BindAddress: "0.0.0.0", AdvertiseAddress: "192.0.2.10"}, map[string]map[string]string{
			api: {"bind-address": "0.0.0.0", "advertise-address": "192.0.2.10", "endpoint-reconciler-type": "lease"},
		}},
		{"cluster domain: the service-account issuer", controlplane.Settings{ClusterDomain: "corp.example"}, map[string]map[string]string{
			api: {"service-account-issuer": "https://kubernetes.default.svc.corp.example"},
		}},
		{"an unspecified bind address advertises loopback", controlplane.Settings{BindAddress: "0.0.0.0"}, map[string]map[string]string{
			api: {"bind-address": "0.0.0.0", "advertise-address": "127.0.0.1", "endpoint-reconciler-type": "none"},
		}},
		{"IPv6 unspecified", controlplane.Settings{BindAddress: "::"}, map[string]map[string]string{
			api: {"bind-address": "::", "advertise-address": "127.0.0.1", "endpoint-reconciler-type": "none"},
		}},
		{"service CIDR", controlplane.Settings{ServiceClusterIPRange: "10.43.0.0/16"}, map[string]map[string]string{
			api: {"service-cluster-ip-range": "10.43.0.0/16"}, kcm: {"service-cluster-ip-range": "10.43.0.0/16"},
		}},
		{"embedded etcd on another port keeps the layout's certificates", controlplane.Settings{EtcdServers: "https://127.0.0.1:3379"}, map[string]map[string]string{
			api: {"etcd-servers": "https://127.0.0.1:3379", "etcd-cafile": "/p/etcd/ca.crt", "etcd-certfile": "/p/etcd/client-kube-apiserver.crt", "etcd-keyfile": "/p/etcd/client-kube-apiserver.key"},
		}},
		{"external etcd with its own files", controlplane.Settings{EtcdServers: "https://a:2379,https://b:2379", EtcdTLS: &controlplane.EtcdTLS{CAFile: "/ca", CertFile: "/c", KeyFile: "/k"}}, map[string]map[string]string{
			api: {"etcd-servers": "https://a:2379,https://b:2379", "etcd-cafile": "/ca", "etcd-certfile": "/c", "etcd-keyfile": "/k"},
		}},
		{"external etcd without TLS files: empty values", controlplane.Settings{EtcdServers: "http://a:2379", EtcdTLS: &controlplane.EtcdTLS{}}, map[string]map[string]string{
			api: {"etcd-servers": "http://a:2379", "etcd-cafile": "", "etcd-certfile": "", "etcd-keyfile": ""},
		}},
		{"leader election", controlplane.Settings{LeaderElect: true}, map[string]map[string]string{
			sched: {"leader-elect": "true"}, kcm: {"leader-elect": "true"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, tc.s)
			defaults := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, controlplane.Settings{})
			for component, flags := range tc.want {
				for name, want := range flags {
					got, ok := kubeargs.Value(args[component], name)
					assert.True(t, ok, "%s --%s", component, name)
					assert.Equal(t, want, got, "%s --%s", component, name)
				}
			}
			// Every other flag is as with the zero Settings.
			for component, list := range args {
				require.Len(t, list, len(defaults[component]), component)
				for i, a := range list {
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if _, changed := tc.want[component][name]; !changed {
						assert.Equal(t, defaults[component][i], a, component)
					}
				}
			}
		})
	}
}

// TestDefaultFlagsMatchDefaultArgs: DefaultArgs is DefaultFlags rendered.
func TestDefaultFlagsMatchDefaultArgs(t *testing.T) {
	s := controlplane.Settings{APIServerPort: 7443, LeaderElect: true}
	flags := controlplane.DefaultFlags(pki.Layout{Dir: "/p"}, s)
	args := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, s)
	require.Len(t, flags, 3)
	for name, list := range flags {
		require.Len(t, args[name], len(list))
		for i, f := range list {
			assert.Equal(t, f.String(), args[name][i])
		}
	}
}

func TestServiceIP(t *testing.T) {
	for cidr, want := range map[string]string{
		"":                   "10.0.0.1",
		"10.43.0.0/16":       "10.43.0.1",
		"10.43.7.9/16":       "10.43.0.1",
		"fd00:10:96::/112":   "fd00:10:96::1",
		"192.168.100.128/25": "192.168.100.129",
	} {
		ip, err := controlplane.Settings{ServiceClusterIPRange: cidr}.ServiceIP()
		require.NoError(t, err, cidr)
		assert.Equal(t, want, ip.String(), cidr)
	}
	for _, bad := range []string{"10.43.0.0", "nonsense", "10.0.0.1/32"} {
		_, err := controlplane.Settings{ServiceClusterIPRange: bad}.ServiceIP()
		assert.Error(t, err, bad)
	}
}

// TestClusterCIDR: a cluster CIDR turns the controller-manager's node CIDR
// allocation on; none leaves both flags out.
func TestClusterCIDR(t *testing.T) {
	kcm := names.ControllerManager
	none := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, controlplane.Settings{})[kcm]
	for _, name := range []string{"cluster-cidr", "allocate-node-cidrs"} {
		_, ok := kubeargs.Value(none, name)
		assert.False(t, ok, name)
	}
	args := controlplane.DefaultArgs(pki.Layout{Dir: "/p"}, controlplane.Settings{ClusterCIDR: "10.42.0.0/16"})[kcm]
	assert.Equal(t, append(none, "--cluster-cidr=10.42.0.0/16", "--allocate-node-cidrs=true"), args)
}

func TestPKIConfig(t *testing.T) {
	l := pki.Layout{Dir: "/p"}
	cfg, err := controlplane.PKIConfig(l, controlplane.Settings{})
	require.NoError(t, err)
	assert.Equal(t, pki.Config{Dir: "/p", APIServerURL: "https://127.0.0.1:6443", ServiceIP: net.ParseIP("10.0.0.1").To4(), ServingIPs: []net.IP{net.ParseIP("127.0.0.1")}, ClusterDomain: "cluster.local"}, cfg)

	cfg, err = controlplane.PKIConfig(l, controlplane.Settings{BindAddress: "192.0.2.10", APIServerPort: 7443, ServiceClusterIPRange: "10.43.0.0/16"})
	require.NoError(t, err)
	assert.Equal(t, "https://192.0.2.10:7443", cfg.APIServerURL)
	assert.Equal(t, "10.43.0.1", cfg.ServiceIP.String())
	assert.Equal(t, []net.IP{net.ParseIP("192.0.2.10")}, cfg.ServingIPs)

	cfg, err = controlplane.PKIConfig(l, controlplane.Settings{BindAddress: "0.0.0.0"})
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.APIServerURL)
	assert.Equal(t, []net.IP{net.ParseIP("127.0.0.1")}, cfg.ServingIPs)

	// Listening everywhere, advertising a host address: the components
	// stay on loopback, users get the advertised address, the certificate
	// covers it, the SANs (IPs and names apart, each once) and the domain.
	s := controlplane.Settings{BindAddress: "0.0.0.0", AdvertiseAddress: "192.0.2.10", ClusterDomain: "corp.example",
		SANs: []string{"k8s.example.com", "198.51.100.7", "192.0.2.10", "k8s.example.com", "2001:db8::1"}}
	cfg, err = controlplane.PKIConfig(l, s)
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:6443", cfg.APIServerURL)
	assert.Equal(t, "https://192.0.2.10:6443", s.APIServerURL())
	assert.Equal(t, []net.IP{net.ParseIP("192.0.2.10"), net.ParseIP("198.51.100.7"), net.ParseIP("2001:db8::1")}, cfg.ServingIPs)
	assert.Equal(t, []string{"k8s.example.com"}, cfg.ServingDNSNames)
	assert.Equal(t, "corp.example", cfg.ClusterDomain)

	_, err = controlplane.PKIConfig(l, controlplane.Settings{ServiceClusterIPRange: "nonsense"})
	assert.ErrorContains(t, err, "service cluster IP range")
}

func TestEtcdConfig(t *testing.T) {
	cfg := controlplane.EtcdConfig(pki.Layout{Dir: "/p"}, etcd.Config{DataDir: "/d", ClientPort: 3379})
	assert.Equal(t, etcd.Config{DataDir: "/d", ClientPort: 3379, CertFile: "/p/etcd/server.crt", KeyFile: "/p/etcd/server.key", TrustedCAFile: "/p/etcd/ca.crt"}, cfg)
}

// TestDefaultArgsNameEnsuredFiles: every file the default flags name is one
// pki.Ensure writes for PKIConfig, and the etcd configuration's too.
func TestDefaultArgsNameEnsuredFiles(t *testing.T) {
	l := pki.Layout{Dir: filepath.Join(t.TempDir(), "pki")}
	s := controlplane.Settings{}
	cfg, err := controlplane.PKIConfig(l, s)
	require.NoError(t, err)
	_, err = pki.Ensure(cfg)
	require.NoError(t, err)
	var paths []string
	for _, args := range controlplane.DefaultArgs(l, s) {
		for _, a := range args {
			if _, v, _ := strings.Cut(a, "="); strings.HasPrefix(v, l.Dir) {
				paths = append(paths, v)
			}
		}
	}
	e := controlplane.EtcdConfig(l, etcd.Config{})
	paths = append(paths, e.CertFile, e.KeyFile, e.TrustedCAFile)
	assert.Len(t, paths, 31) // 14 for the apiserver, 3 for the scheduler, 11 for the controller-manager, 3 for etcd
	for _, p := range paths {
		_, err := os.Stat(p)
		assert.NoError(t, err, p)
	}
}
