package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// inNetns is an HTTP client whose connections are made in the network
// namespace of process pid, trusting the server CA of dataDir, with cert.
func inNetns(t *testing.T, pid int, dataDir string, cert tls.Certificate) func(url string) (int, string) {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(ca))
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type dialed struct {
			c   net.Conn
			err error
		}
		ch := make(chan dialed, 1)
		go func() {
			// Never unlocked: the thread ends with this goroutine, in
			// the other namespace.
			runtime.LockOSThread()
			ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
			if err != nil {
				ch <- dialed{nil, err}
				return
			}
			defer ns.Close()
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- dialed{nil, fmt.Errorf("setns: %w", err)}
				return
			}
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr) // an IP: the socket is made here
			ch <- dialed{c, err}
		}()
		d := <-ch
		return d.c, d.err
	}
	tr := &http.Transport{DialContext: dial, TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	return func(url string) (int, string) {
		t.Helper()
		resp, err := client.Get(url)
		require.NoError(t, err, url)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, url)
		return resp.StatusCode, string(b)
	}
}

// TestStatusRefusesJoinedAgent: with a server (status endpoint on every
// address: HTTPS with client certificates, --enable-pprof) and an agent
// joined with the cluster token, the agent's node credential (its
// kubelet's client certificate, signed by the controller-manager with the
// client CA) reaches the status endpoint from the agent's network and
// reads /livez, but gets 403 on /debug/pprof/ and /flagz; the admin reads
// them.
func TestStatusRefusesJoinedAgent(t *testing.T) {
	requireNodeHost(t)
	serverDir := t.TempDir()
	lan := newLAN(t, 2)
	s := startServerOn(t, lan.Machines[0], serverDir, "--disable-agent", "--bind-address=0.0.0.0", "--status-address=0.0.0.0:10290", "--enable-pprof", "--disable=coredns")
	s.waitFor("ok", 90*time.Second, "get", "--raw", "/readyz")
	admin, err := tls.LoadX509KeyPair(filepath.Join(serverDir, "tls", "client-admin.crt"), filepath.Join(serverDir, "tls", "client-admin.key"))
	require.NoError(t, err, "the admin's certificate (system:masters)")
	fromServer := inNetns(t, s.pid, serverDir, admin)
	require.Eventually(t, func() bool { // every component, node-join (the bootstrap token) too
		code, _ := fromServer("https://127.0.0.1:10290/readyz")
		return code == http.StatusOK
	}, 90*time.Second, 500*time.Millisecond, "the server ready")

	agentDir := t.TempDir()
	// A kubelet on a host that may run another needs its own pod logs
	// directory and cgroup root (as TestAgentJoins's second one).
	config := filepath.Join(agentDir, "kubelet.yaml")
	require.NoError(t, os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: "+
		filepath.Join(agentDir, "pod-logs")+"\n"), 0o600))
	a := startAgentOn(t, lan.Machines[1], agentDir, "--server=https://"+nodeIP+":6443", "--token-file="+filepath.Join(serverDir, "token"),
		"--node-name=node-b", "--node-ip="+agentIP, "--kubelet-arg=cgroup-root="+agentCgroupRoot(t), "--kubelet-arg=config="+config,
		"--disable-kube-proxy") // not needed here; it may start before the kubelet has its client certificate
	s.waitNamedNodeReady("node-b", a, 120*time.Second)

	kubelet := filepath.Join(agentDir, "agent", "kubelet", "pki", "kubelet-client-current.pem")
	nodeCert, err := tls.LoadX509KeyPair(kubelet, kubelet)
	require.NoError(t, err, "the kubelet's bootstrapped client certificate")
	requireClientCA(t, serverDir, nodeCert, "system:node:node-b", "system:nodes")

	status := "https://" + nodeIP + ":10290"
	node := inNetns(t, a.pid, serverDir, nodeCert)
	code, body := node(status + "/livez")
	assert.Equal(t, http.StatusOK, code, body)
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/flagz", "/components"} {
		code, body := node(status + path)
		assert.Equal(t, http.StatusForbidden, code, "%s: %s", path, body)
		assert.Contains(t, body, `forbidden: User "system:node:node-b" cannot get path`, path)
	}

	for _, path := range []string{"/debug/pprof/", "/flagz"} {
		code, body := fromServer("https://127.0.0.1:10290" + path)
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
	require.NoError(t, a.stop(), "SIGTERM: a clean stop")
}
