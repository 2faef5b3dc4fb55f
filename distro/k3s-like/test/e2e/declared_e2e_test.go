package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaredGate is a kubelet gate that upstream's KEP-5328 registry guards a
// declared feature of the same name with (beta, on by default, at 1.36 and
// 1.37): a node whose kubelet runs it declares the feature, and the
// scheduler keeps a Pod with a RestartAllContainers rule off the others.
const declaredGate = "RestartAllContainersOnContainerExits"

// restartAllPod is a Pod that needs declaredGate's declared feature.
const restartAllPod = `apiVersion: v1
kind: Pod
metadata: {name: restart-all}
spec:
  containers:
  - name: main
    image: busybox
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
`

// TestDeclaredFeaturesOnTwoNodes: node-a (the server's) runs declaredGate
// on, node-b (an agent on a machine of its own) off. The Feature shows the
// gate partial with node-b named, and the declared feature declared by 1
// of 2 nodes, node-b disagreeing (kubectl and `k3s-like features -o
// wide`); `features check` on a Pod that needs it names node-a as the one
// node that can run it, and exits 1.
func TestDeclaredFeaturesOnTwoNodes(t *testing.T) {
	requireNodeHost(t)
	lan := newLAN(t, 2)
	serverDir, agentDir := t.TempDir(), t.TempDir()
	s := startServerOn(t, lan.Machines[0], serverDir, "--bind-address=0.0.0.0")
	s.waitNodeReady(nodeReadyBound)
	args := append(clusterAgentArgs(t, lan.Machines[1], serverDir, agentDir, "node-b"), "--kubelet-arg=feature-gates="+declaredGate+"=false")
	a := startAgentOn(t, lan.Machines[1], agentDir, args...)
	s.waitNamedNodeReady("node-b", a, nodeReadyBound)

	// Upstream's view: node-a's Node declares it, node-b's does not.
	declared := s.kubectl("get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.declaredFeatures}{"\n"}{end}`)
	assert.Regexp(t, `(?m)^node-a=.*"`+declaredGate+`"`, declared)
	assert.NotRegexp(t, `(?m)^node-b=.*`+declaredGate, declared)

	// Ours: the gate partial, node-b disagreeing; the declared feature on
	// 1 of 2 nodes, node-b disagreeing.
	s.waitFeature(declaredGate, "default partial 1/2 node-b", 60*time.Second)
	s.waitFor("1/2 node-b", 30*time.Second, "get", "feature", strings.ToLower(declaredGate), "-o", "jsonpath={.status.nodesDeclaring} {.status.declaredDisagreeing}")
	got := s.kubectl("get", "feature", strings.ToLower(declaredGate), "-o", `jsonpath={range .status.declared[*]}{.name} {.nodes} {.declaring} {.disagreeingSample}{"\n"}{end}`)
	assert.Equal(t, declaredGate+` 2 1 ["node-b"]`+"\n", got)
	wide, err := s.run("features", "-o", "wide", "--node-name=node-a", "--status-address=127.0.0.1:10290")
	require.NoError(t, err, wide)
	// NAME STAGE ENABLED DEFAULT SET-BY SERVERS NODES DISAGREEING DECLARED DECLARED-DISAGREEING EMULATED BINARY
	assert.Regexp(t, `\sDISAGREEING\s+DECLARED\s+DECLARED-DISAGREEING\s+EMULATED\s`, wide)
	assert.Regexp(t, `(?m)^`+strings.ToLower(declaredGate)+`\s+Beta\s+partial\s+true\s+default\s+node-a\s+1/2\s+node-b\s+1/2\s+node-b\s+1\.\d+\s`, wide)

	// features check: the Pod can run on node-a only.
	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	require.NoError(t, os.WriteFile(manifest, []byte(restartAllPod), 0o600))
	out, err := s.run("features", "check", "-f", manifest, "--kubeconfig="+filepath.Join(serverDir, "admin.kubeconfig"))
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode(), out)
	assert.Contains(t, out, "PARTIAL  v1 Pod restart-all: served, but needs declared feature "+declaredGate+
		", declared by 1 of 2 nodes: it can run on node-a\n")
	require.NoError(t, a.stop())
}
