package components_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/internal/inproc"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
)

func init() { scenarios["in-process"] = scenarioInProcess }

// TestAPIServerInProcess runs the control plane with the controller-manager
// connected through APIServer.InProcess and every network dial of its
// configuration refused (as the admin, without service-account
// credentials, so that all its clients have the transport): it leads and makes a Deployment's Pods, so its
// informers' watches and its writes were all served in process. Clients
// made in process with the scheduler's certificate, the controller-
// manager's, and none are authenticated and authorized as those: the
// apiserver's SelfSubjectReview names each, the scheduler may not create a
// Namespace, no credentials get 401. A watch sees an event and ends when
// stopped. After a restart of the apiserver (its dependents restarted with
// it) the same configuration is served by the new apiserver, and the
// renewed controller-manager calls OnControllersBuilt again (once per
// build); once the
// control plane stopped, a request fails with *inproc.NotServingError and
// no goroutine is left.
func TestAPIServerInProcess(t *testing.T) {
	requireVersion(t)
	runChild(t, "in-process")
}

func scenarioInProcess(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()

	var dials atomic.Int64
	refuse := func(context.Context, string, string) (net.Conn, error) {
		dials.Add(1)
		return nil, errors.New("dialled: this client was to be served in process")
	}
	// The controller-manager without service-account credentials, whose
	// clients are derived without the transport and dial (see ConnectVia),
	// and so as the admin: its own user may not do its controllers' work.
	admin, err := env.AdminConfig()
	require.NoError(t, err)
	api := components.NewAPIServer()
	var builds atomic.Int32
	kcm := components.NewControllerManager().ConnectVia(func(cfg *rest.Config) error {
		cfg.TLSClientConfig = admin.TLSClientConfig
		if err := api.InProcess(cfg); err != nil {
			return err
		}
		cfg.Dial = refuse
		return nil
	}).OnControllersBuilt(func() { builds.Add(1) })
	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, StopTimeout: time.Minute}
	require.NoError(t, controlplane.Components{APIServer: api, Scheduler: components.NewScheduler(), ControllerManager: kcm}.Add(h, map[string][]string{
		components.APIServerName:         env.APIServerArgs(),
		components.SchedulerName:         env.SchedulerArgs(),
		components.ControllerManagerName: env.ControllerManagerArgs("--use-service-account-credentials=false"),
	}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, h, 2*time.Minute)
	builtOnce := func(n int32) func() bool { return func() bool { return builds.Load() == n } }
	require.Eventually(t, builtOnce(1), 5*time.Second, 10*time.Millisecond, "OnControllersBuilt, once its controllers were built")

	client, _ := adminClient(t, env)
	require.NoError(t, testenv.CreateReadyNode(ctx, client, "node-1"))
	require.NoError(t, testenv.CreateDeployment(ctx, client, "web", 2))
	require.NoError(t, testenv.WaitBound(ctx, client, "app=web", 2, "node-1", 60*time.Second))
	assert.Zero(t, dials.Load(), "the controller-manager dialled the apiserver")

	inProcess := func(cert, key []byte) *kubernetes.Clientset {
		cfg := &rest.Config{Host: env.APIServerURL(), TLSClientConfig: rest.TLSClientConfig{
			CAData: env.PKI.ServerCA.CertPEM(), CertData: cert, KeyData: key}, Dial: refuse}
		require.NoError(t, api.InProcess(cfg))
		return kubernetes.NewForConfigOrDie(cfg)
	}
	sched := inProcess(env.PKI.Scheduler.CertPEM, env.PKI.Scheduler.KeyPEM)
	for name, c := range map[string]*kubernetes.Clientset{
		"system:kube-scheduler":          sched,
		"system:kube-controller-manager": inProcess(env.PKI.ControllerManager.CertPEM, env.PKI.ControllerManager.KeyPEM),
	} {
		review, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, name, review.Status.UserInfo.Username)
	}
	_, err = sched.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "not-the-schedulers"}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the scheduler creating a Namespace: %v", err)
	_, err = inProcess(nil, nil).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "no credentials: %v", err)

	w, err := sched.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	require.NoError(t, err)
	select {
	case ev := <-w.ResultChan():
		assert.Equal(t, watch.Added, ev.Type)
	case <-time.After(30 * time.Second):
		t.Fatal("no event on the in-process watch")
	}
	w.Stop()
	assert.Zero(t, dials.Load(), "a client made with InProcess dialled the apiserver")

	require.NoError(t, h.Restart(ctx, components.APIServerName, env.APIServerArgs()))
	require.NoError(t, testenv.CreateDeployment(ctx, client, "after-restart", 1))
	require.NoError(t, testenv.WaitBound(ctx, client, "app=after-restart", 1, "node-1", 60*time.Second))
	require.Eventually(t, builtOnce(2), 5*time.Second, 10*time.Millisecond, "the renewed controller-manager built its controllers: OnControllersBuilt again")
	review, err := sched.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err, "a configuration made before the restart, served by the new apiserver")
	assert.Equal(t, "system:kube-scheduler", review.Status.UserInfo.Username)
	assert.Zero(t, dials.Load())

	require.NoError(t, harnesstest.Stop(t, cancel, done, 2*time.Minute), "a clean stop")
	assert.EqualValues(t, 2, builds.Load(), "once per build: not again at the stop")
	_, err = sched.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{})
	var notServing *inproc.NotServingError
	assert.ErrorAs(t, err, &notServing, "after the stop")
	env.Close()
	fmt.Println("after stop: the process is alive")
	http.DefaultClient.CloseIdleConnections()
	verifyNoLeaks(t, baseline, 30*time.Second)
}
