package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCISItems: the CIS Kubernetes Benchmark items of the apiserver (1.2.x)
// about admission, kubelet certificates and profiling, the controller-
// manager's and scheduler's profiling and bind address (1.3.x, 1.4.x) and
// the kubelet's (4.2.x), read from `server --dry-run --output json` with
// the node, as kube-bench reads a process's flags. Each line it logs is
// the item, the flag and its value.
func TestCISItems(t *testing.T) {
	out, err := exec.Command(binary, "server", "--dry-run", "--output", "json", "--data-dir="+filepath.Join(t.TempDir(), "d")).Output()
	require.NoError(t, err)
	var dry struct {
		Components []struct {
			Name string   `json:"name"`
			Args []string `json:"args"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(out, &dry))
	flags := map[string]map[string]string{}
	for _, c := range dry.Components {
		flags[c.Name] = map[string]string{}
		for _, a := range c.Args {
			k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			flags[c.Name][k] = v
		}
	}
	has := func(list, item string) bool { return slices.Contains(strings.Split(list, ","), item) }
	for _, item := range []struct {
		id, component, flag string
		ok                  func(value string) bool
	}{
		{"1.2.1 anonymous-auth false", "kube-apiserver", "anonymous-auth", func(v string) bool { return v == "false" }},
		{"1.2.4 kubelet client certificate", "kube-apiserver", "kubelet-client-certificate", func(v string) bool { return v != "" }},
		{"1.2.4 kubelet client key", "kube-apiserver", "kubelet-client-key", func(v string) bool { return v != "" }},
		{"1.2.5 kubelet certificate authority", "kube-apiserver", "kubelet-certificate-authority", func(v string) bool { return strings.HasSuffix(v, "/kubelet-serving-ca.crt") }},
		{"1.2.6 not AlwaysAllow", "kube-apiserver", "authorization-mode", func(v string) bool { return !has(v, "AlwaysAllow") }},
		{"1.2.7 Node authorizer", "kube-apiserver", "authorization-mode", func(v string) bool { return has(v, "Node") }},
		{"1.2.8 RBAC authorizer", "kube-apiserver", "authorization-mode", func(v string) bool { return has(v, "RBAC") }},
		{"1.2.10 no AlwaysAdmit", "kube-apiserver", "enable-admission-plugins", func(v string) bool { return !has(v, "AlwaysAdmit") }},
		{"1.2.12/1.2.13 ServiceAccount, NamespaceLifecycle not disabled", "kube-apiserver", "disable-admission-plugins", func(v string) bool {
			return !has(v, "ServiceAccount") && !has(v, "NamespaceLifecycle")
		}},
		{"1.2.14 NodeRestriction", "kube-apiserver", "enable-admission-plugins", func(v string) bool { return has(v, "NodeRestriction") }},
		{"1.2.15 profiling false", "kube-apiserver", "profiling", func(v string) bool { return v == "false" }},
		{"1.3.2 profiling false", "kube-controller-manager", "profiling", func(v string) bool { return v == "false" }},
		{"1.3.3 service account credentials", "kube-controller-manager", "use-service-account-credentials", func(v string) bool { return v == "true" }},
		{"1.3.7 bind address loopback", "kube-controller-manager", "bind-address", func(v string) bool { return v == "127.0.0.1" }},
		{"1.4.1 profiling false", "kube-scheduler", "profiling", func(v string) bool { return v == "false" }},
		{"1.4.2 bind address loopback", "kube-scheduler", "bind-address", func(v string) bool { return v == "127.0.0.1" }},
		{"4.2.1 anonymous-auth false", "kubelet", "anonymous-auth", func(v string) bool { return v == "false" }},
		{"4.2.2 authorization Webhook", "kubelet", "authorization-mode", func(v string) bool { return v == "Webhook" }},
		{"4.2.3 client CA", "kubelet", "client-ca-file", func(v string) bool { return v != "" }},
		{"4.2.4 read-only port 0", "kubelet", "read-only-port", func(v string) bool { return v == "0" }},
		{"4.2.9 serving certificate (server's node)", "kubelet", "tls-cert-file", func(v string) bool { return strings.HasSuffix(v, "/serving-kubelet.crt") }},
	} {
		v, set := flags[item.component][item.flag]
		shown := "--" + item.flag + "=" + v
		if !set {
			shown = "--" + item.flag + " unset"
		}
		if assert.True(t, item.ok(v), "CIS %s: %s %s", item.id, item.component, shown) {
			t.Logf("CIS %s: %s %s", item.id, item.component, shown)
		}
	}
}
