package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestPublicationFitsTheBurst: node-join's publication, the first (with
// the server's node name claimed) and a later one, makes no more requests
// than its client's burst, so that the first start is never throttled;
// the client keeps client-go's QPS.
func TestPublicationFitsTheBurst(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	noCRDs := func(context.Context) error { return nil } // another client's
	j := NodeJoin{DataDir: t.TempDir(), NodeName: "node-a", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		ClusterCIDR: "10.42.0.0/16", FlannelBackend: "vxlan"}
	require.NoError(t, j.publishWith(ctx, client, logr.Discard(), "CA", key, noCRDs))
	first := len(client.Actions())
	t.Logf("the first publication: %d requests", first)
	assert.Greater(t, first, 10, "more than client-go's default burst: the reason for publishBurst")
	assert.LessOrEqual(t, first, publishBurst, "the first publication")
	client.ClearActions()
	require.NoError(t, j.publishWith(ctx, client, logr.Discard(), "CA", key, noCRDs))
	assert.LessOrEqual(t, len(client.Actions()), publishBurst, "a later publication")

	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600))
	cfg, err := NodeJoin{AdminKubeconfig: kubeconfig}.clientConfig()
	require.NoError(t, err)
	assert.Equal(t, publishBurst, cfg.Burst)
	assert.Zero(t, cfg.QPS, "client-go's default QPS")
	assert.Equal(t, "k3s-like-node-join", cfg.UserAgent)
}

// TestJoinPublishedLast: on a fresh cluster the agent settings, which
// name the bootstrap token an agent joins with, come after every right an
// agent needs and the CRDs of its reports, so that an agent joining at
// once is never refused its certificate request.
func TestJoinPublishedLast(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	crdsAt := -1
	crds := func(context.Context) error { crdsAt = len(client.Actions()); return nil }
	j := NodeJoin{DataDir: t.TempDir(), NodeName: "node-a", ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local",
		ClusterCIDR: "10.42.0.0/16", FlannelBackend: "vxlan"}
	require.NoError(t, j.publishWith(ctx, client, logr.Discard(), "CA", key, crds))
	settingsAt, lastClusterBinding := -1, -1
	for i, a := range client.Actions() {
		pa, ok := a.(k8stesting.PatchAction)
		switch {
		case !ok:
		case a.GetResource().Resource == "configmaps" && pa.GetName() == agentSettings:
			settingsAt = i
		case a.GetResource().Resource == "clusterrolebindings":
			lastClusterBinding = i
		}
	}
	require.GreaterOrEqual(t, settingsAt, 0, "the settings were published")
	require.GreaterOrEqual(t, lastClusterBinding, 0, "cluster role bindings were applied")
	require.GreaterOrEqual(t, crdsAt, 0, "the CRDs were installed")
	assert.Greater(t, settingsAt, lastClusterBinding, "the settings after the last binding")
	assert.Greater(t, settingsAt, crdsAt, "the settings after the CRDs")
}
