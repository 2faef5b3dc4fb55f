package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// The packaged components' end-to-end tests: CoreDNS on the node answers
// for the cluster and for nothing outside it; --disable coredns deletes
// it; a user's manifest is applied, re-applied when it changes, and what
// it no longer holds is deleted.

// coreDNSObjects are what the packaged CoreDNS creates, as kubectl names them.
var coreDNSObjects = [][]string{
	{"-n", "kube-system", "deployment", "coredns"},
	{"-n", "kube-system", "service", "kube-dns"},
	{"-n", "kube-system", "configmap", "coredns"},
	{"-n", "kube-system", "serviceaccount", "coredns"},
	{"clusterrole", "system:coredns"},
	{"clusterrolebinding", "system:coredns"},
}

// manifestRecord is where the deployer records what a file (its record
// name) applied: under DATA_DIR, not in the cluster.
func manifestRecord(dataDir, name string) string {
	return filepath.Join(dataDir, "server", "manifests-applied", name+".json")
}

// TestCoreDNSResolves: with the node, the packaged CoreDNS (the image
// `make images` builds) becomes Ready; the kubelet gives Pods the kube-dns
// Service's IP as their nameserver; from a busybox Pod the kubernetes
// Service's and another Service's names resolve to their cluster IPs, and
// a name outside the cluster does not (nothing is forwarded).
func TestCoreDNSResolves(t *testing.T) {
	requireNodeHost(t)
	busybox := busyboxImage(t)
	s := startNodeServer(t, t.TempDir())
	const kubernetesIP = "10.43.0.1" // the first of --service-cidr
	s.waitNodeReady(90 * time.Second)
	s.waitFor("10.43.0.10", 60*time.Second, "-n", "kube-system", "get", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")
	require.Equal(t, kubernetesIP, s.kubectl("get", "service", "kubernetes", "-o", "jsonpath={.spec.clusterIP}"))
	s.waitFor("1", 3*time.Minute, "-n", "kube-system", "get", "deployment", "coredns", "-o", "jsonpath={.status.readyReplicas}")
	t.Logf("DNS CoreDNS Ready %.1fs after the start", time.Since(s.started).Seconds())
	corednsIP := s.kubectl("-n", "kube-system", "get", "pods", "-l", "k8s-app=kube-dns", "-o", "jsonpath={.items[0].status.podIP}")

	s.apply(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: dns-client}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3599"]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80}]
`, busybox))
	s.waitFor("Running", 60*time.Second, "get", "pod", "dns-client", "-o", "jsonpath={.status.phase}")
	webIP := s.kubectl("get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")

	resolv := s.kubectl("exec", "dns-client", "--", "cat", "/etc/resolv.conf")
	assert.Contains(t, resolv, "nameserver 10.43.0.10\n", "the kubelet's --cluster-dns is the kube-dns Service's IP")
	assert.Contains(t, resolv, "search default.svc.cluster.local svc.cluster.local cluster.local")

	lookup := func(args ...string) string {
		out, _ := s.kubectlErr(append([]string{"exec", "dns-client", "--", "nslookup", "-type=a"}, args...)...)
		return out
	}
	answer := func(name, ip string) *regexp.Regexp {
		return regexp.MustCompile(`Name:\s+` + regexp.QuoteMeta(name) + `\s+Address:?\s+` + regexp.QuoteMeta(ip) + `\s`)
	}
	// CoreDNS itself, by its Pod IP.
	out := lookup("kubernetes.default.svc.cluster.local", corednsIP)
	assert.Regexp(t, answer("kubernetes.default.svc.cluster.local", kubernetesIP), out, "by CoreDNS's Pod IP")
	// Through the Pod's resolv.conf: the kube-dns Service.
	out = lookup("kubernetes.default.svc.cluster.local")
	assert.Contains(t, out, "Server:\t\t10.43.0.10", out)
	assert.Regexp(t, answer("kubernetes.default.svc.cluster.local", kubernetesIP), out)
	out = lookup("web.default.svc.cluster.local")
	assert.Regexp(t, answer("web.default.svc.cluster.local", webIP), out)
	// Outside the cluster: no answer, nothing forwarded.
	out = lookup("example.com")
	assert.NotRegexp(t, `Name:\s+example\.com`, out)
	assert.Regexp(t, `SERVFAIL|NXDOMAIN|can't find|Can't find`, out)
	t.Logf("nslookup example.com from the Pod:\n%s", out)
	require.NoError(t, s.stop())
}

// TestDisableCoreDNS: --disable with an unknown name is exit 1 naming the
// packaged ones; a first start deploys CoreDNS (its objects and its
// record); a restart with --disable coredns deletes every one and its
// file; a first start with it deploys nothing. The control plane only:
// the objects are the same without a node.
func TestDisableCoreDNS(t *testing.T) {
	dataDir := t.TempDir()
	s := newServer(t, dataDir)
	out, err := exec.Command(binary, s.args("--disable=traefik")...).CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, lastLine(string(out)), "--disable=traefik: not a packaged component; they are coredns")

	file := filepath.Join(dataDir, "server", "manifests", "coredns.yaml")
	s.start()
	s.waitReady(90 * time.Second)
	c := s.client()
	ctx := t.Context()
	for _, obj := range coreDNSObjects {
		assert.Eventually(t, func() bool { return getObject(ctx, c, obj) == nil }, 30*time.Second, 250*time.Millisecond, "%v after a start", obj)
	}
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	recFile := manifestRecord(dataDir, "k3s-like-manifest-coredns")
	st, err = os.Stat(recFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the record is the server's")
	raw, err := os.ReadFile(recFile)
	require.NoError(t, err)
	var rec struct {
		File, Checksum string
		Objects        []map[string]string
	}
	require.NoError(t, json.Unmarshal(raw, &rec))
	assert.Len(t, rec.Objects, 6, "the record lists the manifest's objects: %s", raw)
	assert.Equal(t, "coredns.yaml", rec.File)
	assert.Regexp(t, `^[0-9a-f]{64}$`, rec.Checksum)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	require.Equal(t, 0, code)

	s2 := &server{t: t, dataDir: dataDir, ports: s.ports}
	s2.start("--disable=coredns")
	s2.waitReady(90 * time.Second)
	c = s2.client()
	for _, obj := range coreDNSObjects {
		assert.Eventually(t, func() bool { return apierrors.IsNotFound(getObject(ctx, c, obj)) }, 30*time.Second, 250*time.Millisecond, "%v after a start with --disable coredns", obj)
	}
	assert.Eventually(t, func() bool {
		rs, err := c.AppsV1().ReplicaSets("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=kube-dns"})
		return err == nil && len(rs.Items) == 0
	}, 60*time.Second, time.Second, "the Deployment's ReplicaSets are collected")
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "its file removed: %v", err)
	_, err = os.Stat(recFile)
	assert.True(t, os.IsNotExist(err), "its record removed: %v", err)
	assert.Contains(t, s2.stderr.String(), "Deleted what a removed manifest applied")
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s2.wait(30 * time.Second)
	require.Equal(t, 0, code)

	// A first start with --disable coredns.
	s3 := newServer(t, t.TempDir())
	s3.start("--disable", "coredns")
	s3.waitReady(90 * time.Second)
	c = s3.client()
	for _, obj := range coreDNSObjects {
		assert.True(t, apierrors.IsNotFound(getObject(ctx, c, obj)), "%v on a first start with --disable coredns", obj)
	}
	_, err = os.Stat(filepath.Join(s3.dataDir, "server", "manifests", "coredns.yaml"))
	assert.True(t, os.IsNotExist(err), "not written: %v", err)
	require.NoError(t, s3.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s3.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// getObject gets one of coreDNSObjects.
func getObject(ctx context.Context, c kubernetes.Interface, obj []string) error {
	ns, kind, name := "", obj[0], obj[1]
	if obj[0] == "-n" {
		ns, kind, name = obj[1], obj[2], obj[3]
	}
	var err error
	switch kind {
	case "deployment":
		_, err = c.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	case "service":
		_, err = c.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	case "configmap":
		_, err = c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	case "serviceaccount":
		_, err = c.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
	case "clusterrole":
		_, err = c.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	case "clusterrolebinding":
		_, err = c.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	default:
		err = fmt.Errorf("unknown kind %s", kind)
	}
	return err
}

// TestUserManifests: a user's manifests in DATA_DIR/server/manifests (YAML
// of several documents, JSON) are applied at start with the deploy field
// manager; a malformed one is an error naming the file and the document
// while the others apply; a changed file is applied again and what it no
// longer holds is deleted; a removed file's objects are deleted.
func TestUserManifests(t *testing.T) {
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "server", "manifests")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	app := filepath.Join(dir, "app.yaml")
	write := func(path, text string) {
		require.NoError(t, os.WriteFile(path+".tmp", []byte(text), 0o600))
		require.NoError(t, os.Rename(path+".tmp", path))
	}
	cm := func(name, value string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: user-app}\ndata: {k: %s}\n", name, value)
	}
	write(app, "apiVersion: v1\nkind: Namespace\nmetadata: {name: user-app}\n---\n"+cm("one", "v1")+"---\n"+cm("two", "v1"))
	write(filepath.Join(dir, "cm.json"), `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json"}, "data": {"k": "json"}}`)
	write(filepath.Join(dir, "broken.yaml"), cm("fine", "v1")+"---\napiVersion: v1\nkind: [ConfigMap\n")

	s := newServer(t, dataDir)
	s.start()
	s.waitReady(90 * time.Second)
	c := s.client()
	ctx := t.Context()
	value := func(ns, name string) string {
		got, err := c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "(none)"
		}
		require.NoError(t, err)
		return got.Data["k"]
	}
	assert.Equal(t, "v1", value("user-app", "one"))
	assert.Equal(t, "v1", value("user-app", "two"))
	assert.Equal(t, "json", value("default", "from-json"))
	assert.Equal(t, "(none)", value("user-app", "fine"), "nothing of a malformed file is applied")
	got, err := c.CoreV1().ConfigMaps("user-app").Get(ctx, "one", metav1.GetOptions{})
	require.NoError(t, err)
	var managers []string
	for _, f := range got.ManagedFields {
		managers = append(managers, f.Manager+"/"+string(f.Operation))
	}
	assert.Contains(t, managers, "k3s-like-deploy/Apply")
	assert.Contains(t, s.stderr.String(), "broken.yaml: document 2: ")

	// Changed: one's value, two dropped, broken fixed.
	changed := time.Now()
	write(app, "apiVersion: v1\nkind: Namespace\nmetadata: {name: user-app}\n---\n"+cm("one", "v2"))
	write(filepath.Join(dir, "broken.yaml"), cm("fine", "v1"))
	require.Eventually(t, func() bool {
		return value("user-app", "one") == "v2" && value("user-app", "two") == "(none)" && value("user-app", "fine") == "v1"
	}, 40*time.Second, 500*time.Millisecond, "the changed files applied again, two deleted")
	t.Logf("MANIFESTS a changed file applied again %.1fs after the change", time.Since(changed).Seconds())

	// Removed: its objects deleted, its record too.
	require.NoError(t, os.Remove(app))
	require.Eventually(t, func() bool {
		_, err := os.Stat(manifestRecord(dataDir, "k3s-like-manifest-app"))
		ns, nsErr := c.CoreV1().Namespaces().Get(ctx, "user-app", metav1.GetOptions{})
		gone := apierrors.IsNotFound(nsErr) || nsErr == nil && ns.DeletionTimestamp != nil
		return os.IsNotExist(err) && gone
	}, 40*time.Second, 500*time.Millisecond, "the removed file's Namespace and record deleted")
	assert.Equal(t, "json", value("default", "from-json"), "the other files' objects stay")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// TestForgedManifestRecord: the deployer's records are its own. A
// ConfigMap in kube-system with the label an older release's records had,
// listing an object the deployer did not create (as anyone who may write
// ConfigMaps there can make), deletes nothing, neither at start nor when a
// file of the same name is removed; the removed file's own object is
// deleted. Everything the deployer applies carries its file's owner label,
// and it applies as its own user (kubeharness:manifest-deployer, bound
// cluster-admin), not system:masters: the audit log shows who wrote.
func TestForgedManifestRecord(t *testing.T) {
	dataDir := t.TempDir()
	s := newServer(t, dataDir)
	s.start()
	s.waitReady(90 * time.Second)
	c := s.client()
	ctx := t.Context()

	victim := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"}, Data: map[string]string{"k": "mine, not the deployer's"}}
	_, err := c.CoreV1().ConfigMaps("default").Create(ctx, victim, metav1.CreateOptions{})
	require.NoError(t, err)
	objects := `[{"apiVersion":"v1","kind":"ConfigMap","namespace":"default","name":"victim"}]`
	for _, name := range []string{"k3s-like-manifest-evil", "k3s-like-manifest-app"} {
		_, err := c.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"kubeharness.io/k3s-like-manifest": "true"}},
			Data:       map[string]string{"file": strings.TrimPrefix(name, "k3s-like-manifest-") + ".yaml", "objects": objects},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	// A user's file of the same name as a forged record, applied, then
	// removed.
	app := filepath.Join(dataDir, "server", "manifests", "app.yaml")
	require.NoError(t, os.WriteFile(app, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-app, namespace: default}\ndata: {k: v}\n"), 0o600))
	var applied *corev1.ConfigMap
	require.Eventually(t, func() bool {
		applied, err = c.CoreV1().ConfigMaps("default").Get(ctx, "from-app", metav1.GetOptions{})
		return err == nil
	}, 40*time.Second, 500*time.Millisecond, "app.yaml applied")
	assert.Regexp(t, `^[0-9a-f]{32}$`, applied.Labels["kubeharness.io/k3s-like-manifest-owner"], "the owner label")
	require.NoError(t, os.Remove(app))
	require.Eventually(t, func() bool {
		_, err := c.CoreV1().ConfigMaps("default").Get(ctx, "from-app", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 40*time.Second, 500*time.Millisecond, "the removed file's own object deleted")

	got, err := c.CoreV1().ConfigMaps("default").Get(ctx, "victim", metav1.GetOptions{})
	require.NoError(t, err, "the object the forged records list is not deleted")
	assert.Equal(t, victim.Data, got.Data)
	assert.NotContains(t, s.stderr.String(), "victim", "the deployer never touched it")

	binding, err := c.RbacV1().ClusterRoleBindings().Get(ctx, "kubeharness:manifest-deployer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "cluster-admin", binding.RoleRef.Name)
	require.Len(t, binding.Subjects, 1)
	assert.Equal(t, "kubeharness:manifest-deployer", binding.Subjects[0].Name)
	// Who applied and deleted from-app, from the audit log.
	users := map[string]bool{}
	f, err := os.Open(datadir.AuditLog(dataDir))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var ev struct {
			Verb      string
			User      struct{ Username string }
			ObjectRef struct{ Resource, Name string }
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.Name == "from-app" && (ev.Verb == "patch" || ev.Verb == "delete") {
			users[ev.User.Username] = true
		}
	}
	assert.Equal(t, map[string]bool{"kubeharness:manifest-deployer": true}, users, "who applied and deleted from-app")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}
