package flannel_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping"
)

// TestFlannelInNetns runs flannel for a node against a real apiserver, in
// a network namespace of its own with one other Node (10.42.1.0/24 at
// 192.0.2.11), once per backend, each in a fresh process: the lease is
// its Node's pod CIDR; its Node gets flannel's annotations and
// NetworkUnavailable=False; the route to the other Node's pod CIDR
// follows that Node (made, then removed with it); the masquerade and
// forward chains exist; its goroutines end after the stop; Cleanup leaves
// nothing of flannel's on the host. Needs root, unshare, ip and iptables.
func TestFlannelInNetns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an apiserver: not in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	for _, cmd := range []string{"unshare", "ip", "iptables", "iptables-save"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("%s is not installed", cmd)
		}
	}
	if v := version.Get().GitVersion; !strings.HasPrefix(v, "v1.") {
		t.Fatalf("built with component-base version %q: run it as `make test-components` does (-ldflags -X k8s.io/component-base/version.gitVersion=...)", v)
	}
	for _, backend := range flannel.Backends() {
		t.Run(backend, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), backend+".log")
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			run, err := testenv.RunChildUnder(ctx, []string{"unshare", "--net"}, backend, logPath)
			require.NoError(t, err)
			if run.Err != nil || !run.Done {
				t.Fatalf("child %s: err=%v, end marker printed=%v; its last lines:\n%s", backend, run.Err, run.Done, testenv.Tail(run.Output, 80))
			}
			t.Logf("%s: results %v, child wall %s", backend, run.Results, run.Wall.Round(time.Millisecond))
		})
	}
}

const (
	network = "10.42.0.0/16"
	nodeIP  = "192.0.2.10"
	otherIP = "192.0.2.11"
)

// setupNetns gives this process's network namespace loopback and eth0
// (a veth whose peer stays here) with nodeIP and the default route.
func setupNetns(t *testing.T) {
	for _, c := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "eth0", "type", "veth", "peer", "name", "eth0p"},
		{"addr", "add", nodeIP + "/24", "dev", "eth0"},
		{"link", "set", "eth0", "up"},
		{"link", "set", "eth0p", "up"},
		{"route", "add", "default", "via", "192.0.2.1", "dev", "eth0"},
	} {
		out, err := exec.Command("ip", c...).CombinedOutput()
		require.NoError(t, err, "ip %v: %s", c, out)
	}
}

// otherNode is a Node as flannel on another node leaves it.
func otherNode(backend string) *corev1.Node {
	data := "null"
	if backend == flannel.VXLAN {
		data = `{"VNI":1,"VtepMAC":"02:00:00:00:00:0b"}`
	}
	p := flannel.AnnotationPrefix + "/"
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n2", Annotations: map[string]string{
			p + "backend-type": backend, p + "backend-data": data, p + "public-ip": otherIP, p + "kube-subnet-manager": "true",
		}},
		Spec: corev1.NodeSpec{PodCIDR: "10.42.1.0/24", PodCIDRs: []string{"10.42.1.0/24"}},
	}
}

// scenarioNetwork is TestFlannelInNetns's child for backend.
func scenarioNetwork(t *testing.T, backend string) {
	setupNetns(t)
	env, err := testenv.Start(t.TempDir())
	require.NoError(t, err)
	defer env.Close()
	cfg, err := env.AdminConfig()
	require.NoError(t, err)
	client := kubernetes.NewForConfigOrDie(cfg)

	nodesMade := make(chan struct{})
	dir := t.TempDir()
	f := flannel.New()
	h := &harness.Harness{StopTimeout: time.Minute, AfterBarrier: []harness.BarrierHook{components.AfterBarrier,
		func(*scoping.Plan) error { _, err := flannel.SetNodeNameEnv("n1"); return err }}}
	require.NoError(t, h.Add(components.NewAPIServer(), env.APIServerArgs()))
	require.NoError(t, h.Add(&harness.Func{ComponentName: "nodes", RunFunc: func(ctx context.Context) error {
		for _, n := range []*corev1.Node{
			// A kubelet registers its Node with annotations; flannel's
			// AcquireLease panics on a Node without any (a nil map).
			{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0"}}, Spec: corev1.NodeSpec{PodCIDR: "10.42.0.0/24", PodCIDRs: []string{"10.42.0.0/24"}}},
			otherNode(backend),
		} {
			if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		close(nodesMade)
		<-ctx.Done()
		return nil
	}, ReadyFunc: func(ctx context.Context) error {
		select {
		case <-nodesMade:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}, nil, components.APIServerName))
	require.NoError(t, h.Add(f, []string{"--kubeconfig-file=" + env.PKI.AdminKubeconfig, "--node-name=n1", "--public-ip=" + nodeIP,
		"--backend=" + backend, "--network=" + network, "--net-config-path=" + filepath.Join(dir, "net-conf.json"),
		"--subnet-file=" + filepath.Join(dir, "subnet.env")}, "nodes"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	done := harnesstest.StartReady(t, ctx, h, 2*time.Minute)
	testenv.ChildResult("start_to_ready", time.Since(start).Round(time.Millisecond))
	n, err := f.Network(ctx)
	require.NoError(t, err)
	wantMTU := 1500
	if backend == flannel.VXLAN {
		wantMTU = 1450
	}
	assert.Equal(t, flannel.Network{Backend: backend, ClusterCIDR: netip.MustParsePrefix(network), PodCIDR: netip.MustParsePrefix("10.42.0.0/24"),
		MTU: wantMTU, Iface: "eth0", PublicIP: netip.MustParseAddr(nodeIP)}, n)
	env1, err := os.ReadFile(filepath.Join(dir, "subnet.env"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("FLANNEL_NETWORK=%s\nFLANNEL_SUBNET=10.42.0.1/24\nFLANNEL_MTU=%d\nFLANNEL_IPMASQ=true\n", network, wantMTU), string(env1))

	n1, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	require.NoError(t, err)
	p := flannel.AnnotationPrefix + "/"
	assert.Equal(t, backend, n1.Annotations[p+"backend-type"])
	assert.Equal(t, nodeIP, n1.Annotations[p+"public-ip"])
	assert.Equal(t, "true", n1.Annotations[p+"kube-subnet-manager"])
	var unavailable corev1.NodeCondition
	for _, c := range n1.Status.Conditions {
		if c.Type == corev1.NodeNetworkUnavailable {
			unavailable = c
		}
	}
	assert.Equal(t, corev1.ConditionFalse, unavailable.Status, "NetworkUnavailable")
	assert.Equal(t, "FlannelIsUp", unavailable.Reason)

	// The route to n2's pod CIDR: through flannel.1 to n2's vxlan
	// address (its VTEP's MAC at n2's IP), or through n2's IP on eth0.
	other := netip.MustParsePrefix("10.42.1.0/24")
	var route string
	require.Eventually(t, func() bool {
		route = routeTo(t, other)
		return route != ""
	}, 10*time.Second, 50*time.Millisecond, "the route to n2's pod CIDR")
	if backend == flannel.VXLAN {
		assert.Equal(t, "via 10.42.1.0 dev flannel.1 onlink", route)
		link, err := netlink.LinkByName(flannel.VXLANDevice)
		require.NoError(t, err)
		assert.Equal(t, 1450, link.Attrs().MTU)
		fdb := run(t, "bridge", "fdb", "show", "dev", flannel.VXLANDevice)
		assert.Contains(t, fdb, "02:00:00:00:00:0b dst "+otherIP, "n2's VTEP at n2's IP")
		neigh := run(t, "ip", "neigh", "show", "dev", flannel.VXLANDevice)
		assert.Contains(t, neigh, "10.42.1.0 lladdr 02:00:00:00:00:0b")
	} else {
		assert.Equal(t, "via "+otherIP+" dev eth0", route)
	}
	rules := run(t, "iptables-save")
	assert.Contains(t, rules, "-A POSTROUTING -m comment --comment \"flanneld masq\" -j FLANNEL-POSTRTG")
	assert.Contains(t, rules, "-A FORWARD -m comment --comment \"flanneld forward\" -j FLANNEL-FWD")
	assert.Contains(t, rules, "-A FLANNEL-FWD -s "+network)

	// n2 leaves: its route goes.
	removed := time.Now()
	require.NoError(t, client.CoreV1().Nodes().Delete(ctx, "n2", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return routeTo(t, other) == "" }, 10*time.Second, 50*time.Millisecond, "the route to a deleted Node's pod CIDR")
	testenv.ChildResult("node_deleted_to_route_gone", time.Since(removed).Round(time.Millisecond))

	stopped := time.Now()
	require.NoError(t, harnesstest.Stop(t, cancel, done, time.Minute), "a clean stop")
	testenv.ChildResult("stop", time.Since(stopped).Round(time.Millisecond))
	settled := time.Now()
	require.Eventually(t, func() bool { return flannelGoroutines() == "" }, 20*time.Second, 100*time.Millisecond,
		"flannel's goroutines end after the stop")
	testenv.ChildResult("goroutines_settled", time.Since(settled).Round(time.Millisecond))

	require.NoError(t, flannel.Cleanup(netip.MustParsePrefix(network)))
	_, err = netlink.LinkByName(flannel.VXLANDevice)
	assert.Error(t, err, "flannel.1 removed")
	assert.NotContains(t, run(t, "iptables-save"), "FLANNEL")
	assert.NotContains(t, run(t, "ip", "route"), "10.42.")
	require.NoError(t, flannel.Cleanup(netip.MustParsePrefix(network)), "a second cleanup finds nothing to do")
}

// routeTo is `ip route` of dst without it ("via ... dev ... [onlink]"),
// or "".
func routeTo(t *testing.T, dst netip.Prefix) string {
	for _, line := range strings.Split(run(t, "ip", "route", "show", dst.String()), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return strings.TrimSpace(strings.TrimPrefix(line, dst.String()))
		}
	}
	return ""
}

func run(t *testing.T, name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
	return string(out)
}

// flannelGoroutines is the stack of every goroutine in flannel's code or
// its adapter's, or "".
func flannelGoroutines() string {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	var left []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "flannel-io/flannel") || strings.Contains(g, "components/flannel.(*Flannel)") {
			left = append(left, g)
		}
	}
	return strings.Join(left, "\n\n")
}
