package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNodePasswordsAndTokens: issue 45's first finding, on two machines of
// a LAN (package machines). The server has an agent token
// (--agent-token-file); node-b joins with it (DATA_DIR/agent-token), and
// each node's name is claimed for its node password (a Secret
// NODE.node-password.k3s-like in kube-system, the password 0600 in
// DATA_DIR/agent/node-password).
//   - With that stolen agent token, an agent with another password that
//     claims the server's node name (node-a), or node-b's, is refused with
//     the server's reason; no Node changes.
//   - The agent token cannot join a server (--server): refused at once,
//     naming it.
//   - A bootstrap token of `token create --ttl 2s` is refused once expired,
//     naming its ID; one of --ttl 1h joins node-b again after node-b lost
//     its client certificate: it asks again with its own password and is
//     Ready (a node that restarts with its own password rejoins).
//   - `token rotate`: a new DATA_DIR/token; after the server's restart the
//     old server token is refused, and node-b, which kept running, is
//     Ready with its Pod's same container running.
func TestNodePasswordsAndTokens(t *testing.T) {
	requireNodeHost(t)
	busybox := busyboxImage(t)
	lan := newLAN(t, 2)
	serverDir, agentDir := t.TempDir(), t.TempDir()
	agentTokenFile := filepath.Join(t.TempDir(), "agent-token")
	require.NoError(t, os.WriteFile(agentTokenFile, []byte("agent-secret-of-this-test-0123456789\n"), 0o600))
	serverArgs := []string{"--bind-address=0.0.0.0", "--agent-token-file=" + agentTokenFile}
	s := startServerOn(t, lan.Machines[0], serverDir, serverArgs...)
	s.waitNodeReady(nodeReadyBound)
	agentTok, err := os.ReadFile(filepath.Join(serverDir, "agent-token"))
	require.NoError(t, err)
	assert.Regexp(t, `^K10[0-9a-f]{64}::node:agent-secret-of-this-test-0123456789\n$`, string(agentTok))
	serverTok, err := os.ReadFile(filepath.Join(serverDir, "token"))
	require.NoError(t, err)
	stolen := filepath.Join(serverDir, "agent-token") // what root on an agent has

	args := clusterAgentArgs(t, lan.Machines[1], serverDir, agentDir, "node-b")
	args = replaceArg(args, "--token-file=", stolen)
	a := startAgentOn(t, lan.Machines[1], agentDir, args...)
	s.waitNamedNodeReady("node-b", a, nodeReadyBound)
	st, err := os.Stat(filepath.Join(agentDir, "agent", "node-password"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	secrets := s.kubectl("get", "secrets", "-n", "kube-system", "-o", `jsonpath={range .items[*]}{.metadata.name} {.type}{"\n"}{end}`)
	assert.Contains(t, secrets, "node-a.node-password.k3s-like k3s-like.kubeharness.io/node-password\n", "the server's own node")
	assert.Contains(t, secrets, "node-b.node-password.k3s-like k3s-like.kubeharness.io/node-password\n")
	csrs := s.kubectl("get", "csr", "-o", `jsonpath={range .items[*]}{.spec.username} {.spec.signerName} {.status.conditions[0].type} {.status.conditions[0].reason}{"\n"}{end}`)
	assert.Regexp(t, `(?m)^system:bootstrap:[a-z0-9]{6} kubernetes.io/kube-apiserver-client-kubelet Approved NodePasswordVerified$`, csrs)
	_, err = os.Stat(filepath.Join(agentDir, "agent", "pki", "bootstrap-kubelet.kubeconfig"))
	assert.True(t, os.IsNotExist(err), "no bootstrap token on the agent's disk")

	// The stolen agent token, from another data dir (another password):
	// the server's node name, then node-b's. The join runs on the server's
	// machine: it fails before anything of a node starts.
	for _, victim := range []string{"node-a", "node-b"} {
		out, err := s.run("agent", "--server=https://"+nodeIP+":6443", "--token-file="+stolen, "--data-dir="+t.TempDir(), "--node-name="+victim)
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		assert.Contains(t, out, "the server refused a client certificate for node "+victim, victim)
		assert.Contains(t, out, "node name "+victim+" is held by another node: its node password does not match", victim)
		assert.NotContains(t, out, "agent-secret-of-this-test", "the token is never printed")
	}
	csrs = s.kubectl("get", "csr", "-o", `jsonpath={range .items[*]}{.status.conditions[0].type} {.status.conditions[0].message}{"\n"}{end}`)
	assert.Contains(t, csrs, "Denied node name node-a is held by another node")
	assert.Contains(t, csrs, "Denied node name node-b is held by another node")
	s.waitNamedNodeReady("node-b", a, 10*time.Second)

	// The agent token cannot join a server.
	out, err := s.run("server", "--server=https://"+nodeIP+":6443", "--token-file="+stolen, "--data-dir="+t.TempDir(), "--node-name=server-x",
		"--disable-agent", "--https-listen-port=7443", "--etcd-client-port=7379", "--etcd-peer-port=7380", "--status-address=127.0.0.1:17290")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, out, "an agent token or a bootstrap token joins agents only")
	assert.NotContains(t, out, "agent-secret-of-this-test")

	// An expired bootstrap token.
	out, err = s.run("token", "create", "--ttl=2s", "--data-dir="+serverDir)
	require.NoError(t, err, out)
	m := regexp.MustCompile(`(?m)^K10[0-9a-f]{64}::([a-z0-9]{6})\.[a-z0-9]{16}$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	expired := filepath.Join(t.TempDir(), "expired")
	require.NoError(t, os.WriteFile(expired, []byte(m[0]), 0o600))
	time.Sleep(3 * time.Second)
	out, err = s.run("agent", "--server=https://"+nodeIP+":6443", "--token-file="+expired, "--data-dir="+t.TempDir(), "--node-name=node-c")
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, out, "does not accept the bootstrap token "+m[1]+": it expired")
	_, err = s.kubectlErr("get", "node", "node-c")
	assert.Error(t, err, "no node-c")

	// node-b loses its client certificate and restarts with a bootstrap
	// token of token create: it asks again with its own password.
	require.NoError(t, a.stop())
	out, err = s.run("token", "create", "--ttl=1h", "--data-dir="+serverDir)
	require.NoError(t, err, out)
	created := filepath.Join(t.TempDir(), "created")
	require.NoError(t, os.WriteFile(created, []byte(strings.TrimSpace(lastLine(out))), 0o600))
	pems, err := filepath.Glob(filepath.Join(agentDir, "agent", "kubelet", "pki", "kubelet-client-*"))
	require.NoError(t, err)
	require.NotEmpty(t, pems)
	for _, p := range pems {
		require.NoError(t, os.Remove(p))
	}
	before := strings.Count(s.kubectl("get", "csr", "-o", "name"), "\n")
	a = startAgentOn(t, lan.Machines[1], agentDir, replaceArg(args, "--token-file=", created)...)
	s.waitNamedNodeReady("node-b", a, nodeReadyBound)
	assert.Greater(t, strings.Count(s.kubectl("get", "csr", "-o", "name"), "\n"), before, "a new request, approved")
	assert.Contains(t, a.log.String(), "Asked for the node's client certificate with its node password")

	// token rotate, then the server's restart: node-b keeps running, and
	// so does its Pod's container.
	s.apply(shPodOn("on-b", "node-b", busybox, "exec sleep 3599"))
	s.waitFor("Running", podBound, "get", "pod", "on-b", "-o", "jsonpath={.status.phase}")
	var container string
	require.Eventually(t, func() bool {
		container, _ = s.kubectlErr("get", "pod", "on-b", "-o", "jsonpath={.status.containerStatuses[0].containerID}")
		return container != ""
	}, podBound, 250*time.Millisecond, "on-b's container")
	podUID := s.kubectl("get", "pod", "on-b", "-o", "jsonpath={.metadata.uid}")
	out, err = s.run("token", "rotate", "--data-dir="+serverDir)
	require.NoError(t, err, out)
	assert.Contains(t, out, "Rotated the server token")
	rotated, err := os.ReadFile(filepath.Join(serverDir, "token"))
	require.NoError(t, err)
	assert.NotEqual(t, string(serverTok), string(rotated))
	require.NoError(t, s.stop())
	s = startServerOn(t, lan.Machines[0], serverDir, serverArgs...)
	s.waitNodeReady(nodeReadyBound)
	s.waitNamedNodeReady("node-b", a, nodeReadyBound)
	assert.Equal(t, podUID, s.kubectl("get", "pod", "on-b", "-o", "jsonpath={.metadata.uid}"))
	// The kubelet reports the Pod's status again once the apiserver is
	// back (a moment with no container status): the same container.
	var after string
	require.Eventually(t, func() bool {
		after, _ = s.kubectlErr("get", "pod", "on-b", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].containerID}")
		return after != "Running " && after != ""
	}, podBound, 250*time.Millisecond, "on-b's status after the server's restart")
	assert.Equal(t, "Running "+container, after, "the same container, running through the rotation and the server's restart")
	old := filepath.Join(t.TempDir(), "old")
	require.NoError(t, os.WriteFile(old, serverTok, 0o600))
	out, err = s.run("agent", "--server=https://"+nodeIP+":6443", "--token-file="+old, "--data-dir="+t.TempDir(), "--node-name=node-d")
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Contains(t, out, "the server does not accept the token")
	require.NoError(t, a.stop())
	require.NoError(t, s.stop())
}

// replaceArg returns args with the one starting with prefix set to
// prefix+value.
func replaceArg(args []string, prefix, value string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, prefix) {
			a = prefix + value
		}
		out[i] = a
	}
	return out
}
