package components_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
)

// TestControllerManagerLeaderElectionErrorClosesPort: the controller-manager
// binds its secure port in upstream's Config, before the adapter builds the
// leader-election lock; when building the lock fails (here: an unknown
// --leader-elect-resource-lock, which upstream validates only with leader
// election on, and the adapter turns upstream's elector off), Run returns an
// error and the port must be free again. No apiserver is needed: the lock
// is built from the kubeconfig without contacting the server. In-process,
// with a private target: the barrier applies nothing to the process.
func TestControllerManagerLeaderElectionErrorClosesPort(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	port, err := testenv.FreePort()
	require.NoError(t, err)
	target := privateTarget(t)
	h := &harness.Harness{Target: &target}
	kcm := components.NewControllerManager()
	require.NoError(t, h.Add(kcm, []string{
		"--kubeconfig=" + unreachableKubeconfig(t), // never contacted: the lock fails first
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=true",
		"--leader-elect-resource-lock=no-such-lock",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = h.Run(ctx)
	require.Error(t, err)
	t.Logf("the harness said: %v", err)
	assert.ErrorContains(t, err, "leader election lock")
	assert.ErrorContains(t, err, "no-such-lock")
	var ce *harness.ComponentError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, components.ControllerManagerName, ce.Component)
	assert.Equal(t, harness.PhaseStart, ce.Phase, "it failed in Run, after Config bound the port")

	// Checked at once, before any garbage collection could close the
	// listener through its finalizer.
	assert.True(t, testenv.PortFree(port), "the secure port %d is free again once Run returned", port)
	goleak.VerifyNone(t, baseline)
}

// TestControllerManagerReleasesInformerNameAfterFailure: upstream's
// CreateControllerContext registers the process-wide informer name
// "kube-controller-manager" and releases it only through the informer
// factory's Shutdown, which upstream's Run defers once every controller was
// built; when CreateControllerContext itself fails after registering (here:
// the apiserver does not answer /healthz within upstream's 10 s), the name
// stays registered and no controller-manager could start again in this
// process. The adapter removes the registration when upstream's Run
// returned. In-process, with a private target, no apiserver.
func TestControllerManagerReleasesInformerNameAfterFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for upstream's 10 s apiserver health timeout")
	}
	baseline := goleak.IgnoreCurrent()
	port, err := testenv.FreePort()
	require.NoError(t, err)
	target := privateTarget(t)
	h := &harness.Harness{Target: &target}
	require.NoError(t, h.Add(components.NewControllerManager(), []string{
		"--kubeconfig=" + unreachableKubeconfig(t),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = h.Run(ctx)
	require.Error(t, err)
	t.Logf("the harness said: %v", err)
	assert.ErrorContains(t, err, components.UpstreamKCMAPIServerUnhealthy)
	assert.ErrorIs(t, err, components.ErrAPIServerUnhealthy, "the adapter names the cause, which RecoverLostLease keeps")

	n, err := cache.NewInformerName(components.ControllerManagerName)
	require.NoError(t, err, "the informer name upstream registered is free again once Run returned")
	n.Release()
	// Upstream's server closes its listener when its context ends, in a
	// goroutine of its own: not necessarily before Run returned.
	assert.Eventually(t, func() bool { return testenv.PortFree(port) }, 5*time.Second, 20*time.Millisecond, "the secure port %d is free again", port)
	goleak.VerifyNone(t, baseline)
}

// unreachableKubeconfig writes a kubeconfig whose server refuses
// connections (port 1 on loopback).
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: nobody
  user: {token: unused}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
`), 0o600))
	return path
}
