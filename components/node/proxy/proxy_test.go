package proxy_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/node"
	"github.com/kubeharness/kubeharness/components/node/proxy"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// alphaGate is an alpha feature (the kubelet's, since v1.36) of both
// minors.
const alphaGate = "CRIListStreaming"

// parsedProxy adds kube-proxy's flags to a private scope, parses args and
// completes it.
func parsedProxy(t *testing.T, args ...string) (*proxy.KubeProxy, *scoping.Scope, error) {
	t.Helper()
	b, err := scoping.NewBarrier(testenv.MustPrivateTarget(), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(proxy.Name)
	require.NoError(t, err)
	p := proxy.New()
	require.NoError(t, p.AddFlags(s))
	if err := s.Parse(args); err != nil {
		return p, s, err
	}
	return p, s, p.Complete(s)
}

// TestKubeProxyFlags: upstream's flags with its normalisation; the flags
// that make the command exit are refused with the reason, as are the
// unreconciled logging flags.
func TestKubeProxyFlags(t *testing.T) {
	b, err := scoping.NewBarrier(testenv.MustPrivateTarget(), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(proxy.Name)
	require.NoError(t, err)
	require.NoError(t, proxy.New().AddFlags(s))
	fs := s.FlagSet()
	for _, name := range []string{"config", "kubeconfig", "hostname-override", "proxy-mode", "cluster-cidr", "feature-gates",
		"healthz-bind-address", "metrics-bind-address", "conntrack-max-per-core", "nodeport-addresses", "v", "vmodule", "logging-format"} {
		assert.NotNil(t, fs.Lookup(name), "--%s", name)
	}
	assert.Nil(t, fs.Lookup("version"), "--version belongs to the command")
	assert.Nil(t, fs.Lookup("emulated-version"), "kube-proxy has no --emulated-version")
	assert.ErrorContains(t, fs.Set("cleanup", "true"), "node.CleanupProxyRules")
	assert.ErrorContains(t, fs.Set("init-only", "true"), "exits the command")
	assert.ErrorContains(t, fs.Set("write-config-to", "/tmp/x"), "exits the command")
	assert.ErrorContains(t, fs.Set("log-flush-frequency", "1s"), "process-wide logging setting")
	require.NoError(t, fs.Set("proxy_mode", "nftables"), "--proxy_mode is --proxy-mode")
	assert.Equal(t, "nftables", fs.Lookup("proxy-mode").Value.String())
}

// TestKubeProxyConfigFile: the file's feature gates are kube-proxy's
// requests named by the file, its mode and name are read; a bad file, or
// --feature-gates beside --config (which upstream would ignore), is a
// *scoping.FlagError naming kube-proxy, the flag and the value.
func TestKubeProxyConfigFile(t *testing.T) {
	dir := t.TempDir()
	good := writeTemp(t, dir, "proxy.yaml", `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
hostnameOverride: node-f
healthzBindAddress: 127.0.0.1:10356
featureGates:
  `+alphaGate+`: true
`)
	// An unknown field: the strict decoder refuses it, upstream's lenient one (v1alpha1) takes it.
	lenient := writeTemp(t, dir, "lenient.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nmode: iptables\nnoSuchField: 1\n")
	t.Run("file", func(t *testing.T) {
		p, s, err := parsedProxy(t, "--config="+good)
		require.NoError(t, err)
		assert.Equal(t, "nftables", p.Mode())
		req := s.Requested()
		require.Contains(t, req.Features, alphaGate)
		assert.Equal(t, "true", req.Features[alphaGate].Value)
		assert.Equal(t, "--config="+good, req.Features[alphaGate].Flag)
	})
	t.Run("lenient", func(t *testing.T) {
		p, _, err := parsedProxy(t, "--config="+lenient)
		require.NoError(t, err)
		assert.Equal(t, "iptables", p.Mode())
	})
	t.Run("flags", func(t *testing.T) {
		p, s, err := parsedProxy(t, "--proxy-mode=nftables", "--feature-gates="+alphaGate+"=true")
		require.NoError(t, err)
		assert.Equal(t, "nftables", p.Mode())
		assert.Equal(t, "--feature-gates="+alphaGate+"=true", s.Requested().Features[alphaGate].Flag)
	})
	for _, tc := range []struct {
		name string
		args []string
		flag string
		want []string
	}{
		{"missing file", []string{"--config=" + filepath.Join(dir, "missing.yaml")}, "--config", []string{"missing.yaml", "no such file"}},
		{"not yaml", []string{"--config=" + writeTemp(t, dir, "bad.yaml", "mode: [")}, "--config", []string{"decoding"}},
		{"other kind", []string{"--config=" + writeTemp(t, dir, "kind.yaml", "apiVersion: v1\nkind: ConfigMap\n")}, "--config", []string{"kube-proxy: --config="}},
		{"gates beside the file", []string{"--config=" + good, "--feature-gates=" + alphaGate + "=false"}, "--feature-gates", []string{"ignores --feature-gates", "set featureGates in the file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := parsedProxy(t, tc.args...)
			var fe *scoping.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, proxy.Name, fe.Component)
			assert.Equal(t, tc.flag, fe.Flag)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
	t.Run("unknown gate by flag", func(t *testing.T) {
		_, _, err := parsedProxy(t, "--feature-gates=NoSuchGate=true")
		assert.ErrorContains(t, err, "NoSuchGate")
	})
}

func writeTemp(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestKubeProxyGatesAtTheBarrier: kube-proxy's gates are reconciled with
// the apiserver's: a conflict is the barrier's one error naming both and
// the flag; the same value is SET-BY both. Nothing runs.
func TestKubeProxyGatesAtTheBarrier(t *testing.T) {
	dry := func(t *testing.T, apiserverArgs, proxyArgs []string) (*scoping.Plan, error) {
		target := testenv.MustPrivateTarget()
		h := &harness.Harness{Target: &target, Logger: logr.Discard()}
		require.NoError(t, h.Add(components.NewAPIServer(), apiserverArgs))
		require.NoError(t, h.Add(proxy.New(), proxyArgs, components.APIServerName))
		return h.DryRun(t.Context())
	}
	gate := "--feature-gates=" + alphaGate
	t.Run("conflict", func(t *testing.T) {
		_, err := dry(t, []string{gate + "=false"}, []string{gate + "=true"})
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.ErrorContains(t, err, "kube-apiserver sets false ("+gate+"=false)")
		assert.ErrorContains(t, err, "kube-proxy sets true ("+gate+"=true)")
	})
	t.Run("conflict with a file", func(t *testing.T) {
		file := writeTemp(t, t.TempDir(), "proxy.yaml", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\nfeatureGates:\n  "+alphaGate+": true\n")
		_, err := dry(t, []string{gate + "=false"}, []string{"--config=" + file})
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.ErrorContains(t, err, "kube-proxy sets true (--config="+file)
	})
	t.Run("agree", func(t *testing.T) {
		plan, err := dry(t, []string{gate + "=true"}, []string{gate + "=true"})
		require.NoError(t, err)
		i := slices.IndexFunc(plan.FeatureStates(), func(f scoping.FeatureState) bool { return f.Name == alphaGate })
		require.GreaterOrEqual(t, i, 0, "%s in the plan", alphaGate)
		assert.Equal(t, "kube-apiserver=true,kube-proxy=true", plan.FeatureStates()[i].SetBy())
	})
}

// TestKubeProxyStartsOnce: kube-proxy is a harness.Once, not a Renewer,
// and a Run before AddFlags and Complete is an error.
func TestKubeProxyStartsOnce(t *testing.T) {
	var c harness.Component = proxy.New()
	once, ok := c.(harness.Once)
	require.True(t, ok)
	assert.Contains(t, once.StartsOnce(), "wait.NeverStop")
	_, renews := c.(harness.Renewer)
	assert.False(t, renews)
	assert.ErrorContains(t, proxy.New().Run(t.Context()), "Run before AddFlags and Complete")
}

// TestKubeProxyPortTaken: a taken healthz or metrics port is Run's named
// error before anything of upstream's runs (upstream retries forever).
func TestKubeProxyPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	for _, flag := range []string{"--healthz-bind-address", "--metrics-bind-address"} {
		t.Run(flag, func(t *testing.T) {
			p, _, err := parsedProxy(t, flag+"=127.0.0.1:"+port, "--hostname-override=n", "--kubeconfig=/nonexistent")
			require.NoError(t, err)
			err = p.Run(t.Context())
			var fe *scoping.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, flag, fe.Flag)
			assert.Equal(t, "127.0.0.1:"+port, fe.Value)
			assert.ErrorContains(t, err, "address already in use")
		})
	}
}

// TestKubeProxyWithoutAPIServer: without a kubeconfig Run fails naming the
// flag; with one whose apiserver never answers, Run waits for the Node and
// returns nil as soon as its context ends, leaving no goroutine (goleak).
func TestKubeProxyWithoutAPIServer(t *testing.T) {
	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		return l.Addr().String()
	}
	ports := []string{"--healthz-bind-address=" + free(), "--metrics-bind-address=" + free()}
	t.Run("no kubeconfig", func(t *testing.T) {
		t.Setenv("KUBERNETES_SERVICE_HOST", "")
		p, _, err := parsedProxy(t, append(ports, "--hostname-override=n")...)
		require.NoError(t, err)
		err = p.Run(t.Context())
		var fe *scoping.FlagError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "--kubeconfig", fe.Flag)
	})
	t.Run("apiserver never answers", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
		require.NoError(t, err)
		defer l.Close()
		kubeconfig := writeTemp(t, t.TempDir(), "kubeconfig", "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://"+l.Addr().String()+"\n    insecure-skip-tls-verify: true\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: x}\n")
		p, _, err := parsedProxy(t, append(ports, "--hostname-override=n", "--kubeconfig="+kubeconfig)...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		assert.NoError(t, p.Run(ctx))
		assert.Less(t, time.Since(start), 5*time.Second, "Run returned late after its context ended")
		ready, stop := context.WithTimeout(t.Context(), 10*time.Millisecond)
		defer stop()
		assert.Error(t, p.Ready(ready), "not ready: it never ran")
	})
}

// TestDefaultKubeProxyFlags: the defaults a distro gets are flags
// kube-proxy accepts, and say what they should.
func TestDefaultKubeProxyFlags(t *testing.T) {
	args := kubeargs.Merge(node.DefaultKubeProxyFlags(node.ProxySettings{
		Name: "node-a", Kubeconfig: "/etc/k/proxy.kubeconfig", ClusterCIDR: "10.42.0.0/16", Mode: "nftables",
	}), nil, nil)
	p, s, err := parsedProxy(t, args...)
	require.NoError(t, err)
	assert.Equal(t, "nftables", p.Mode())
	fs := s.FlagSet()
	for flag, want := range map[string]string{
		"hostname-override": "node-a", "kubeconfig": "/etc/k/proxy.kubeconfig", "cluster-cidr": "10.42.0.0/16",
		"healthz-bind-address": "127.0.0.1:10256", "metrics-bind-address": "127.0.0.1:10249",
		"conntrack-max-per-core": "0", "conntrack-tcp-timeout-established": "0s", "conntrack-tcp-timeout-close-wait": "0s",
	} {
		assert.Equal(t, want, fs.Lookup(flag).Value.String(), "--%s", flag)
	}
}
