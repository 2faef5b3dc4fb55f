package flannel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/scoping"
)

// parsed adds flannel's flags to a private scope, parses args and
// completes it.
func parsed(t *testing.T, args ...string) (*flannel.Flannel, error) {
	t.Helper()
	target, err := testenv.PrivateTarget()
	require.NoError(t, err)
	b, err := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(flannel.Name)
	require.NoError(t, err)
	f := flannel.New()
	require.NoError(t, f.AddFlags(s))
	if err := s.Parse(args); err != nil {
		return f, err
	}
	return f, f.Complete(s)
}

// goodArgs are a node's flags; each case below replaces one.
func goodArgs(dir string) []string {
	return []string{"--kubeconfig-file=" + filepath.Join(dir, "kubeconfig"), "--node-name=node-a", "--public-ip=192.0.2.10",
		"--network=10.42.0.0/16", "--net-config-path=" + filepath.Join(dir, "net-conf.json"), "--subnet-file=" + filepath.Join(dir, "subnet.env")}
}

// TestComplete: the flags are checked before the barrier; each error is a
// *scoping.FlagError naming flannel, the flag and the value.
func TestComplete(t *testing.T) {
	dir := t.TempDir()
	_, err := parsed(t, goodArgs(dir)...)
	require.NoError(t, err)
	_, err = parsed(t, append(goodArgs(dir), "--backend=host-gw", "--iface=eth1")...)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backend=udp"}, "flannel: --backend=udp: want vxlan or host-gw"},
		{[]string{"--network=10.42.0.1/16"}, "flannel: --network=10.42.0.1/16: want an IPv4 network such as 10.42.0.0/16"},
		{[]string{"--network=fd00::/64"}, "flannel: --network=fd00::/64: want an IPv4 network such as 10.42.0.0/16"},
		{[]string{"--public-ip=node-a"}, "flannel: --public-ip=node-a: want an IPv4 address"},
		{[]string{"--node-name="}, "flannel: --node-name: required"},
		{[]string{"--kubeconfig-file="}, "flannel: --kubeconfig-file: required"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := parsed(t, append(goodArgs(dir), tc.args...)...)
			var fe *scoping.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, flannel.Name, fe.Component)
			assert.EqualError(t, err, tc.want)
		})
	}
}

// TestRunNeedsNodeNameEnv: NODE_NAME, which flannel's kube subnet manager
// reads, must be --node-name when Run starts: an *EnvError otherwise.
// SetNodeNameEnv sets it and says what it replaced.
func TestRunNeedsNodeNameEnv(t *testing.T) {
	t.Setenv(flannel.NodeNameEnv, "someone-else")
	f, err := parsed(t, goodArgs(t.TempDir())...)
	require.NoError(t, err)
	err = f.Run(t.Context())
	var ee *flannel.EnvError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "someone-else", ee.Value)
	assert.Equal(t, "node-a", ee.Want)
	assert.ErrorContains(t, err, `flannel: NODE_NAME="someone-else" in the process environment, want "node-a"`)

	prev, err := flannel.SetNodeNameEnv("node-a")
	require.NoError(t, err)
	assert.Equal(t, "someone-else", prev)
	assert.Equal(t, "node-a", os.Getenv(flannel.NodeNameEnv))
}

// TestStopWhileWaitingForPodCIDR: Run waits for its Node's pod CIDR (here
// the apiserver does not answer); stopped there it returns nil, having
// started nothing, and Ready says what flannel was waiting for.
func TestStopWhileWaitingForPodCIDR(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	t.Setenv(flannel.NodeNameEnv, "node-a")
	f, err := parsed(t, goodArgs(dir)...)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()

	readyCtx, readyCancel := context.WithTimeout(t.Context(), time.Second)
	defer readyCancel()
	err = f.Ready(readyCtx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "waiting for Node node-a's pod CIDR")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	_, err = os.Stat(filepath.Join(dir, "net-conf.json"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "nothing written before the Node had a pod CIDR")
}

// TestRules: what a node's credential needs for flannel.
func TestRules(t *testing.T) {
	var verbs []string
	for _, r := range flannel.Rules() {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				verbs = append(verbs, res+":"+v)
			}
		}
	}
	assert.ElementsMatch(t, []string{"nodes:get", "nodes:list", "nodes:watch", "nodes/status:patch"}, verbs)
}
