package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var testValues = Values{ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local", Image: CoreDNSImage}

// decodeAll decodes a manifest, failing the test on an error.
func decodeAll(t *testing.T, data []byte) map[string]map[string]any {
	t.Helper()
	objs, err := decodeManifest("coredns.yaml", data)
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

// TestRenderCoreDNS: the packaged CoreDNS is k3s's, with this server's
// DNS address, domain and image, and forwards nowhere by default.
func TestRenderCoreDNS(t *testing.T) {
	data, err := renderPackaged("coredns", testValues)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "# Written by k3s-like at every start; create coredns.yaml.skip"))
	objs := decodeAll(t, data)
	assert.ElementsMatch(t, []string{
		"ServiceAccount kube-system/coredns", "ClusterRole /system:coredns", "ClusterRoleBinding /system:coredns",
		"ConfigMap kube-system/coredns", "Deployment kube-system/coredns", "Service kube-system/kube-dns",
	}, keys(objs))

	var cm corev1.ConfigMap
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["ConfigMap kube-system/coredns"], &cm))
	corefile := cm.Data["Corefile"]
	for _, want := range []string{"kubernetes cluster.local in-addr.arpa ip6.arpa {", "pods insecure", "hosts /etc/coredns/NodeHosts {", "prometheus :9153", "cache 30", "loop", "reload", "loadbalance", "ready", "health"} {
		assert.Contains(t, corefile, want)
	}
	assert.NotContains(t, corefile, "forward", "no upstream by default: nothing leaves the machine")

	var svc corev1.Service
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["Service kube-system/kube-dns"], &svc))
	assert.Equal(t, "10.43.0.10", svc.Spec.ClusterIP)
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, strconv.Itoa(int(p.Port))+"/"+string(p.Protocol))
	}
	assert.Equal(t, []string{"53/UDP", "53/TCP", "9153/TCP"}, ports)

	var dep appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["Deployment kube-system/coredns"], &dep))
	assert.EqualValues(t, 1, *dep.Spec.Replicas)
	pod := dep.Spec.Template.Spec
	assert.Equal(t, "system-cluster-critical", pod.PriorityClassName)
	assert.Equal(t, map[string]string{"kubernetes.io/os": "linux"}, pod.NodeSelector)
	assert.Equal(t, "coredns", pod.ServiceAccountName)
	c := pod.Containers[0]
	assert.Equal(t, CoreDNSImage, c.Image)
	assert.Equal(t, corev1.PullNever, c.ImagePullPolicy, "no registry is asked")
	assert.Equal(t, "/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, 8181, c.ReadinessProbe.HTTPGet.Port.IntValue())
	assert.Equal(t, "/health", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, 8080, c.LivenessProbe.HTTPGet.Port.IntValue())
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.Equal(t, []corev1.Capability{"NET_BIND_SERVICE"}, c.SecurityContext.Capabilities.Add)

	// Another address and domain, and an upstream.
	v := testValues
	v.ClusterDNS, v.ClusterDomain, v.Upstreams = "10.96.0.10", "example.internal", []string{"192.0.2.53", "/etc/resolv.conf"}
	data, err = renderPackaged("coredns", v)
	require.NoError(t, err)
	objs = decodeAll(t, data)
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["ConfigMap kube-system/coredns"], &cm))
	assert.Contains(t, cm.Data["Corefile"], "kubernetes example.internal in-addr.arpa ip6.arpa {")
	assert.Contains(t, cm.Data["Corefile"], "\n    forward . 192.0.2.53 /etc/resolv.conf\n    cache 30\n")
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(objs["Service kube-system/kube-dns"], &svc))
	assert.Equal(t, "10.96.0.10", svc.Spec.ClusterIP)
}

func keys(m map[string]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWritePackaged: written 0600 and ours; a .skip file keeps the file
// as it is; --disable removes ours, never a file of the user's.
func TestWritePackaged(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "coredns.yaml")
	require.NoError(t, writePackaged(dir, testValues, nil, logr.Discard()))
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.True(t, ours(file, "coredns"))
	want, err := renderPackaged("coredns", testValues)
	require.NoError(t, err)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	// A change is overwritten at the next start.
	require.NoError(t, os.WriteFile(file, append(got, "# edited\n"...), 0o600))
	require.NoError(t, writePackaged(dir, testValues, nil, logr.Discard()))
	got, _ = os.ReadFile(file)
	assert.Equal(t, string(want), string(got))

	// With coredns.yaml.skip, the user's own file stays; disabling leaves it.
	require.NoError(t, os.WriteFile(file, []byte("# mine\n"), 0o600))
	require.NoError(t, os.WriteFile(file+".skip", nil, 0o600))
	require.NoError(t, writePackaged(dir, testValues, nil, logr.Discard()))
	got, _ = os.ReadFile(file)
	assert.Equal(t, "# mine\n", string(got))
	assert.False(t, ours(file, "coredns"))
	require.NoError(t, writePackaged(dir, testValues, []string{"coredns"}, logr.Discard()))
	_, err = os.Stat(file)
	assert.NoError(t, err, "a file that is not ours stays")

	// Disabled: ours is removed, and not written again.
	require.NoError(t, os.Remove(file+".skip"))
	require.NoError(t, writePackaged(dir, testValues, nil, logr.Discard()))
	require.True(t, ours(file, "coredns"))
	require.NoError(t, writePackaged(dir, testValues, []string{"coredns"}, logr.Discard()))
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "disabled: ours removed (%v)", err)
	require.NoError(t, writePackaged(dir, testValues, []string{"coredns"}, logr.Discard()))
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "disabled: not written")
}

// TestDecodeManifest: multi-document YAML (empty and comment-only
// documents skipped), JSON, a List's items; errors name the file and the
// document.
func TestDecodeManifest(t *testing.T) {
	objs, err := decodeManifest("a.yaml", []byte(`---
# only a comment
---
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: one, namespace: a}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}
`))
	require.NoError(t, err)
	var names []string
	for _, o := range objs {
		names = append(names, o.GetKind()+"/"+o.GetName())
	}
	assert.Equal(t, []string{"Namespace/a", "ConfigMap/one", "ConfigMap/two"}, names)

	objs, err = decodeManifest("b.json", []byte(`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "j"}, "data": {"k": "v"}}`))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "j", objs[0].GetName())

	for _, tc := range []struct{ text, want string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\nkind: [unclosed\n", "bad.yaml: document 2: "},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nmetadata: {name: x}\n", "bad.yaml: document 2: "},
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "bad.yaml: document 1: an object needs apiVersion, kind and metadata.name"},
		{"- just\n- a list\n", "bad.yaml: document 1: "},
	} {
		_, err := decodeManifest("bad.yaml", []byte(tc.text))
		assert.ErrorContains(t, err, tc.want, "%q", tc.text)
	}
}

func TestIsManifestAndRecordName(t *testing.T) {
	for name, want := range map[string]bool{
		"coredns.yaml": true, "x.yml": true, "x.json": true,
		"coredns.yaml.skip": false, ".coredns.yaml.123": false, "notes.txt": false, ".hidden.yaml": false,
	} {
		assert.Equal(t, want, isManifest(name), name)
	}
	assert.Equal(t, "k3s-like-manifest-coredns", recordName("coredns.yaml"))
	assert.Equal(t, "k3s-like-manifest-my-app.v2", recordName("My_App.v2.json"))
}

// TestCoreDNSImageIsTheImagesOne: CoreDNSImage is images.CoreDNSName,
// read from the repository's images/specs.go (this module does not require
// that one).
func TestCoreDNSImageIsTheImagesOne(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "..", "..", "..", "images", "specs.go"), nil, 0)
	require.NoError(t, err)
	var name string
	ast.Inspect(f, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "CoreDNSName" && len(vs.Values) == 1 {
			if lit, ok := vs.Values[0].(*ast.BasicLit); ok {
				name, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	require.NotEmpty(t, name, "images.CoreDNSName in images/specs.go")
	assert.Equal(t, name, CoreDNSImage)
}
