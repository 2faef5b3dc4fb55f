package components_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping"
)

func init() {
	scenarios["restart-scheduler"] = scenarioRestartScheduler
}

// TestRestartScheduler restarts the real kube-scheduler with new arguments
// (another lease duration, a second scheduler profile from a --config file)
// while the apiserver and the controller-manager keep running and Pods keep
// being created; then tries a restart that would change a kube gate: a
// conflict, and the scheduler that runs keeps binding Pods.
func TestRestartScheduler(t *testing.T) {
	requireVersion(t)
	r := runChild(t, "restart-scheduler")
	t.Logf("restart of the scheduler: %s; Pods created during it: %s, all bound %s after it returned; longest create→bound during the run %s",
		r.Results["restart"], r.Results["created_during_restart"], r.Results["bound_after_restart"], r.Results["max_bind_latency"])
}

func scenarioRestartScheduler(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	cp := newControlPlane(t, env, nil, []string{"--leader-elect-lease-duration=15s"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, cp.h, 2*time.Minute)
	client, _ := adminClient(t, env)
	require.NoError(t, testenv.CreateReadyNode(context.Background(), client, "node-1"))
	assert.Equal(t, int32(15), leaseSeconds(t, client), "the first scheduler's lease duration")

	// Pods keep coming while the scheduler restarts.
	load := &podLoad{client: client}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadDone sync.WaitGroup
	loadDone.Go(func() { load.run(loadCtx, "default") })
	require.NoError(t, testenv.WaitBound(context.Background(), client, "load=yes", 5, "", time.Minute))

	config := filepath.Join(t.TempDir(), "scheduler.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
profiles:
- schedulerName: default-scheduler
- schedulerName: second-scheduler
`, env.PKI.SchedulerKubeconfig)), 0o600))
	createdBefore := load.created.Load()
	restartStart := time.Now()
	require.NoError(t, cp.h.Restart(ctx, components.SchedulerName, env.SchedulerArgs("--config="+config, "--leader-elect-lease-duration=20s")))
	restarted := time.Since(restartStart)
	testenv.ChildResult("restart", restarted.Round(time.Millisecond))
	testenv.ChildResult("created_during_restart", load.created.Load()-createdBefore)
	assert.True(t, cp.h.Status().Ready())
	apiRunning := false
	for _, c := range cp.h.Status().Components {
		if c.Name == components.APIServerName {
			apiRunning = c.State == harness.Ready && c.Since.Before(restartStart)
		}
	}
	assert.True(t, apiRunning, "the apiserver was not restarted")
	waitLease(t, client, 20)

	// The new profile exists only in the new scheduler.
	_, err = client.CoreV1().Pods("default").Create(ctx, pod("second", "second-scheduler"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, testenv.WaitBound(context.Background(), client, "app=second", 1, "", time.Minute))
	stopLoad()
	loadDone.Wait()
	boundStart := time.Now()
	require.NoError(t, testenv.WaitBound(context.Background(), client, "load=yes", int(load.created.Load()), "", time.Minute))
	testenv.ChildResult("bound_after_restart", time.Since(boundStart).Round(time.Millisecond))
	testenv.ChildResult("max_bind_latency", maxBindLatency(t, client, "default", "load=yes").Round(time.Millisecond))

	// A restart that would change a process-wide gate: a conflict; the
	// running scheduler is untouched and keeps binding.
	before := cp.h.Status()
	err = cp.h.Restart(ctx, components.SchedulerName, env.SchedulerArgs("--config="+config, "--feature-gates="+schedulerGate+"=true"))
	var ce *scoping.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.ErrorContains(t, err, fmt.Sprintf(`feature gate %q: kube-scheduler sets true (--feature-gates=%s=true): feature gate %q is false in the running control plane`, schedulerGate, schedulerGate, schedulerGate))
	for i, c := range cp.h.Status().Components {
		assert.Equal(t, before.Components[i].Since, c.Since, "%s untouched", c.Name)
	}
	_, err = client.CoreV1().Pods("default").Create(ctx, pod("after-conflict", ""), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, testenv.WaitBound(context.Background(), client, "app=after-conflict", 1, "", time.Minute))

	err = harnesstest.Stop(t, cancel, done, 2*time.Minute)
	require.NoError(t, err, "a clean stop")
	env.Close()
	verifyNoLeaks(t, baseline, 30*time.Second)
}

// podLoad creates a bare Pod every 100 ms until its context ends.
type podLoad struct {
	client  kubernetes.Interface
	created atomic.Int64
}

func (l *podLoad) run(ctx context.Context, ns string) {
	for i := 0; ctx.Err() == nil; i++ {
		p := pod(fmt.Sprintf("load-%d", i), "")
		p.Labels["load"] = "yes"
		if _, err := l.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err == nil {
			l.created.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func pod(name, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers:    []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// maxBindLatency is the longest time from a Pod's creation to its
// PodScheduled condition, over the Pods matching selector.
func maxBindLatency(t *testing.T, client kubernetes.Interface, ns, selector string) time.Duration {
	pods, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	var worst time.Duration
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				worst = max(worst, c.LastTransitionTime.Sub(p.CreationTimestamp.Time))
			}
		}
	}
	return worst
}

func leaseSeconds(t *testing.T, client kubernetes.Interface) int32 {
	t.Helper()
	var secs int32
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, components.SchedulerName, metav1.GetOptions{})
		if err != nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		secs = *l.Spec.LeaseDurationSeconds
		return true, nil
	}))
	return secs
}

func waitLease(t *testing.T, client kubernetes.Interface, want int32) {
	t.Helper()
	var last int32
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, components.SchedulerName, metav1.GetOptions{})
		if err != nil || l.Spec.LeaseDurationSeconds == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return false, nil
		}
		last = *l.Spec.LeaseDurationSeconds
		return last == want, nil
	})
	require.NoError(t, err, "the scheduler's lease has duration %ds, want %ds", last, want)
}
