package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// externalEtcd starts a single-member etcd on loopback for the test, as an
// operator's external datastore would be (package components/etcd, through
// testenv: TLS with client certificates, its own PKI), and returns the
// server flags that point at it.
func externalEtcd(t *testing.T) []string {
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	e, err := testenv.StartEtcd(filepath.Join(dir, "etcd"), files)
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return []string{
		"--datastore-endpoint=" + e.ClientURL,
		"--datastore-cafile=" + files.EtcdCA.CertFile,
		"--datastore-certfile=" + files.APIServerEtcdClient.CertFile,
		"--datastore-keyfile=" + files.APIServerEtcdClient.KeyFile,
	}
}

func leaderElection(t *testing.T, s *server) map[string]components.LeaderElection {
	resp, err := http.Get("http://" + s.statusAddress() + "/leader-election")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]components.LeaderElection{}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func holder(ctx context.Context, c kubernetes.Interface, lease string) string {
	l, err := c.CoordinationV1().Leases("kube-system").Get(ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestHA runs two servers against one external etcd: both serve, they share
// one PKI (the second fetched it with the token), exactly one scheduler and
// one controller-manager hold the leases; killing the scheduler's holder
// hands both leases to the other within 30 s and scheduling goes on.
func TestHA(t *testing.T) {
	ha := append(externalEtcd(t), "--token=e2e-secret")
	a, b := newServer(t, t.TempDir()), newServer(t, t.TempDir())
	a.start(ha...)
	a.waitReady(90 * time.Second)
	b.start(ha...)
	b.waitReady(90 * time.Second)

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// A's admin kubeconfig works against B's apiserver: one PKI.
	cfg, err := clientcmd.BuildConfigFromFlags("", a.dataDir+"/admin.kubeconfig")
	require.NoError(t, err)
	cfg.Host = "https://127.0.0.1:" + strconv.Itoa(b.ports["https"])
	cross, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cross.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err, "server A's admin credentials are accepted by server B")

	c := a.client()
	ids := map[*server]map[string]components.LeaderElection{a: leaderElection(t, a), b: leaderElection(t, b)}
	owner := func(lease string) *server {
		h := holder(ctx, c, lease)
		for s, le := range ids {
			if le[lease].Identity == h {
				return s
			}
		}
		return nil
	}
	for _, lease := range []string{components.SchedulerName, components.ControllerManagerName} {
		require.Eventually(t, func() bool { return owner(lease) != nil }, 30*time.Second, 200*time.Millisecond,
			"%s lease held by one of the two servers (holder %q, identities %v / %v)", lease, holder(ctx, c, lease), ids[a][lease].Identity, ids[b][lease].Identity)
		assert.True(t, ids[a][lease].Enabled && ids[b][lease].Enabled, "leader election is on with an external datastore")
	}

	victim := owner(components.SchedulerName)
	survivor := a
	if victim == a {
		survivor = b
	}
	t.Logf("scheduler lease held by the server on port %d; killing it", victim.ports["https"])
	killed := time.Now()
	require.NoError(t, victim.cmd.Process.Signal(syscall.SIGKILL))
	victim.wait(10 * time.Second)

	c = survivor.client()
	require.Eventually(t, func() bool {
		return owner(components.SchedulerName) == survivor && owner(components.ControllerManagerName) == survivor
	}, 30*time.Second, 250*time.Millisecond, "the survivor takes over both leases")
	t.Logf("kill to takeover of both leases: %s", time.Since(killed))

	createReadyNode(ctx, t, c, "node-ha")
	deployAndWaitBound(ctx, t, c, "after-failover", 2, "node-ha") // scheduling continues on the survivor

	require.NoError(t, survivor.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := survivor.wait(15 * time.Second)
	assert.Equal(t, 0, code)
}

func TestHAWrongTokenFails(t *testing.T) {
	datastore := externalEtcd(t)
	a := newServer(t, t.TempDir())
	a.start(append(slices.Clip(datastore), "--token=right")...)
	a.waitReady(90 * time.Second)
	b := newServer(t, t.TempDir())
	b.start(append(slices.Clip(datastore), "--token=wrong")...)
	code, _ := b.wait(30 * time.Second)
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(b.stderr.String()), "cannot be decrypted with this --token")
	_, err := readFileIfExists(b.dataDir + "/tls/server-ca.key")
	assert.Error(t, err, "the second server made no CA of its own")
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	a.wait(15 * time.Second)
}
