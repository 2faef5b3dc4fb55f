package kubelet_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/node"
	"github.com/kubeharness/kubeharness/components/node/kubelet"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// kubeletAlpha is an alpha kubelet feature (since v1.36) of both minors.
const kubeletAlpha = "CRIListStreaming"

// cgroupV1OptOut lets the kubelet's validation pass on a cgroup v1 host
// (these machines are hybrid v1); TestKubeletRefusesCgroupV1 is the test
// without it.
const cgroupV1OptOut = "--fail-cgroupv1=false"

// parsedKubelet adds a kubelet's flags to a private scope, parses args
// (after cgroupV1OptOut) and completes it.
func parsedKubelet(t *testing.T, args ...string) (*kubelet.Kubelet, *scoping.Scope, error) {
	t.Helper()
	return parsedKubeletExactly(t, append([]string{cgroupV1OptOut}, args...)...)
}

// parsedKubeletExactly is parsedKubelet with exactly args.
func parsedKubeletExactly(t *testing.T, args ...string) (*kubelet.Kubelet, *scoping.Scope, error) {
	t.Helper()
	return parsedThis(t, kubelet.New(), args...)
}

// parsedThis is parsedKubeletExactly for the kubelet k.
func parsedThis(t *testing.T, k *kubelet.Kubelet, args ...string) (*kubelet.Kubelet, *scoping.Scope, error) {
	t.Helper()
	b, err := scoping.NewBarrier(testenv.MustPrivateTarget(), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(kubelet.Name)
	require.NoError(t, err)
	require.NoError(t, k.AddFlags(s))
	if err := s.Parse(args); err != nil {
		return k, s, err
	}
	return k, s, k.Complete(s)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
}

// TestKubeletFlags: the kubelet's own and configuration flags, upstream's
// normalisation, the command's --version left out, process-wide flags
// refused with the reason.
func TestKubeletFlags(t *testing.T) {
	b, err := scoping.NewBarrier(testenv.MustPrivateTarget(), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	s, err := b.NewScope(kubelet.Name)
	require.NoError(t, err)
	require.NoError(t, kubelet.New().AddFlags(s))
	fs := s.FlagSet()
	for _, name := range []string{"config", "config-dir", "kubeconfig", "node-ip", "hostname-override", "cert-dir", "root-dir", "node-labels",
		"feature-gates", "port", "max-pods", "container-runtime-endpoint", "cgroup-driver", "v", "vmodule", "logging-format"} {
		assert.NotNil(t, fs.Lookup(name), "--%s", name)
	}
	assert.Nil(t, fs.Lookup("version"), "--version belongs to the command")
	assert.Nil(t, fs.Lookup("emulated-version"), "the kubelet has no --emulated-version")
	assert.ErrorContains(t, fs.Set("housekeeping-interval", "5s"), "process-wide Go flag of cadvisor's")
	assert.ErrorContains(t, fs.Set("log-flush-frequency", "1s"), "process-wide logging setting")
	require.NoError(t, fs.Set("max_pods", "12"), "--max_pods is --max-pods")
	assert.Equal(t, "12", fs.Lookup("max-pods").Value.String())
}

// TestKubeletConfigPrecedence: defaults < --config < --config-dir drop-ins
// in lexical order (non-.conf files skipped) < flags, as upstream; the
// files' feature gates are the kubelet's requests named by their file, the
// flag's by the flag, which wins over the files.
func TestKubeletConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "kubelet.yaml")
	dropins := filepath.Join(dir, "kubelet.conf.d")
	writeFile(t, config, `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
port: 10300
maxPods: 50
podPidsLimit: 100
featureGates:
  `+kubeletAlpha+`: true
  AllAlpha: false
`)
	writeFile(t, filepath.Join(dropins, "20-b.conf"), `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 70
`)
	writeFile(t, filepath.Join(dropins, "10-a.conf"), `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 60
podPidsLimit: 200
featureGates:
  AllBeta: true
`)
	writeFile(t, filepath.Join(dropins, "30-c.yaml"), "not: [a kubelet file")

	t.Run("files", func(t *testing.T) {
		k, s, err := parsedKubelet(t, "--config="+config, "--config-dir="+dropins, "--max-pods=80")
		require.NoError(t, err)
		kc := k.Server().KubeletConfiguration
		assert.Equal(t, int32(80), kc.MaxPods, "the flag wins")
		assert.Equal(t, int32(10300), kc.Port, "the file's")
		assert.Equal(t, int64(200), kc.PodPidsLimit, "10-a.conf over the file")
		assert.NotEmpty(t, kc.EvictionHard, "the default hard eviction thresholds")
		assert.Equal(t, map[string]bool{kubeletAlpha: true, "AllAlpha": false, "AllBeta": true}, kc.FeatureGates)
		req := s.Requested().Features
		assert.Equal(t, scoping.Request{Component: kubelet.Name, Value: "true", Flag: "--config=" + config}, req[kubeletAlpha])
		assert.Equal(t, "--config-dir="+dropins, req["AllBeta"].Flag)
		assert.True(t, s.FeatureGate().Enabled(kubeletAlpha))
	})
	t.Run("flag over file", func(t *testing.T) {
		k, s, err := parsedKubelet(t, "--config="+config, "--feature-gates="+kubeletAlpha+"=false")
		require.NoError(t, err)
		assert.False(t, k.Server().FeatureGates[kubeletAlpha])
		assert.Equal(t, "--feature-gates="+kubeletAlpha+"=false", s.Requested().Features[kubeletAlpha].Flag)
		assert.False(t, s.FeatureGate().Enabled(kubeletAlpha))
		assert.Equal(t, "--config="+config, s.Requested().Features["AllAlpha"].Flag, "the file's other gates kept")
	})
	t.Run("flags only", func(t *testing.T) {
		k, s, err := parsedKubelet(t, "--feature-gates="+kubeletAlpha+"=true", "--port=10400")
		require.NoError(t, err)
		assert.Equal(t, int32(10400), k.Server().Port)
		assert.True(t, k.Server().Authentication.Anonymous.Enabled, "upstream's legacy flag defaults")
		assert.Equal(t, "--feature-gates="+kubeletAlpha+"=true", s.Requested().Features[kubeletAlpha].Flag)
	})
}

// TestKubeletProfilingOptIn: the kubelet's /debug/pprof and /debug/flags/v
// serve the whole process, so they are off unless Profiling (upstream
// turns them on), with the debugging handlers (logs, exec, attach,
// port-forward) kept; with Profiling, upstream's defaults and the files
// decide. A file that turns one on without Profiling is an error naming
// the file and the field.
func TestKubeletProfilingOptIn(t *testing.T) {
	dir := t.TempDir()
	on := filepath.Join(dir, "on.yaml")
	writeFile(t, on, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableProfilingHandler: true\n")
	off := filepath.Join(dir, "off.yaml")
	writeFile(t, off, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableProfilingHandler: false\n")
	dropins := filepath.Join(dir, "conf.d")
	writeFile(t, filepath.Join(dropins, "10-flags.conf"), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nenableDebugFlagsHandler: true\n")
	profiling := func() *kubelet.Kubelet { k := kubelet.New(); k.Profiling = true; return k }

	k, _, err := parsedKubelet(t, "--contention-profiling=true")
	require.NoError(t, err)
	kc := k.Server().KubeletConfiguration
	assert.False(t, kc.EnableProfilingHandler, "enableProfilingHandler off by default")
	assert.False(t, kc.EnableDebugFlagsHandler, "enableDebugFlagsHandler off by default")
	assert.False(t, kc.EnableContentionProfiling)
	assert.True(t, kc.EnableDebuggingHandlers, "logs, exec, attach and port-forward stay")

	k, _, err = parsedThis(t, profiling(), cgroupV1OptOut)
	require.NoError(t, err)
	kc = k.Server().KubeletConfiguration
	assert.True(t, kc.EnableProfilingHandler, "on with the opt-in")
	assert.True(t, kc.EnableDebugFlagsHandler, "on with the opt-in")

	k, _, err = parsedThis(t, profiling(), cgroupV1OptOut, "--config="+off)
	require.NoError(t, err)
	assert.False(t, k.Server().EnableProfilingHandler, "the file turns it off")
	assert.True(t, k.Server().EnableDebugFlagsHandler)

	k, _, err = parsedKubelet(t, "--config="+off)
	require.NoError(t, err, "a file turning one off needs no opt-in")
	assert.False(t, k.Server().EnableDebugFlagsHandler)

	var fe *scoping.FlagError
	_, _, err = parsedKubelet(t, "--config="+on)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, kubelet.Name+": --config="+on+": enableProfilingHandler: true: the kubelet's debug handlers cover the whole process (every component's profiles, its arguments, its verbosity); the distro turns them on (Kubelet.Profiling)", err.Error())
	_, _, err = parsedKubelet(t, "--config-dir="+dropins)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "--config-dir", fe.Flag)
	assert.Equal(t, filepath.Join(dropins, "10-flags.conf"), fe.Value)
	assert.ErrorContains(t, err, "enableDebugFlagsHandler: true")

	k, _, err = parsedThis(t, profiling(), cgroupV1OptOut, "--config="+on, "--config-dir="+dropins)
	require.NoError(t, err)
	assert.True(t, k.Server().EnableProfilingHandler)
	assert.True(t, k.Server().EnableDebugFlagsHandler)
}

// TestKubeletBadInput: each bad input fails Parse or Complete with a
// *scoping.FlagError naming the kubelet and what was wrong.
func TestKubeletBadInput(t *testing.T) {
	dir := t.TempDir()
	noKind := filepath.Join(dir, "nokind.d")
	writeFile(t, filepath.Join(noKind, "10.conf"), "maxPods: 3\n")
	otherKind := filepath.Join(dir, "otherkind.d")
	writeFile(t, filepath.Join(otherKind, "10.conf"), "apiVersion: v1\nkind: ConfigMap\n")
	unknownGate := filepath.Join(dir, "gate.yaml")
	writeFile(t, unknownGate, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates:\n  NoSuchGate: true\n")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing config file", []string{"--config=" + filepath.Join(dir, "missing.yaml")}, []string{"kubelet: --config=", "missing.yaml"}},
		{"drop-in without kind", []string{"--config-dir=" + noKind}, []string{"--config-dir=" + noKind, "10.conf: ", "'Kind' is missing"}},
		{"drop-in of another kind", []string{"--config-dir=" + otherKind}, []string{"10.conf: unknown apiVersion/kind"}},
		{"unknown gate in a file", []string{"--config=" + unknownGate}, []string{"--config=" + unknownGate, "unrecognized feature gate: NoSuchGate"}},
		{"unknown gate by flag", []string{"--feature-gates=NoSuchGate=true"}, []string{"--feature-gates", "NoSuchGate"}},
		{"bad value", []string{"--max-pods=many"}, []string{"invalid argument \"many\""}},
		{"invalid configuration", []string{"--event-burst=-1", "--healthz-port=70000"}, []string{"invalid configuration: eventBurst (--event-burst) -1", "healthzPort (--healthz-port) 70000"}},
		{"kubernetes.io node label", []string{"--node-labels=kubernetes.io/role=x"}, []string{"--node-labels"}},
		{"process-wide cadvisor flag", []string{"--housekeeping-interval=1s"}, []string{"cadvisor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _, err := parsedKubelet(t, tc.args...)
			var fe *scoping.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, kubelet.Name, fe.Component)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.Nil(t, k.Server(), "nothing to run")
		})
	}
}

// TestKubeletGatesAtTheBarrier: the kubelet's gates are reconciled with
// the apiserver's — a conflict is the barrier's one error naming both, the
// same value from both is SET-BY both — and the kubelet, which has no
// --emulated-version, runs at the control plane's: a gate new in the binary's minor is
// refused when the apiserver emulates the previous minor. Nothing runs in any case.
func TestKubeletGatesAtTheBarrier(t *testing.T) {
	dry := func(t *testing.T, apiserverArgs, kubeletArgs []string) (*scoping.Plan, error) {
		target := testenv.MustPrivateTarget()
		h := &harness.Harness{Target: &target, Logger: logr.Discard()}
		require.NoError(t, h.Add(components.NewAPIServer(), apiserverArgs))
		require.NoError(t, h.Add(kubelet.New(), append([]string{cgroupV1OptOut}, kubeletArgs...), components.APIServerName))
		return h.DryRun(t.Context())
	}
	gate := "--feature-gates=" + kubeletAlpha

	t.Run("conflict", func(t *testing.T) {
		_, err := dry(t, []string{gate + "=false"}, []string{gate + "=true"})
		var ce *scoping.ConflictError
		require.ErrorAs(t, err, &ce)
		assert.ErrorContains(t, err, "kube-apiserver sets false ("+gate+"=false)")
		assert.ErrorContains(t, err, "kubelet sets true ("+gate+"=true)")
	})
	t.Run("agree", func(t *testing.T) {
		plan, err := dry(t, []string{gate + "=true"}, []string{gate + "=true"})
		require.NoError(t, err)
		assert.Equal(t, "kube-apiserver=true,kubelet=true", featureState(t, plan, kubeletAlpha).SetBy())
	})
	t.Run("kubelet only", func(t *testing.T) {
		plan, err := dry(t, nil, []string{gate + "=true"})
		require.NoError(t, err)
		f := featureState(t, plan, kubeletAlpha)
		assert.True(t, f.Enabled)
		assert.Equal(t, "kubelet=true", f.SetBy())
	})
	t.Run("control plane emulates the previous minor", func(t *testing.T) {
		_, err := dry(t, []string{"--emulated-version=" + previousMinor}, []string{"--feature-gates=" + kubeletAlphaNew + "=true"})
		require.Error(t, err)
		assert.ErrorContains(t, err, kubeletAlphaNew)
		assert.ErrorContains(t, err, "kubelet")
	})
}

func featureState(t *testing.T, plan *scoping.Plan, name string) scoping.FeatureState {
	t.Helper()
	for _, f := range plan.FeatureStates() {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("%s not in the plan", name)
	return scoping.FeatureState{}
}

// TestKubeletRefusesCgroupV1: on a cgroup v1 host, upstream's default
// (failCgroupV1: true, v1.35+) fails Complete with upstream's reason,
// before the barrier; a file's failCgroupV1: false opts out.
func TestKubeletRefusesCgroupV1(t *testing.T) {
	if v1, err := node.CgroupV1(); err != nil || !v1 {
		t.Skipf("not a cgroup v1 host (%v)", err)
	}
	_, _, err := parsedKubeletExactly(t)
	var fe *scoping.FlagError
	require.ErrorAs(t, err, &fe)
	assert.ErrorContains(t, err, "kubelet: invalid configuration: kubelet is configured to not run on a host using cgroup v1")
	config := filepath.Join(t.TempDir(), "kubelet.yaml")
	writeFile(t, config, "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfailCgroupV1: false\n")
	_, _, err = parsedKubeletExactly(t, "--config="+config)
	require.NoError(t, err)
}

// TestKubeletPortTaken: a taken port is Run's named error, before anything
// of upstream's runs (upstream's server exits the process instead).
func TestKubeletPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	k, _, err := parsedKubelet(t, "--address=127.0.0.1", "--port="+port, "--healthz-port=0", "--root-dir="+t.TempDir())
	require.NoError(t, err)
	err = k.Run(t.Context())
	var fe *scoping.FlagError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "--port", fe.Flag)
	assert.Equal(t, "127.0.0.1:"+port, fe.Value)
	assert.ErrorContains(t, err, "address already in use")
}

// TestKubeletStartsOnce: the kubelet is a harness.Once, not a Renewer: the
// harness refuses to restart it.
func TestKubeletStartsOnce(t *testing.T) {
	var c harness.Component = kubelet.New()
	once, ok := c.(harness.Once)
	require.True(t, ok)
	assert.Contains(t, once.StartsOnce(), "wait.NeverStop")
	_, renews := c.(harness.Renewer)
	assert.False(t, renews)
	k := kubelet.New()
	assert.ErrorContains(t, k.Run(t.Context()), "Run before AddFlags and Complete")
}

// TestDefaultKubeletFlags: the defaults a distro gets are flags upstream's
// kubelet accepts and validates, and say what they should.
func TestDefaultKubeletFlags(t *testing.T) {
	dir := t.TempDir()
	files, err := pki.Ensure(pki.Config{Dir: filepath.Join(dir, "pki"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	_, err = files.EnsureNode(pki.Node{Name: "node-a"}, "https://127.0.0.1:6443")
	require.NoError(t, err)
	v1, err := node.CgroupV1()
	require.NoError(t, err)
	flags := node.DefaultKubeletFlags(files.Layout(), node.Settings{
		Name: "node-a", IP: net.ParseIP("192.0.2.10"), RootDir: filepath.Join(dir, "kubelet"), RuntimeSocket: filepath.Join(dir, "containerd.sock"),
		ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local", Labels: map[string]string{"b": "2", "a": "1"}, Taints: []string{"dedicated=x:NoSchedule"},
		AllowCgroupV1: v1,
	})
	args := kubeargs.Merge(flags, nil, nil)
	k, _, err := parsedKubeletExactly(t, args...)
	require.NoError(t, err)
	s := k.Server()
	assert.Equal(t, "node-a", s.HostnameOverride)
	assert.Equal(t, "192.0.2.10", s.NodeIP)
	assert.Equal(t, map[string]string{"a": "1", "b": "2"}, s.NodeLabels)
	assert.Equal(t, "unix://"+filepath.Join(dir, "containerd.sock"), s.ContainerRuntimeEndpoint)
	assert.False(t, s.Authentication.Anonymous.Enabled)
	assert.Equal(t, "Webhook", string(s.Authorization.Mode))
	assert.Equal(t, int32(0), s.ReadOnlyPort)
	assert.Equal(t, []string{"10.43.0.10"}, s.ClusterDNS)
	assert.Equal(t, "cgroupfs", s.CgroupDriver)
	require.Len(t, s.RegisterWithTaints, 1)
	assert.Equal(t, "dedicated", s.RegisterWithTaints[0].Key)
	assert.Equal(t, !v1, s.FailCgroupV1)
	assert.Equal(t, files.Layout().NodeLayout("node-a").Serving().CertFile, s.TLSCertFile)
	assert.False(t, s.ServerTLSBootstrap)
	// The CIS Benchmark's kubelet items (4.2.5, 4.2.10, 4.2.12).
	assert.Equal(t, 5*time.Minute, s.StreamingConnectionIdleTimeout.Duration)
	assert.True(t, s.RotateCertificates, "every node renews its client certificate while it runs")
	assert.Equal(t, pki.StrongCipherSuites(), s.TLSCipherSuites)
	assert.False(t, s.ProtectKernelDefaults)

	flags = node.DefaultKubeletFlags(files.Layout(), node.Settings{
		Name: "node-a", RootDir: filepath.Join(dir, "kubelet"), RuntimeSocket: filepath.Join(dir, "containerd.sock"),
		AllowCgroupV1: v1, ProtectKernelDefaults: true,
	})
	k, _, err = parsedKubeletExactly(t, kubeargs.Merge(flags, nil, nil)...)
	require.NoError(t, err)
	assert.True(t, k.Server().ProtectKernelDefaults)

	// An agent's kubelet asks for its serving certificate instead.
	flags = node.DefaultKubeletFlags(files.Layout(), node.Settings{
		Name: "node-a", RootDir: filepath.Join(dir, "kubelet"), RuntimeSocket: filepath.Join(dir, "containerd.sock"),
		ServingBootstrap: true, AllowCgroupV1: v1,
	})
	k, _, err = parsedKubeletExactly(t, kubeargs.Merge(flags, nil, nil)...)
	require.NoError(t, err)
	assert.True(t, k.Server().ServerTLSBootstrap)
	assert.Empty(t, k.Server().TLSCertFile, "no file: the certificate comes from the signer")
}
