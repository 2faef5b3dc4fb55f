package components_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
)

// TestControllerManagerWithRESTConfig runs the control plane with the
// controller-manager given an in-memory rest.Config (testenv's PKI as
// bytes: the server CA, the controller-manager's client certificate and
// key) and none of --kubeconfig, --authentication-kubeconfig and
// --authorization-kubeconfig: it leads, creates a Deployment's ReplicaSet
// and Pods, which the scheduler binds; its requests went through the
// rest.Config's transport wrapper. The scheduler keeps its kubeconfig: its
// adapter cannot take a rest.Config (see README.md, Limits).
func TestControllerManagerWithRESTConfig(t *testing.T) {
	requireVersion(t)
	r := runChild(t, "rest-config")
	t.Logf("user agents of the controller-manager's requests through the rest.Config: %s", r.Results["user_agents"])
}

func scenarioRESTConfig(t *testing.T) {
	baseline := leakBaseline()
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()

	agents := &userAgents{seen: map[string]int{}}
	cfg := &rest.Config{
		Host: env.APIServerURL(),
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   env.PKI.ServerCA.CertPEM(),
			CertData: env.PKI.ControllerManager.CertPEM,
			KeyData:  env.PKI.ControllerManager.KeyPEM,
		},
		WrapTransport: agents.wrap,
	}
	var kcmArgs []string
	for _, a := range env.ControllerManagerArgs() {
		name, _, _ := strings.Cut(a, "=")
		if !slices.Contains([]string{"--kubeconfig", "--authentication-kubeconfig", "--authorization-kubeconfig"}, name) {
			kcmArgs = append(kcmArgs, a)
		}
	}
	kcm := components.NewControllerManager().WithRESTConfig(cfg)
	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, StopTimeout: time.Minute}
	require.NoError(t, h.Add(components.NewAPIServer(), env.APIServerArgs()))
	require.NoError(t, h.Add(components.NewScheduler(), env.SchedulerArgs(), components.APIServerName))
	require.NoError(t, h.Add(kcm, kcmArgs, components.APIServerName))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, h, 2*time.Minute)

	client, _ := adminClient(t, env)
	le := kcm.LeaderElection()
	require.True(t, le.Enabled)
	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, components.ControllerManagerName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, le.Identity, ptr.Deref(lease.Spec.HolderIdentity, ""), "the lease, taken through the rest.Config")

	require.NoError(t, testenv.CreateReadyNode(context.Background(), client, "node-1"))
	require.NoError(t, testenv.CreateDeployment(context.Background(), client, "web", 2))
	require.NoError(t, testenv.WaitBound(context.Background(), client, "app=web", 2, "node-1", 60*time.Second))

	err = harnesstest.Stop(t, cancel, done, 2*time.Minute)
	require.NoError(t, err, "a clean stop")

	seen := agents.suffixes()
	testenv.ChildResult("user_agents", strings.Join(seen, ","))
	for _, want := range []string{"kube-controller-manager", "shared-informers", "leader-election"} {
		assert.Contains(t, seen, want, "a request with upstream's user agent .../%s went through the rest.Config", want)
	}
	env.Close()
	fmt.Println("after stop: the process is alive")
	verifyNoLeaks(t, baseline, 30*time.Second)
}

// userAgents counts the requests a transport wrapper saw, by the last
// part of their user agent (upstream's client name).
type userAgents struct {
	mu   sync.Mutex
	seen map[string]int
}

func (u *userAgents) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		ua := r.UserAgent()
		u.mu.Lock()
		u.seen[ua[strings.LastIndex(ua, "/")+1:]]++
		u.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (u *userAgents) suffixes() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []string
	for s := range u.seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
