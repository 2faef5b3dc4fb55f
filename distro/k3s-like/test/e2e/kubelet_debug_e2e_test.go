package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKubeletDebugHandlersOff: a user allowed only nodes/proxy reaches the
// server's kubelet (its /healthz and /pods answer through the apiserver's
// node proxy) but not its /debug/pprof/ nor its /debug/flags/v, which would
// serve and change the whole process: without --enable-pprof the kubelet
// answers 405, "… endpoint is disabled", to GET /debug/pprof/* and to
// PUT /debug/flags/v.
//
// Why 405 and not 404: it is upstream's answer for a disabled handler.
// k8s.io/kubernetes v1.37.2 pkg/kubelet/server/server.go: with
// enableProfilingHandler false, InstallProfilingHandler registers at
// /debug/pprof/ getHandlerForDisabledEndpoint("profiling endpoint is
// disabled."), and InstallDebugFlagsHandler "flags endpoint is disabled."
// at /debug/flags/v; that handler answers http.StatusMethodNotAllowed to
// every method (and InstallDebuggingDisabledHandlers does the same for
// every debugging path when enableDebuggingHandlers is off). Nothing runs
// past it: no profile is taken, no flag is read. The kubelet's server is
// built and served inside upstream's RunKubelet, whose Dependencies offer
// no way to wrap its handler, so a 404 would need a fork of the kubelet.
func TestKubeletDebugHandlersOff(t *testing.T) {
	requireNodeHost(t)
	s := startNodeServer(t, t.TempDir())
	s.waitNodeReady(90 * time.Second)
	const user = "node-proxy-only"
	s.kubectl("create", "clusterrole", user, "--verb=get,create,update", "--resource=nodes/proxy")
	s.kubectl("create", "clusterrolebinding", user, "--clusterrole="+user, "--user="+user)
	as := func(args ...string) (string, error) { return s.kubectlErr(append(args, "--as="+user)...) }
	assert.Eventually(t, func() bool {
		out, err := as("get", "--raw", "/api/v1/nodes/node-a/proxy/healthz")
		return err == nil && strings.TrimSpace(out) == "ok"
	}, 30*time.Second, time.Second, "the user reaches the kubelet")
	out, err := as("get", "--raw", "/api/v1/nodes/node-a/proxy/pods")
	assert.NoError(t, err, "the debugging handlers stay: %s", out)
	// The kubelet's 405 ("… endpoint is disabled") reaches kubectl as
	// MethodNotAllowed; enabled, GET /debug/pprof/ is 200 and a PUT to
	// /debug/flags/v sets the process's verbosity.
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/profile?seconds=1"} {
		out, err := as("get", "--raw", "/api/v1/nodes/node-a/proxy"+path)
		assert.Error(t, err, "%s: %s", path, out)
		assert.Contains(t, out, "(MethodNotAllowed)", path)
	}
	v := filepath.Join(t.TempDir(), "v")
	require.NoError(t, os.WriteFile(v, []byte("0"), 0o600))
	out, err = as("replace", "--raw", "/api/v1/nodes/node-a/proxy/debug/flags/v", "-f", v)
	assert.Error(t, err, out)
	assert.Contains(t, out, "(MethodNotAllowed)")
	assert.NotContains(t, out, "successfully set")
}
