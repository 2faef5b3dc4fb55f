package e2e

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
//
// With --secrets-encryption (a second dry run) kube-apiserver also gets
// the encryption config, reloaded (1.2.27); its provider (1.2.28) is
// TestSecretsEncryptionAtRest's. 1.2.2 is logged as the failure it is.
func TestCISItems(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "d")
	flags := dryRunFlags(t, "--data-dir="+dataDir)
	encrypted := dryRunFlags(t, "--data-dir="+dataDir, "--secrets-encryption")
	has := func(list, item string) bool { return slices.Contains(strings.Split(list, ","), item) }
	// CIS 1.2.29 and 4.2.12: only these suites (the benchmark's lists are
	// wider: these are their strongest, k3s's).
	strong := []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305", "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"}
	onlyStrong := func(v string) bool {
		for _, s := range strings.Split(v, ",") {
			if !slices.Contains(strong, s) {
				return false
			}
		}
		return v != ""
	}
	atLeast := func(n int) func(string) bool {
		return func(v string) bool { i, err := strconv.Atoi(v); return err == nil && i >= n }
	}
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
		{"1.2.16 audit log path", "kube-apiserver", "audit-log-path", func(v string) bool { return v == filepath.Join(dataDir, "logs", "audit.log") }},
		{"1.2.16 audit policy", "kube-apiserver", "audit-policy-file", func(v string) bool { return v == filepath.Join(dataDir, "audit.yaml") }},
		{"1.2.17 audit log maxage >= 30", "kube-apiserver", "audit-log-maxage", atLeast(30)},
		{"1.2.18 audit log maxbackup >= 10", "kube-apiserver", "audit-log-maxbackup", atLeast(10)},
		{"1.2.19 audit log maxsize >= 100", "kube-apiserver", "audit-log-maxsize", atLeast(100)},
		{"1.2.21 service-account-lookup not false", "kube-apiserver", "service-account-lookup", func(v string) bool { return v != "false" }},
		{"1.2.22 service account key", "kube-apiserver", "service-account-key-file", func(v string) bool { return v != "" }},
		{"1.2.23 etcd client certificate", "kube-apiserver", "etcd-certfile", func(v string) bool { return v != "" }},
		{"1.2.23 etcd client key", "kube-apiserver", "etcd-keyfile", func(v string) bool { return v != "" }},
		{"1.2.24 serving certificate", "kube-apiserver", "tls-cert-file", func(v string) bool { return v != "" }},
		{"1.2.24 serving key", "kube-apiserver", "tls-private-key-file", func(v string) bool { return v != "" }},
		{"1.2.25 client CA", "kube-apiserver", "client-ca-file", func(v string) bool { return v != "" }},
		{"1.2.26 etcd CA", "kube-apiserver", "etcd-cafile", func(v string) bool { return v != "" }},
		{"1.2.29 strong ciphers", "kube-apiserver", "tls-cipher-suites", onlyStrong},
		{"1.2.30 service account tokens not extended", "kube-apiserver", "service-account-extend-token-expiration", func(v string) bool { return v == "false" }},
		{"Pod Security admission configuration", "kube-apiserver", "admission-control-config-file", func(v string) bool { return v == filepath.Join(dataDir, "psa.yaml") }},
		{"1.3.4 service account private key", "kube-controller-manager", "service-account-private-key-file", func(v string) bool { return v != "" }},
		{"1.3.5 root CA", "kube-controller-manager", "root-ca-file", func(v string) bool { return v != "" }},
		{"1.3.6 RotateKubeletServerCertificate not disabled", "kube-controller-manager", "feature-gates", func(v string) bool { return !strings.Contains(v, "RotateKubeletServerCertificate=false") }},
		{"4.1.9/4.1.10 no kubelet config file (flags only)", "kubelet", "config", func(v string) bool { return v == "" }},
		{"4.1.11 no kubelet drop-in directory", "kubelet", "config-dir", func(v string) bool { return v == "" }},
		{"4.2.8 event-qps not negative", "kubelet", "event-qps", func(v string) bool { i, err := strconv.Atoi(v); return v == "" || err == nil && i >= 0 }},
		{"4.2.5 streaming connection idle timeout 5m", "kubelet", "streaming-connection-idle-timeout", func(v string) bool { return v == "5m" }},
		{"4.2.6 make-iptables-util-chains not false", "kubelet", "make-iptables-util-chains", func(v string) bool { return v != "false" }},
		{"4.2.10 rotate certificates", "kubelet", "rotate-certificates", func(v string) bool { return v == "true" }},
		{"4.2.11 RotateKubeletServerCertificate not disabled", "kubelet", "feature-gates", func(v string) bool { return !strings.Contains(v, "RotateKubeletServerCertificate=false") }},
		{"4.2.12 strong ciphers", "kubelet", "tls-cipher-suites", onlyStrong},
		{"4.3.1 kube-proxy metrics on loopback", "kube-proxy", "metrics-bind-address", func(v string) bool { return strings.HasPrefix(v, "127.0.0.1:") }},
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
	for _, item := range []struct{ id, flag, want string }{
		{"1.2.27 encryption provider config", "encryption-provider-config", filepath.Join(dataDir, "cred", "encryption-config.json")},
		{"1.2.27 encryption provider config reloaded", "encryption-provider-config-automatic-reload", "true"},
	} {
		v := encrypted["kube-apiserver"][item.flag]
		if assert.Equal(t, item.want, v, "CIS %s", item.id) {
			t.Logf("CIS %s: kube-apiserver --%s=%s (with --secrets-encryption)", item.id, item.flag, v)
		}
	}
	// CIS 1.2.2 fails, knowingly: --token-auth-file holds the join
	// credentials agents read their bootstrap token with (docs/cis.md).
	if v := flags["kube-apiserver"]["token-auth-file"]; assert.NotEmpty(t, v, "1.2.2: docs/cis.md says it is set") {
		t.Logf("CIS 1.2.2 FAIL (known trade-off): kube-apiserver --token-auth-file=%s", v)
	}
	_, set := flags["kube-apiserver"]["encryption-provider-config"]
	assert.False(t, set, "no encryption config without --secrets-encryption")
}

// dryRunFlags are each component's flags in `server --dry-run --output
// json` with args: component → flag → value.
func dryRunFlags(t *testing.T, args ...string) map[string]map[string]string {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"server", "--dry-run", "--output", "json"}, args...)...).Output()
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
	return flags
}
