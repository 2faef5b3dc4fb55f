package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/node/runtime"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/mounts"
)

// servicesManifest is a Deployment of two web Pods behind a ClusterIP
// Service and a NodePort Service, and a client Pod that has the incluster
// program (test/e2e/incluster) at /incluster and may list namespaces.
const servicesManifest = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      tolerations: [{key: kubeharness.io/e2e, operator: Exists}]
      containers:
      - name: web
        image: %[1]s
        imagePullPolicy: Never
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web-np}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: client}
spec:
  terminationGracePeriodSeconds: 1
  tolerations: [{key: kubeharness.io/e2e, operator: Exists}]
  containers:
  - name: c
    image: %[1]s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    volumeMounts: [{name: incluster, mountPath: /incluster, readOnly: true}]
  volumes:
  - name: incluster
    hostPath: {path: %[2]q, type: File}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-list-namespaces}
rules: [{apiGroups: [""], resources: [namespaces], verbs: [list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-list-namespaces}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-list-namespaces}
subjects: [{kind: ServiceAccount, name: default, namespace: default}]
`

// buildInCluster builds test/e2e/incluster as a static binary (the busybox
// image has no C library) and returns its path.
func buildInCluster(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "incluster")
	cmd := exec.Command("go", "build", "-o", out, "./incluster")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	return out
}

// kubectlIn runs `k3s-like kubectl` with the server's admin kubeconfig
// and returns its output and error (s.kubectl when it must succeed).
func kubectlIn(s *server, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.Command(binary, append([]string{"kubectl", "--kubeconfig", filepath.Join(s.dataDir, "admin.kubeconfig")}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// hostRules is what this network namespace's iptables-save and
// `nft list ruleset` say.
func hostRules(t *testing.T) string {
	t.Helper()
	ipt, err := exec.Command("iptables-save").CombinedOutput()
	require.NoError(t, err, "%s", ipt)
	nft, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	require.NoError(t, err, "%s", nft)
	return string(ipt) + string(nft)
}

// proxyLines are the lines of rules that are kube-proxy's or the kubelet's.
func proxyLines(rules string) []string {
	var out []string
	for _, l := range strings.Split(rules, "\n") {
		if strings.Contains(l, "KUBE-") || strings.Contains(l, "table ip kube-proxy") || strings.Contains(l, "table ip6 kube-proxy") {
			out = append(out, l)
		}
	}
	return out
}

// TestNodeServices: with kube-proxy in iptables mode (the default), a
// Deployment of two Pods behind a ClusterIP Service answers through the
// Service IP from a third Pod (both Pods answer), a NodePort answers on
// the node IP, a Pod reaches the apiserver through the kubernetes Service
// with its ServiceAccount token, deleting a Service removes its rules; a
// normal stop leaves kube-proxy's rules (counted), a restart programs the
// Services again, and a stop with --cleanup-on-stop leaves no KUBE-* rule.
func TestNodeServices(t *testing.T) { testNodeServices(t, "iptables") }

// TestNodeServicesNFTables: the same in kube-proxy's nftables mode, with
// one run, stopped with --cleanup-on-stop; then what deleting the running
// node's Node does (deleteRunningNode).
func TestNodeServicesNFTables(t *testing.T) { testNodeServices(t, "nftables") }

func testNodeServices(t *testing.T, mode string) {
	if inNodeNetns(t) {
		return // run again inside a network namespace: its result is this test's
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Fatal("nft (installed by .ci/run) is needed")
	}
	incluster := buildInCluster(t)
	dir := t.TempDir()
	s := newServer(t, dir)
	s.node = true
	putNodeImages(t, dir)
	var extra []string
	if mode == "nftables" {
		extra = append(extra, "--kube-proxy-arg=proxy-mode="+mode, "--cleanup-on-stop")
	}
	started := time.Now()
	s.start(extra...)
	s.waitReady(3 * time.Minute)
	kubectl := s.kubectl
	manifest := filepath.Join(t.TempDir(), "services.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(fmt.Sprintf(servicesManifest, busyboxImage(t), incluster)), 0o600))
	require.Eventually(t, func() bool {
		_, err := kubectlIn(s, "get", "serviceaccount", "default")
		return err == nil
	}, 60*time.Second, 250*time.Millisecond, "the controller-manager made the default ServiceAccount")
	// The client's hostPath volume: more than the default Pod Security
	// level (baseline).
	kubectl("label", "--overwrite", "namespace", "default", "pod-security.kubernetes.io/enforce=privileged")
	kubectl("apply", "-f", manifest)
	kubectl("rollout", "status", "deployment/web", "--timeout=120s")
	kubectl("wait", "--for=condition=Ready", "pod/client", "--timeout=120s")
	clusterIP := kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	nodePort := kubectl("get", "service", "web-np", "-o", "jsonpath={.spec.ports[0].nodePort}")
	pods := strings.Fields(kubectl("get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"))
	require.Len(t, pods, 2)
	// (busybox-static's wget -T segfaults, Debian 1:1.35.0-4+deb12u1+b1: the
	// timeout applet bounds it instead.)
	get := func(url string) (string, error) {
		return kubectlIn(s, "exec", "client", "--", "timeout", "3", "wget", "-q", "-O", "-", url)
	}

	t.Run("cluster IP reaches both Pods", func(t *testing.T) {
		seen := map[string]bool{}
		var first time.Duration
		require.Eventually(t, func() bool {
			out, err := get("http://" + clusterIP + "/index.html")
			if err == nil {
				if first == 0 {
					first = time.Since(started)
				}
				seen[strings.TrimSpace(out)] = true
			}
			return len(seen) == 2
		}, 90*time.Second, 200*time.Millisecond, "answers from both Pods through %s: %v", clusterIP, seen)
		assert.True(t, seen[pods[0]] && seen[pods[1]], "the answers are the Pods' names %v: %v", pods, seen)
		t.Logf("SERVICES %s: a Service answered %.1fs after the server's exec", mode, first.Seconds())
	})
	t.Run("node port on the node IP", func(t *testing.T) {
		url := "http://" + nodeIP + ":" + nodePort + "/index.html"
		out, err := get(url)
		require.NoError(t, err, "from a Pod: %s", out)
		assert.Contains(t, pods, strings.TrimSpace(out))
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
		require.NoError(t, err, "from the node")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Contains(t, pods, strings.TrimSpace(string(b)))
	})
	t.Run("in-cluster config through the kubernetes Service", func(t *testing.T) {
		out, err := kubectlIn(s, "exec", "client", "--", "/incluster")
		require.NoError(t, err, "%s", out)
		assert.Contains(t, strings.Fields(out), "kube-system")
		assert.Contains(t, strings.Fields(out), "default")
	})
	t.Run("deleting a Service removes its rules", func(t *testing.T) {
		rule := "-d " + clusterIP + "/32"
		if mode == "nftables" {
			rule = clusterIP + " . tcp . 80 "
		}
		require.Contains(t, hostRules(t), rule, "the Service's rule before")
		kubectl("delete", "service", "web")
		require.Eventually(t, func() bool { return !strings.Contains(hostRules(t), rule) }, 30*time.Second, 200*time.Millisecond,
			"the Service's rule (%s) removed", rule)
	})

	if mode == "iptables" {
		// A normal stop leaves kube-proxy's rules, as upstream's does.
		stopServer(t, s)
		left := proxyLines(hostRules(t))
		assert.NotEmpty(t, left, "kube-proxy's rules stay after a normal stop")
		t.Logf("RULES after a normal stop: %d lines of KUBE-* chains and rules, e.g.\n%s", len(left), strings.Join(left[:min(len(left), 8)], "\n"))
		// A restart programs the Services again, then a stop that cleans up.
		s.start("--cleanup-on-stop")
		s.waitReady(3 * time.Minute)
		require.Eventually(t, func() bool { return strings.Contains(hostRules(t), "--dport "+nodePort) }, 60*time.Second, 250*time.Millisecond,
			"kube-proxy programs the NodePort again after a restart")
	}
	stopServer(t, s)
	assert.Empty(t, proxyLines(hostRules(t)), "no KUBE-* rule or kube-proxy table after a stop with --cleanup-on-stop")
	assert.Contains(t, s.stderr.String(), "Removed the node's host rules")
	if mode == "nftables" {
		deleteRunningNode(t, s)
	}
}

// deleteRunningNode starts s again and deletes its Node: at v1.37
// upstream's kube-proxy exits the process (os.Exit(1), its NodeManager's
// "Node is being deleted"), taking the whole server down, as a kube-proxy
// process would exit; at v1.36 it does not, and the server runs on without
// a Node (the kubelet registers it at its next start).
func deleteRunningNode(t *testing.T, s *server) {
	t.Helper()
	s.start()
	s.waitReady(3 * time.Minute)
	out, err := kubectlIn(s, "delete", "node", "node-a", "--wait=false")
	if binaryMinor(t, binary) == "1.36" {
		require.NoError(t, err, "%s", out)
		// kube-proxy only logs; the kubelet registers its Node at start
		// only, so the server runs on without one.
		select {
		case <-s.exited:
			t.Fatalf("k3s-like exited: %v", s.exitErr)
		case <-time.After(20 * time.Second):
		}
		_, err := kubectlIn(s, "get", "node", "node-a")
		assert.Error(t, err, "the Node stays deleted while the server runs")
		stopServer(t, s)
		return
	}
	// kube-proxy exits on the deletion's watch event, which can come before
	// the apiserver has written the DELETE's response: a cut response is
	// the exit's, and a DELETE that failed leaves the process running,
	// which s.wait reports.
	if err != nil {
		t.Logf("NODE DELETED: the DELETE's response was cut by the exit: %s", strings.TrimSpace(out))
	}
	procs := nodeProcesses(t, s.cmd.Process.Pid, datadir.ContainerdSocket(s.dataDir))
	code, _ := s.wait(60 * time.Second)
	assert.Equal(t, 1, code, "the process exits with kube-proxy's exit code")
	assert.Contains(t, s.stderr.String(), `"Node is being deleted"`)
	// os.Exit skips the stop: the Pods' volume mounts and containerd's
	// sandbox mounts stay until unmounted, and containerd's shims (which
	// outlive it by design) until killed, as the next start on this data
	// dir or a service manager would.
	left := sweepNode(t, s.dataDir)
	t.Logf("NODE DELETED: mounts left by the exit: %d; shims and containers: %d", left.mounts, left.shims)
	assert.Positive(t, left.mounts, "the exit left the Pods' mounts")
	assertNoProcess(t, func(c string) bool { return strings.Contains(c, datadir.ContainerdSocket(s.dataDir)) })
	assertGone(t, procs)
}

// nodeLeft is what sweepNode removed.
type nodeLeft struct{ mounts, shims int }

// sweepNode removes what a node on dataDir left after its process died
// without its stop (killed, or os.Exit): containerd's shims with their
// containers, then every mount under the data dir and the node's run
// directory.
func sweepNode(t *testing.T, dataDir string) nodeLeft {
	t.Helper()
	shims := runtime.KillLeftovers(0, datadir.ContainerdSocket(dataDir), "", 10*time.Second).Shims
	return nodeLeft{mounts: unmountLeft(t, dataDir, datadir.NodeRun(dataDir)), shims: shims}
}

// unmountLeft lazily unmounts every mount under dirs, deepest first, and
// returns how many there were. It repeats until mountinfo has shown none
// under dirs twice in a row, 500 ms apart: the kubelet mounts through the
// mount(8) binary, and a mount it started before the exit can land after.
func unmountLeft(t *testing.T, dirs ...string) int {
	t.Helper()
	total, clean := 0, 0
	for deadline := time.Now().Add(30 * time.Second); clean < 2; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("mounts still appear under %v after 30 s of unmounting", dirs)
			return total
		}
		n, err := mounts.UnmountUnder(dirs...)
		assert.NoError(t, err)
		if n == 0 {
			clean++
			continue
		}
		clean = 0
		total += n
	}
	return total
}
