package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/kubeargs"
)

// TestFlannelArgs: the server's node runs flannel (vxlan unless
// --flannel-backend says otherwise) with its kubelet's credential, its
// name and IP, the cluster CIDR and --flannel-iface; with
// --flannel-backend=none it runs none; another value is an error naming
// the flag.
func TestFlannelArgs(t *testing.T) {
	args := func(t *testing.T, extra ...string) map[string][]string {
		t.Helper()
		o, err := parseServer(t, append([]string{"--data-dir=" + t.TempDir(), "--node-name=node-a", "--node-ip=192.0.2.10", "--cluster-cidr=10.244.0.0/16"}, extra...))
		require.NoError(t, err)
		o.net, err = o.resolveNetwork(fakeHost)
		require.NoError(t, err)
		a, err := o.componentArgs()
		require.NoError(t, err)
		return a
	}
	f := args(t)[flannel.Name]
	o, err := parseServer(t, []string{"--data-dir=/d", "--node-name=node-a"})
	require.NoError(t, err)
	for key, want := range map[string]string{
		"backend": "vxlan", "node-name": "node-a", "public-ip": "192.0.2.10", "network": "10.244.0.0/16",
		"kubeconfig-file": o.nodeConfig().Kubeconfig(),
	} {
		got, ok := kubeargs.Value(f, key)
		assert.True(t, ok, "--%s", key)
		if key != "kubeconfig-file" {
			assert.Equal(t, want, got, "--%s", key)
		}
	}
	_, ok := kubeargs.Value(f, "iface")
	assert.False(t, ok, "no --iface: the node IP's interface")

	f = args(t, "--flannel-backend=host-gw", "--flannel-iface=eth1")[flannel.Name]
	got, _ := kubeargs.Value(f, "backend")
	assert.Equal(t, "host-gw", got)
	got, _ = kubeargs.Value(f, "iface")
	assert.Equal(t, "eth1", got)

	assert.NotContains(t, args(t, "--flannel-backend=none"), flannel.Name, "none: the user brings a CNI")

	o, err = parseServer(t, []string{"--data-dir=" + t.TempDir(), "--flannel-backend=wireguard"})
	require.NoError(t, err)
	_, _, err = o.check()
	assert.EqualError(t, err, "--flannel-backend=wireguard: want vxlan, host-gw, none")
}
