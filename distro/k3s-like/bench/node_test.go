package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dryRunJSON is a `server --dry-run --output json` of these components.
func dryRunJSON(t *testing.T, comps map[string][]string) []byte {
	t.Helper()
	type comp struct {
		Name string   `json:"name"`
		Args []string `json:"args"`
	}
	var out struct {
		Components []comp `json:"components"`
	}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "containerd", "kubelet", "kube-proxy"} {
		if args, ok := comps[name]; ok {
			out.Components = append(out.Components, comp{name, args})
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNodeArgs: B's node arguments are A's dry-run's, and only when B's
// control plane runs with A's arguments.
func TestNodeArgs(t *testing.T) {
	cp := map[string][]string{
		"etcd":                    nil,
		"kube-apiserver":          {"--secure-port=6443", "--advertise-address=192.0.2.10"},
		"kube-scheduler":          {"--secure-port=10259"},
		"kube-controller-manager": {"--secure-port=10257"},
	}
	withNode := func(kubelet, proxy []string) map[string][]string {
		m := map[string][]string{"containerd": nil, "kubelet": kubelet, "kube-proxy": proxy}
		for k, v := range cp {
			m[k] = v
		}
		return m
	}
	kubelet := []string{"--kubeconfig=/d/tls/node/n/kubelet.kubeconfig", "--container-runtime-endpoint=unix:///run/k3s-like/x/containerd.sock"}
	proxy := []string{"--hostname-override=n"}
	a := dryRunJSON(t, withNode(kubelet, proxy))
	k, p, err := nodeArgs(a, dryRunJSON(t, cp))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(k, " ") != strings.Join(kubelet, " ") || strings.Join(p, " ") != strings.Join(proxy, " ") {
		t.Errorf("got kubelet %q, kube-proxy %q", k, p)
	}

	other := map[string][]string{}
	for k, v := range cp {
		other[k] = v
	}
	other["kube-apiserver"] = []string{"--secure-port=6443", "--advertise-address=127.0.0.1"}
	if _, _, err := nodeArgs(a, dryRunJSON(t, other)); err == nil || !strings.Contains(err.Error(), "kube-apiserver runs with other arguments") {
		t.Errorf("a control plane with other arguments: %v", err)
	}
	if _, _, err := nodeArgs(a, a); err == nil || !strings.Contains(err.Error(), "runs a kubelet") {
		t.Errorf("B with a kubelet: %v", err)
	}
	if _, _, err := nodeArgs(dryRunJSON(t, cp), dryRunJSON(t, cp)); err == nil {
		t.Error("no kubelet in A: no error")
	}
	redacted := dryRunJSON(t, withNode(append([]string{"--token=<redacted>"}, kubelet...), proxy))
	if _, _, err := nodeArgs(redacted, dryRunJSON(t, cp)); err == nil || !strings.Contains(err.Error(), "redacted") {
		t.Errorf("a redacted argument: %v", err)
	}
}

// TestRuntimeFiles: B gets A's runtime files, links as links, the
// helper programs agent/bin links to byte for byte at their path, the CNI
// configuration held back until the node has its pod CIDR, then written
// for it.
func TestRuntimeFiles(t *testing.T) {
	data := t.TempDir()
	a := filepath.Join(data, "agent")
	for _, d := range []string{"etc/containerd/certs.d", "etc/cni/net.d", "../data/h1/bin"} {
		if err := os.MkdirAll(filepath.Join(a, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conflist := `{"plugins": [{"ipam": {"ranges": [[{"subnet": "10.42.0.0/24"}]]}}]}`
	files := map[string]string{"etc/containerd/config.toml": "version = 3\n", "etc/cni/net.d/10-k3s-like.conflist": conflist}
	for f, c := range files {
		if err := os.WriteFile(filepath.Join(a, f), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	helpers := filepath.Join(data, "data", "h1", "bin")
	if err := os.WriteFile(filepath.Join(helpers, "cni"), []byte("the cni program"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("cni", filepath.Join(helpers, "bridge")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(helpers, filepath.Join(a, "bin")); err != nil {
		t.Fatal(err)
	}
	tmpl, err := readRuntimeFiles(data, "10.42.0.0/24")
	if err != nil {
		t.Fatal(err)
	}

	bData := t.TempDir()
	b := filepath.Join(bData, "agent")
	if err := tmpl.write(bData); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(b, "bin")); err != nil || target != helpers {
		t.Errorf("agent/bin: %q, %v", target, err)
	}
	if st, err := os.Stat(filepath.Join(bData, "data", "h1", "bin", "cni")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("the cni program: %v %v", st, err)
	} else if got, _ := os.ReadFile(filepath.Join(bData, "data", "h1", "bin", "cni")); string(got) != "the cni program" {
		t.Errorf("the cni program: %q", got)
	}
	if target, err := os.Readlink(filepath.Join(bData, "data", "h1", "bin", "bridge")); err != nil || target != "cni" {
		t.Errorf("bridge: %q, %v", target, err)
	}
	if got, _ := os.ReadFile(filepath.Join(b, "etc/containerd/config.toml")); string(got) != "version = 3\n" {
		t.Errorf("config.toml %q", got)
	}
	if st, err := os.Stat(filepath.Join(b, "etc/containerd/certs.d")); err != nil || !st.IsDir() {
		t.Errorf("certs.d: %v", err)
	}
	conf := filepath.Join(b, "etc/cni/net.d/10-k3s-like.conflist")
	if _, err := os.Stat(conf); !os.IsNotExist(err) {
		t.Errorf("the CNI configuration is there before the pod CIDR: %v", err)
	}
	if err := tmpl.writeCNI(bData, "10.42.1.0/24"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(conf); string(got) != strings.Replace(conflist, "10.42.0.0/24", "10.42.1.0/24", 1) {
		t.Errorf("conflist %s", got)
	}

	if _, err := readRuntimeFiles(bData, "x"); err != nil {
		t.Errorf("B's own files read back: %v", err)
	}
	if err := os.Remove(conf); err != nil {
		t.Fatal(err)
	}
	if _, err := readRuntimeFiles(bData, "x"); err == nil {
		t.Error("no CNI configuration: no error")
	}

	// No helpers embedded: agent/bin is a directory of links to the
	// binary, and there is no data directory.
	if err := os.RemoveAll(filepath.Join(data, "data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(a, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(a, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/k3s-like", filepath.Join(a, "bin", "bridge")); err != nil {
		t.Fatal(err)
	}
	tmpl, err = readRuntimeFiles(data, "10.42.0.0/24")
	if err != nil {
		t.Fatal(err)
	}
	cData := t.TempDir()
	if err := tmpl.write(cData); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(cData, "agent", "bin", "bridge")); err != nil || target != "/bin/k3s-like" {
		t.Errorf("bin/bridge: %q, %v", target, err)
	}
}

// TestRenderNode: the report has each table, the pair ratios, the node
// estimate (A's server less B's) and what a stop left.
func TestRenderNode(t *testing.T) {
	mk := func(kind string, pair int, running time.Duration, procs ...procFigures) nodeResult {
		return nodeResult{kind: kind, pair: pair, nodeReady: 8 * time.Second, running: running, procs: procs,
			shims: shimFigures{shims: 100, procs: 300, rss: 100 << 10, anon: 20 << 10, pss: 30 << 10, cpu: 20 * time.Second}, stop: time.Second}
	}
	p := func(name string, rssMiB int64, cpu time.Duration) procFigures {
		return procFigures{name: name, rss: rssMiB << 10, anon: rssMiB << 9, pss: rssMiB << 9, cpu: cpu}
	}
	var rs []nodeResult
	for i := 1; i <= 2; i++ {
		a := mk("A", i, 80*time.Second, p("k3s-like server", 600, 20*time.Second), p("containerd", 200, 15*time.Second))
		if i == 2 {
			a.leftover = "k3s-like server: exit status 1"
		}
		b := mk("B", i, 100*time.Second, p("k3s-like server --disable-agent", 500, 18*time.Second), p("containerd", 200, 15*time.Second),
			p("kubelet", 130, 8*time.Second), p("kube-proxy", 60, time.Second))
		rs = append(rs, a, b)
	}
	b := &nodeBench{runDir: "/run/k3s-like/x", cgroupRoot: "/kubeharness-bench-node-1", versions: []string{"`kubelet`: Kubernetes v1.37.2"}}
	out := renderNode(b, config{pairs: 2, node: nodeFlags{pods: 100}}, rs, time.Minute, "1 1 1", "`abc`")
	reportHas(t, out,
		"## A against B (100 Pods, 2 pairs)",
		"| workload created → all Pods Running and Ready | 80.00 s (80.00–80.00) | 100.00 s (100.00–100.00) | 0.80 |",
		"| RSS, all processes | 800.00 MiB (800.00–800.00) | 890.00 MiB (890.00–890.00) | 0.90 |",
		// A's server less B's: 100 MiB, against B's kubelet and kube-proxy, 190.
		"| kubelet + kube-proxy (A: estimate) | RSS | 100.00 MiB (100.00–100.00) | 190.00 MiB (190.00–190.00) | 0.53 |",
		"| the node (A: estimate) | CPU | 17.00 s (17.00–17.00) | 24.00 s (24.00–24.00) | 0.71 |",
		"| B | kubelet | 130.00 MiB",
		"| shims | 100 (100–100) | 100 (100–100) |",
		"## By process (medians, 0 Pods: the Node Ready and idle; CPU since exec)",
		"during A's runs",
		"| **median** |",
		"A2: k3s-like server: exit status 1",
	)
}

// reportHas fails t for each of wants the report out lacks.
func reportHas(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

// TestUsesKubeletCredential: B waits for the older node-join binding only
// when kube-proxy's arguments give it the kubelet's kubeconfig.
func TestUsesKubeletCredential(t *testing.T) {
	for args, want := range map[string]bool{
		"--hostname-override=bench-node --kubeconfig=/d/tls/node/bench-node/kubelet.kubeconfig":    true,
		"--hostname-override=bench-node --kubeconfig=/d/tls/node/bench-node/kube-proxy.kubeconfig": false,
		"--hostname-override=bench-node": false,
	} {
		if got := usesKubeletCredential(strings.Fields(args)); got != want {
			t.Errorf("%s: %v, want %v", args, got, want)
		}
	}
}

// TestIsContainerd: the node's containerd, as the helper program or as
// the binary's personality, and nothing else the server starts.
func TestIsContainerd(t *testing.T) {
	for cmdline, want := range map[string]bool{
		"/d/agent/bin/containerd --config /d/agent/etc/containerd/config.toml ":         true,
		"/usr/bin/k3s-like containerd --config /d/agent/etc/containerd/config.toml ":    true,
		"/d/agent/bin/containerd-shim-runc-v2 -namespace k8s.io -id x -address /run/s ": false,
		"/usr/bin/k3s-like server --data-dir=/d ":                                       false,
		"/d/agent/bin/containerd ":                                                      false,
	} {
		if got := isContainerd(cmdline); got != want {
			t.Errorf("isContainerd(%q) = %v, want %v", cmdline, got, want)
		}
	}
}
