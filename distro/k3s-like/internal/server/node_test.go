package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/names"
)

// TestNodeArgs: the server's kube-proxy gets node.DefaultKubeProxyFlags
// for its node (its name, the kubelet's kubeconfig, the cluster CIDR),
// the --feature-gates and logging shorthands but no --emulated-version,
// and --kube-proxy-arg over them; --disable-kube-proxy runs none; a
// malformed --kube-proxy-arg is an error naming it.
func TestNodeArgs(t *testing.T) {
	o, err := parseServer(t, []string{"--data-dir=" + t.TempDir(), "--node-name=node-a", "--node-ip=192.0.2.10", "--cluster-cidr=10.244.0.0/16",
		"--feature-gates=AllAlpha=false", "--emulated-version=1.36", "--kube-proxy-arg=proxy-mode=nftables", "--kube-proxy-arg=v=3"})
	require.NoError(t, err)
	o.net, err = o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	args, err := o.componentArgs()
	require.NoError(t, err)
	proxy := args[names.KubeProxy]
	require.NotEmpty(t, proxy)
	for key, want := range map[string]string{
		"hostname-override": "node-a", "kubeconfig": o.nodeConfig().KubeProxyKubeconfig(), "cluster-cidr": "10.244.0.0/16",
		"proxy-mode": "nftables", "v": "3", "feature-gates": "AllAlpha=false", "conntrack-max-per-core": "0",
	} {
		got, ok := kubeargs.Value(proxy, key)
		assert.True(t, ok, "--%s", key)
		assert.Equal(t, want, got, "--%s", key)
	}
	assert.NotEqual(t, o.nodeConfig().Kubeconfig(), o.nodeConfig().KubeProxyKubeconfig(), "kube-proxy's own identity, not the kubelet's")
	_, ok := kubeargs.Value(proxy, "emulated-version")
	assert.False(t, ok, "kube-proxy has no --emulated-version")

	o, err = parseServer(t, []string{"--data-dir=" + t.TempDir(), "--disable-kube-proxy"})
	require.NoError(t, err)
	o.net, err = o.resolveNetwork(fakeHost)
	require.NoError(t, err)
	args, err = o.componentArgs()
	require.NoError(t, err)
	assert.NotContains(t, args, names.KubeProxy)
	assert.Contains(t, args, names.Kubelet)

	o, err = parseServer(t, []string{"--data-dir=" + t.TempDir(), "--kube-proxy-arg==3"})
	require.NoError(t, err)
	_, err = o.componentArgs()
	assert.ErrorContains(t, err, "kube-proxy-arg")
}

// TestNodeProfilingFollowsEnablePprof: the kubelet's process-wide debug
// handlers are on only with --enable-pprof (node.Config.Profiling).
func TestNodeProfilingFollowsEnablePprof(t *testing.T) {
	o, err := parseServer(t, []string{"--data-dir=" + t.TempDir()})
	require.NoError(t, err)
	assert.False(t, o.nodeConfig().Profiling)
	o, err = parseServer(t, []string{"--data-dir=" + t.TempDir(), "--enable-pprof"})
	require.NoError(t, err)
	assert.True(t, o.nodeConfig().Profiling)
}
