package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/test/machines"
)

// The tests with agents run each node on a machine of its own (package
// machines): a network namespace with eth0 on one LAN, its own routing
// table, 192.0.2.10 (the server), .11, .12, … and no route off the host.

// newLAN makes n machines for the test, torn down (whatever is left in
// them killed) when it ends, after the nodes it started stopped. Tests
// using it do not run in parallel: the prefix is the process's.
func newLAN(t *testing.T, n int) *machines.LAN {
	t.Helper()
	lan, err := machines.New(machines.DefaultPrefix(), n)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, lan.Close(), "tearing the machines down") })
	return lan
}

// startOnMachine runs the binary with args on machine m (nsenter execs
// it: the command's process is k3s-like).
func startOnMachine(t *testing.T, m machines.Machine, dataDir string, args ...string) *nodeServer {
	t.Helper()
	cmd := m.Command(binary, args...)
	s := startNode(t, dataDir, cmd, args[0])
	s.pid = cmd.Process.Pid
	return s
}

// startServerOn runs `k3s-like server` with its node node-a on machine m.
func startServerOn(t *testing.T, m machines.Machine, dataDir string, extra ...string) *nodeServer {
	t.Helper()
	return startOnMachine(t, m, dataDir, append([]string{"server", "--data-dir=" + dataDir, "--node-name=node-a"}, extra...)...)
}

// startAgentOn runs `k3s-like agent` on dataDir on machine m.
func startAgentOn(t *testing.T, m machines.Machine, dataDir string, extra ...string) *nodeServer {
	t.Helper()
	return startOnMachine(t, m, dataDir, append([]string{"agent", "--data-dir=" + dataDir}, extra...)...)
}

// clusterAgentArgs are the flags of the agent node on machine m joining
// the server of serverDir: its name and IP, and the cgroup root and pod
// logs directory of its own that a second kubelet on this host needs.
func clusterAgentArgs(t *testing.T, m machines.Machine, serverDir, agentDir, node string) []string {
	t.Helper()
	config := filepath.Join(agentDir, "kubelet.yaml")
	require.NoError(t, os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: "+
		filepath.Join(agentDir, "pod-logs")+"\n"), 0o600))
	return []string{"--server=https://" + nodeIP + ":6443", "--token-file=" + filepath.Join(serverDir, "token"),
		"--node-name=" + node, "--node-ip=" + m.IP.String(), "--kubelet-arg=cgroup-root=" + nodeCgroupRoot(t, node), "--kubelet-arg=config=" + config}
}

// Bounds of the cluster test, each a few times what it took here
// (2 CPUs, the suite's other tests not running; the measured times are
// logged as CLUSTER lines): a node Ready after its exec (server 16 s,
// agents 15 s while the other starts), a Pod Ready or reaching another
// node (2-5 s), a Service answering through kube-proxy's rules (1 s).
const (
	nodeReadyBound = 90 * time.Second
	podBound       = 60 * time.Second
	serviceBound   = 30 * time.Second
)

// webPod is a busybox httpd Pod on node answering its node's name, and
// logging each request's client address (-v).
func webPod(name, node, busybox string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %[1]s, labels: {app: %[1]s}}
spec:
  nodeName: %[2]s
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %[3]s
    imagePullPolicy: Never
    env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
    command: ["sh", "-c", "mkdir -p /www && echo $NODE >/www/index.html && exec httpd -f -v -p 80 -h /www"]
    readinessProbe: {tcpSocket: {port: 80}, periodSeconds: 1}
`, name, node, busybox)
}

// netbenchPod is a netbench Pod on node running args; with hostNetwork
// in the node's network namespace.
func netbenchPod(name, node string, hostNetwork bool, restart string, args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  hostNetwork: %t
  restartPolicy: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: netbench
    image: kubeharness.local/netbench:v1
    imagePullPolicy: Never
    args: [%s]
`, name, node, hostNetwork, restart, strings.Join(q, ", "))
}

// podIP waits until the Pod is Ready and returns its IP.
func (s *nodeServer) podIP(name string, timeout time.Duration) string {
	s.t.Helper()
	s.waitFor("True", timeout, "get", "pod", name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
	return s.kubectl("get", "pod", name, "-o", "jsonpath={.status.podIP}")
}

// reachedAt waits until the netbench reach Pod name has reached its
// target and returns when it did.
func (s *nodeServer) reachedAt(name string, timeout time.Duration) time.Time {
	s.t.Helper()
	s.waitFor("Succeeded", timeout, "get", "pod", name, "-o", "jsonpath={.status.phase}")
	out := s.kubectl("logs", name)
	m := regexp.MustCompile(`reach reached=([0-9]+) attempts=([0-9]+)`).FindStringSubmatch(out)
	require.NotNil(s.t, m, "%s's log: %s", name, out)
	ns, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(s.t, err)
	return time.Unix(0, ns)
}

// wget is `wget -qO- url` in the web Pod pod, bounded by busybox's
// timeout (its wget -T crashes).
func (s *nodeServer) wget(pod, url string) (string, error) {
	return s.kubectlErr("exec", pod, "--", "timeout", "5", "wget", "-qO-", url)
}

// eventuallyAnswers waits until get returns want.
func eventuallyAnswers(t *testing.T, want string, timeout time.Duration, get func() (string, error), msg string, args ...any) time.Duration {
	t.Helper()
	start := time.Now()
	var out string
	var err error
	ok := assert.Eventually(t, func() bool {
		out, err = get()
		return err == nil && out == want
	}, timeout, 250*time.Millisecond, append([]any{msg}, args...)...)
	if !ok {
		t.Logf("last answer: %q, %v", out, err)
	}
	return time.Since(start)
}

// TestClusterNetworkVXLAN: a server and two agents, each on a machine of
// its own, with flannel's vxlan backend (the default). See
// testClusterNetwork.
func TestClusterNetworkVXLAN(t *testing.T) { testClusterNetwork(t, "vxlan") }

// TestClusterNetworkHostGW: the same with --flannel-backend=host-gw (make
// test-cluster).
func TestClusterNetworkHostGW(t *testing.T) { testClusterNetwork(t, "host-gw") }

// testClusterNetwork: node-a (the server), node-b and node-c (agents)
// on three machines of one LAN. Each agent's first Pod reaches a Pod on
// node-a (timed from the agent's exec); a Pod on each node reaches a Pod
// on every other by its IP, which the server sees as the client's
// (no masquerade); a ClusterIP and a NodePort (at node-a's IP, from
// node-b's host) whose only endpoint is on node-c answer; a Service name
// resolves through CoreDNS (on node-a) from a Pod on each node; the
// round-trip time and throughput between Pods on node-a and node-b, and
// between the two hosts, are measured (NET lines). node-c's agent is
// stopped and started again: it rejoins, a new Pod there reaches node-a
// (timed again), its Pods reach and are reached again; every process
// exits 0 on SIGTERM.
func testClusterNetwork(t *testing.T, backend string) {
	requireNodeHost(t)
	busybox := busyboxImage(t)
	began := time.Now()
	lan := newLAN(t, 3)
	serverDir := t.TempDir()
	s := startServerOn(t, lan.Machines[0], serverDir, "--flannel-backend="+backend)
	ready := s.waitNodeReady(nodeReadyBound)
	t.Logf("CLUSTER %s: node-a Ready %.1fs after the server's exec", backend, ready.Seconds())
	wantMTU := map[string]string{"vxlan": "1450", "host-gw": "1500"}[backend]
	conflist, err := os.ReadFile(filepath.Join(serverDir, "agent", "etc", "cni", "net.d", "10-k3s-like.conflist"))
	require.NoError(t, err)
	assert.Contains(t, string(conflist), `"ipMasq": false, "hairpinMode": true, "mtu": `+wantMTU+`,`, "flannel's MTU, no masquerade by the bridge")

	// The agents' first Pods wait for them, bound to their nodes, and
	// dial web-a until they connect.
	s.apply(webPod("web-a", "node-a", busybox))
	ips := map[string]string{"node-a": s.podIP("web-a", podBound)}
	nodes := []string{"node-a", "node-b", "node-c"}
	agentArgs := map[string][]string{}
	agents := map[string]*nodeServer{}
	for i, node := range nodes[1:] {
		s.apply(netbenchPod("reach-"+node, node, false, "Never", "reach", "-addr", ips["node-a"]+":80"))
		agentDir := t.TempDir()
		agentArgs[node] = append([]string{"agent", "--data-dir=" + agentDir}, clusterAgentArgs(t, lan.Machines[i+1], serverDir, agentDir, node)...)
		agents[node] = startOnMachine(t, lan.Machines[i+1], agentDir, agentArgs[node]...)
	}
	for _, node := range nodes[1:] {
		a := agents[node]
		ready := s.waitNamedNodeReady(node, a, nodeReadyBound)
		reached := s.reachedAt("reach-"+node, podBound)
		t.Logf("CLUSTER %s: %s Ready %.1fs after its agent's exec; its first Pod reached a Pod on node-a %.1fs after the exec",
			backend, node, ready.Seconds(), reached.Sub(a.started).Seconds())
	}

	for _, node := range nodes[1:] {
		s.apply(webPod("web-"+node[len("node-"):], node, busybox))
	}
	for _, node := range nodes[1:] {
		ips[node] = s.podIP("web-"+node[len("node-"):], podBound)
	}
	web := func(node string) string { return "web-" + node[len("node-"):] }

	// Pod ↔ Pod by IP, every pair, both ways; the server sees the
	// client Pod's address.
	podToPod := func(when string) {
		t.Helper()
		for _, from := range nodes {
			for _, to := range nodes {
				if from == to {
					continue
				}
				out, err := s.wget(web(from), "http://"+ips[to]+"/")
				assert.NoError(t, err, "%s: %s → %s (%s): %s", when, from, to, ips[to], out)
				assert.Equal(t, to+"\n", out, "%s: %s → %s", when, from, to)
			}
		}
		logs := s.kubectl("logs", web("node-a"))
		for _, from := range nodes[1:] {
			// busybox httpd -v logs the peer as IP:port, or [::ffff:IP]:port
			// when it listens on IPv6 too (upstream's build).
			client := regexp.MustCompile(`(?m)^(\[::ffff:)?` + regexp.QuoteMeta(ips[from]) + `\]?:[0-9]+: `)
			assert.Regexp(t, client, logs, "%s: web-a logged %s's Pod IP as the client's", when, from)
		}
	}
	podToPod("after the join")

	// A ClusterIP and a NodePort whose only endpoint is on node-c.
	s.apply(`apiVersion: v1
kind: Service
metadata: {name: web-c}
spec:
  type: NodePort
  selector: {app: web-c}
  ports: [{port: 80, targetPort: 80}]
`)
	clusterIP := s.kubectl("get", "service", "web-c", "-o", "jsonpath={.spec.clusterIP}")
	nodePort := s.kubectl("get", "service", "web-c", "-o", "jsonpath={.spec.ports[0].nodePort}")
	took := eventuallyAnswers(t, "node-c\n", serviceBound, func() (string, error) { return s.wget("web-a", "http://"+clusterIP+"/") },
		"the ClusterIP %s from node-a's Pod", clusterIP)
	t.Logf("CLUSTER %s: the ClusterIP answered from node-a %.1fs after the Service's creation", backend, took.Seconds())
	eventuallyAnswers(t, "node-c\n", serviceBound, func() (string, error) {
		out, err := lan.Machines[1].Command("busybox", "timeout", "5", "busybox", "wget", "-qO-", "http://"+nodeIP+":"+nodePort+"/").CombinedOutput()
		return string(out), err
	}, "the NodePort %s at node-a's IP from node-b's host", nodePort)

	// CoreDNS (on node-a) from a Pod on each node.
	s.waitFor("1", podBound, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.readyReplicas}")
	dnsNode := s.kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[0].spec.nodeName}")
	t.Logf("CLUSTER %s: CoreDNS runs on %s", backend, dnsNode)
	for _, node := range nodes {
		eventuallyAnswers(t, "node-c\n", serviceBound, func() (string, error) { return s.wget(web(node), "http://web-c.default.svc.cluster.local/") },
			"web-c by name from %s's Pod", node)
		out, err := s.kubectlErr("exec", web(node), "--", "nslookup", "web-c.default.svc.cluster.local")
		assert.NoError(t, err, "%s: %s", node, out)
		assert.Contains(t, out, clusterIP, "%s: nslookup", node)
	}

	measureNetwork(t, s, backend)

	// node-c's agent stops and starts again.
	containerID := `jsonpath={.status.containerStatuses[0].containerID} {.status.conditions[?(@.type=="Ready")].status}`
	before := s.kubectl("get", "pod", "web-c", "-o", containerID)
	c := agents["node-c"]
	require.NoError(t, c.stop(), "SIGTERM: node-c's agent stops cleanly")
	s.kubectl("delete", "pod", "reach-node-c", "--wait=false")
	s.apply(netbenchPod("reach-again", "node-c", false, "Never", "reach", "-addr", ips["node-a"]+":80"))
	c = startOnMachine(t, lan.Machines[2], c.dataDir, agentArgs["node-c"]...)
	agents["node-c"] = c
	reached := s.reachedAt("reach-again", nodeReadyBound)
	t.Logf("CLUSTER %s: node-c's agent again: its first Pod reached a Pod on node-a %.1fs after the exec", backend, reached.Sub(c.started).Seconds())
	// web-c runs again, in a new container (the stop removed its sandbox).
	require.Eventually(t, func() bool {
		out, err := s.kubectlErr("get", "pod", "web-c", "-o", containerID)
		return err == nil && out != before && strings.HasSuffix(out, " True")
	}, podBound, 250*time.Millisecond, "web-c Ready again in a new container (was %s)", before)
	ips["node-c"] = s.podIP("web-c", podBound)
	podToPod("after node-c's agent restarted")
	eventuallyAnswers(t, "node-c\n", serviceBound, func() (string, error) { return s.wget("web-b", "http://"+clusterIP+"/") },
		"the ClusterIP from node-b's Pod, its endpoint restarted on node-c")

	for _, node := range nodes[1:] {
		require.NoError(t, agents[node].stop(), "SIGTERM: %s's agent stops cleanly", node)
	}
	require.NoError(t, s.stop(), "SIGTERM: the server stops cleanly")
	t.Logf("CLUSTER %s: the whole test took %.1fs", backend, time.Since(began).Seconds())
}

// measureNetwork measures TCP between netbench Pods on node-a and node-b
// (the Pod network) and between the two hosts (hostNetwork Pods: the
// LAN alone), and logs NET lines.
func measureNetwork(t *testing.T, s *nodeServer, backend string) {
	t.Helper()
	// hostNetwork Pods: more than the default Pod Security level (baseline).
	s.kubectl("label", "--overwrite", "namespace", "default", "pod-security.kubernetes.io/enforce=privileged")
	s.apply(netbenchPod("bench-a", "node-a", false, "Always", "serve"))
	s.apply(netbenchPod("bench-b", "node-b", false, "Always", "serve"))
	s.apply(netbenchPod("host-a", "node-a", true, "Always", "serve", "-listen", ":5202"))
	s.apply(netbenchPod("host-b", "node-b", true, "Always", "serve", "-listen", ":5202"))
	for _, p := range []string{"bench-a", "bench-b", "host-a", "host-b"} {
		s.waitFor("Running", podBound, "get", "pod", p, "-o", "jsonpath={.status.phase}")
	}
	benchA := s.kubectl("get", "pod", "bench-a", "-o", "jsonpath={.status.podIP}")
	for _, path := range []struct{ name, from, to string }{
		{"pod node-b → pod node-a", "bench-b", benchA + ":5201"},
		{"host node-b → host node-a", "host-b", nodeIP + ":5202"},
	} {
		var out string
		require.Eventually(t, func() bool { // the server listens a moment after Running
			var err error
			out, err = s.kubectlErr("exec", path.from, "--", "/netbench", "rtt", "-addr", path.to, "-n", "2000")
			return err == nil
		}, serviceBound, 250*time.Millisecond, "netbench rtt %s: %s", path.name, out)
		t.Logf("NET %s %s: %s", backend, path.name, strings.TrimSpace(out))
		out, err := s.kubectlErr("exec", path.from, "--", "/netbench", "tput", "-addr", path.to, "-d", "3s")
		require.NoError(t, err, out)
		t.Logf("NET %s %s: %s", backend, path.name, strings.TrimSpace(out))
	}
}
