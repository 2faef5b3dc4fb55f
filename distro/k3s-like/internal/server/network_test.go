package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// fakeHost is a host with two addresses and a name.
func fakeHost() ([]string, string, error) {
	return []string{"192.0.2.2", "2001:db8::2"}, "node-a", nil
}

// TestResolveNetwork: what each combination of --bind-address,
// --advertise-address and --tls-san advertises and certifies.
func TestResolveNetwork(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          []string
		wantAdvertise string // "" with wantSANs nil: only check the error
		wantSANs      []string
	}{
		{"defaults without a node: loopback, nothing more in the certificate", []string{"--disable-agent"}, "127.0.0.1", nil},
		{"defaults with a node whose IP is given: every address, the node's advertised", []string{"--node-ip=192.0.2.10"}, "192.0.2.10",
			[]string{"192.0.2.2", "2001:db8::2", "node-a"}},
		{"tls-san only", []string{"--disable-agent", "--tls-san=k8s.example.com,198.51.100.7", "--tls-san=*.k8s.example.com"}, "127.0.0.1",
			[]string{"k8s.example.com", "198.51.100.7", "*.k8s.example.com"}},
		{"a specific bind address is advertised", []string{"--bind-address=192.0.2.2"}, "192.0.2.2", nil},
		{"every address: the host's addresses and name are certified", []string{"--bind-address=0.0.0.0", "--advertise-address=192.0.2.2", "--tls-san=k8s.example.com"}, "192.0.2.2",
			[]string{"k8s.example.com", "192.0.2.2", "2001:db8::2", "node-a"}},
		{"a NAT's address may be advertised from a specific bind address", []string{"--bind-address=192.0.2.2", "--advertise-address=198.51.100.7"}, "198.51.100.7", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseServer(t, tc.args)
			require.NoError(t, err)
			n, err := o.resolveNetwork(fakeHost)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAdvertise, n.advertise)
			assert.Equal(t, tc.wantSANs, n.sans)
		})
	}

	// With a node and no --node-ip: every address, the default route's
	// advertised (the node's IP too).
	o, err := parseServer(t, nil)
	require.NoError(t, err)
	n, err := o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	assert.Equal(t, "0.0.0.0", n.bind)
	ip, err := o.nodeConfig().IP()
	require.NoError(t, err)
	assert.Equal(t, ip.String(), n.advertise)

	// 0.0.0.0 without --advertise-address: upstream's default-route choice,
	// which on any host is a specific address (or loopback without a route).
	o, err = parseServer(t, []string{"--bind-address=0.0.0.0"})
	require.NoError(t, err)
	n, err = o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	assert.NotEmpty(t, n.advertise)
	assert.NotEqual(t, "0.0.0.0", n.advertise)

	o, err = parseServer(t, []string{"--bind-address=0.0.0.0"})
	require.NoError(t, err)
	_, err = o.resolveNetwork(func() ([]string, string, error) { return nil, "", errors.New("no interfaces") })
	assert.ErrorContains(t, err, "--bind-address=0.0.0.0: listing this host's addresses for the serving certificate: no interfaces")
}

// TestResolveNetworkErrors: each bad value is an error naming the flag and
// the value.
func TestResolveNetworkErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bind-address=localhost"}, "--bind-address=localhost: not an IP address"},
		{[]string{"--advertise-address=k8s.example.com"}, "--advertise-address=k8s.example.com: want this server's IP address"},
		{[]string{"--bind-address=0.0.0.0", "--advertise-address=0.0.0.0"}, "--advertise-address=0.0.0.0: want this server's IP address"},
		{[]string{"--disable-agent", "--advertise-address=192.0.2.2"}, "--advertise-address=192.0.2.2: kube-apiserver listens on loopback only (--bind-address=127.0.0.1): also set --bind-address=0.0.0.0 or --bind-address=192.0.2.2"},
		{[]string{"--tls-san=under_score.example.com"}, "--tls-san=under_score.example.com: neither an IP address nor a DNS name"},
		{[]string{"--tls-san=https://k8s.example.com"}, "--tls-san=https://k8s.example.com: neither an IP address nor a DNS name"},
		{[]string{"--tls-san=a.*.example.com"}, "--tls-san=a.*.example.com: neither an IP address nor a DNS name"},
		{[]string{"--service-cidr=10.43.0.0"}, "--service-cidr=10.43.0.0: netip.ParsePrefix"},
		{[]string{"--cluster-cidr=pods"}, "--cluster-cidr=pods: netip.ParsePrefix"},
		{[]string{"--cluster-cidr=10.43.128.0/17"}, "--service-cidr=10.43.0.0/16 and --cluster-cidr=10.43.128.0/17 overlap"},
		{[]string{"--cluster-dns=10.42.0.10"}, "--cluster-dns=10.42.0.10: want an address in --service-cidr=10.43.0.0/16 (e.g. 10.43.0.10)"},
		{[]string{"--service-cidr=10.96.0.0/12", "--cluster-dns=10.43.0.10"}, "--cluster-dns=10.43.0.10: want an address in --service-cidr=10.96.0.0/12 (e.g. 10.96.0.10)"},
		{[]string{"--cluster-dns=dns"}, "--cluster-dns=dns: want an address"},
		{[]string{"--cluster-domain=Cluster.Local"}, "--cluster-domain=Cluster.Local: a lowercase RFC 1123 subdomain"},
	} {
		o, err := parseServer(t, tc.args)
		require.NoError(t, err)
		_, err = o.resolveNetwork(fakeHost)
		assert.ErrorContains(t, err, tc.want, tc.args)
	}
}

// TestClusterDNSDefault: k3s's default is the service range's tenth
// address.
func TestClusterDNSDefault(t *testing.T) {
	for args, want := range map[string]string{
		"--service-cidr=10.43.0.0/16":  "10.43.0.10",
		"--service-cidr=10.96.0.0/12":  "10.96.0.10",
		"--cluster-dns=10.43.7.7":      "10.43.7.7",
		"--service-cidr=fd00:43::/112": "fd00:43::a",
	} {
		o, err := parseServer(t, []string{args})
		require.NoError(t, err)
		assert.Equal(t, want, o.clusterDNSAddress(), args)
	}
}

// TestNetworkFlagsReachComponents: the ranges and the domain reach every
// component that takes them, and the advertised address the apiserver.
func TestNetworkFlagsReachComponents(t *testing.T) {
	o, err := parseServer(t, []string{"--data-dir=" + t.TempDir(), "--bind-address=0.0.0.0", "--advertise-address=192.0.2.2",
		"--service-cidr=10.96.0.0/12", "--cluster-cidr=10.244.0.0/16", "--cluster-domain=corp.example"})
	require.NoError(t, err)
	o.net, err = o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	args, err := o.componentArgs()
	require.NoError(t, err)
	for component, want := range map[string]map[string]string{
		components.APIServerName: {"service-cluster-ip-range": "10.96.0.0/12", "advertise-address": "192.0.2.2", "bind-address": "0.0.0.0",
			"endpoint-reconciler-type": "lease", "service-account-issuer": "https://kubernetes.default.svc.corp.example"},
		components.ControllerManagerName: {"service-cluster-ip-range": "10.96.0.0/12", "cluster-cidr": "10.244.0.0/16", "allocate-node-cidrs": "true"},
	} {
		for key, value := range want {
			got, ok := kubeargs.Value(args[component], key)
			assert.True(t, ok, "%s --%s", component, key)
			assert.Equal(t, value, got, "%s --%s", component, key)
		}
	}
}

// TestOwnedArgsRefused: a --kube-*-arg for a flag the server derives from
// its own flags is refused with the flag to use, in every form; the same
// key for another component, and a key the server does not own, pass.
func TestOwnedArgsRefused(t *testing.T) {
	for _, tc := range []struct{ arg, want string }{
		{"--kube-apiserver-arg=service-cluster-ip-range=10.96.0.0/12", "--kube-apiserver-arg=service-cluster-ip-range=10.96.0.0/12: the server sets --service-cluster-ip-range of kube-apiserver from its own flag: use --service-cidr"},
		{"--kube-apiserver-arg=--service-cluster-ip-range+=fd00::/108", "use --service-cidr"},
		{"--kube-controller-manager-arg=cluster-cidr=10.244.0.0/16", "use --cluster-cidr"},
		{"--kube-controller-manager-arg=allocate-node-cidrs=false", "use --cluster-cidr"},
		{"--kube-controller-manager-arg=service-cluster-ip-range=10.96.0.0/12", "use --service-cidr"},
		{"--kube-apiserver-arg=advertise-address=192.0.2.2", "use --advertise-address"},
		{"--kube-apiserver-arg=bind-address=0.0.0.0", "use --bind-address"},
		{"--kube-apiserver-arg=secure-port=7443", "use --https-listen-port"},
		{"--kube-apiserver-arg=token-auth-file=/etc/tokens.csv", "--kube-apiserver-arg=token-auth-file=/etc/tokens.csv: the server sets --token-auth-file of kube-apiserver to the join credentials of agents and servers (DATA_DIR/tls/join.csv)"},
	} {
		o, err := parseServer(t, []string{"--data-dir=" + t.TempDir(), tc.arg})
		require.NoError(t, err)
		_, err = o.componentArgs()
		assert.ErrorContains(t, err, tc.want, tc.arg)
	}
	for _, ok := range []string{"--kube-scheduler-arg=bind-address=127.0.0.1", "--kube-controller-manager-arg=secure-port=11257",
		"--kube-apiserver-arg=service-account-issuer+=https://issuer.example.com"} {
		o, err := parseServer(t, []string{"--data-dir=" + t.TempDir(), ok})
		require.NoError(t, err)
		_, err = o.componentArgs()
		assert.NoError(t, err, ok)
	}
}

// TestWriteKubeconfigShortFlag: -o is --write-kubeconfig, as in k3s.
func TestWriteKubeconfigShortFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "k.yaml")
	o, err := parseServer(t, []string{"-o", path})
	require.NoError(t, err)
	assert.Equal(t, path, o.adminKubeconfig())
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err), "parsing writes nothing")
}

// TestParseMemoryLimit: a quantity of bytes, at least 64Mi; anything else
// names the flag and the value.
func TestParseMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "512Mi": 512 << 20, "1G": 1e9, "2Gi": 2 << 30} {
		got, err := parseMemoryLimit(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"lots", "-1Gi", "0", "1Mi", "1.5"} {
		_, err := parseMemoryLimit(bad)
		assert.ErrorContains(t, err, "--memory-limit="+bad+": want", bad)
	}
}

// TestJoinAuthFileArg: the apiserver authenticates the agents' join
// credential from the server's file (a path: the credential is in no
// argument).
func TestJoinAuthFileArg(t *testing.T) {
	dir := t.TempDir()
	o, err := parseServer(t, []string{"--data-dir=" + dir})
	require.NoError(t, err)
	args, err := o.componentArgs()
	require.NoError(t, err)
	got, ok := kubeargs.Value(args[components.APIServerName], "token-auth-file")
	assert.True(t, ok)
	assert.Equal(t, cluster.JoinAuthFile(dir), got)
}
