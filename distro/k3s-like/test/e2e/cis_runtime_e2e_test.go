package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// serverEtcd is a client of the server's embedded etcd with the
// apiserver's etcd client certificate under DATA_DIR/tls: what someone
// with the datastore (or a copy of it) reads, without kube-apiserver.
func serverEtcd(t *testing.T, dataDir string, port int) *clientv3.Client {
	t.Helper()
	l := datadir.PKI(dataDir)
	cert, err := tls.LoadX509KeyPair(l.APIServerEtcdClient().CertFile, l.APIServerEtcdClient().KeyFile)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(l.EtcdCA().CertFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	c, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"https://127.0.0.1:" + strconv.Itoa(port)}, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// storedSecrets are the Secrets' values as etcd holds them, by key
// (/registry/secrets/NAMESPACE/NAME).
func storedSecrets(ctx context.Context, t *testing.T, c *clientv3.Client) map[string][]byte {
	t.Helper()
	resp, err := c.Get(ctx, "/registry/secrets/", clientv3.WithPrefix())
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// TestSecretsEncryptionAtRest: with --secrets-encryption, every Secret in
// etcd (read directly, with the etcd client certificate) is
// k8s:enc:aescbc:v1:KEY: ciphertext without the plain value; the config
// is 0600. `secrets-encrypt rotate-keys` rewrites every Secret: as many
// before as after, each readable through the apiserver with its data
// unchanged, each stored under the new key's name, the old key gone from
// the config. The audit log (DATA_DIR/logs/audit.log) records the read of
// a Secret, at Metadata level: no data in it.
func TestSecretsEncryptionAtRest(t *testing.T) {
	dir := t.TempDir()
	s := newServer(t, dir)
	s.start("--secrets-encryption")
	s.waitReady(2 * time.Minute)
	ctx := t.Context()
	cfgPath := filepath.Join(dir, "cred", "encryption-config.json")
	st, err := os.Stat(cfgPath)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the key file")

	const secretValue = "e2e-plain-value-7f3a"
	c := s.client()
	for _, ns := range []string{"default", "kube-public"} {
		for i := range 3 {
			_, err := c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("e2e-%d", i)},
				StringData: map[string]string{"v": fmt.Sprintf("%s-%s-%d", secretValue, ns, i)},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
	}
	s.kubectl("create", "secret", "generic", "by-kubectl", "--from-literal=v="+secretValue+"-kubectl")

	status := func() string {
		out, err := exec.Command(binary, "secrets-encrypt", "status", "--data-dir="+dir).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}
	before := status()
	t.Logf("secrets-encrypt status:\n%s", before)
	assert.Contains(t, before, "Encryption Status: Enabled")
	assert.Contains(t, before, "Provider: aescbc")
	oldKey := field(before, "Active Key")
	require.NotEmpty(t, oldKey)
	assert.Empty(t, field(before, "Inactive Keys"))
	assert.NotContains(t, before, mustRead(t, cfgPath)[100:140], "no key material in status")

	e := serverEtcd(t, dir, s.ports["etcd-client"])
	checkEtcdTLS(t, dir, s.ports["etcd-client"], s.ports["etcd-peer"])
	checkStored := func(when, key string) int {
		t.Helper()
		stored := storedSecrets(ctx, t, e)
		require.NotEmpty(t, stored)
		for k, v := range stored {
			assert.True(t, bytes.HasPrefix(v, []byte("k8s:enc:aescbc:v1:"+key+":")), "%s %s: stored as %q…", when, k, v[:min(len(v), 60)])
			assert.NotContains(t, string(v), secretValue, "%s %s: the plain value in etcd", when, k)
		}
		t.Logf("%s: %d Secrets in etcd, each k8s:enc:aescbc:v1:%s:…", when, len(stored), key)
		return len(stored)
	}
	nBefore := checkStored("before rotate-keys", oldKey)
	data := func() map[string]string {
		list, err := c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		out := map[string]string{}
		for _, s := range list.Items {
			out[s.Namespace+"/"+s.Name] = fmt.Sprint(s.Data)
		}
		return out
	}
	dataBefore := data()
	assert.Len(t, dataBefore, nBefore, "the apiserver lists what etcd holds")

	began := time.Now()
	rotate := exec.Command(binary, "secrets-encrypt", "rotate-keys", "--data-dir="+dir, "--timeout=5m")
	out, err := rotate.CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("secrets-encrypt rotate-keys took %.1fs:\n%s", time.Since(began).Seconds(), tail(string(out), 12))
	after := status()
	t.Logf("secrets-encrypt status:\n%s", after)
	newKey := field(after, "Active Key")
	assert.NotEqual(t, oldKey, newKey)
	assert.Empty(t, field(after, "Inactive Keys"), "the old key dropped")
	assert.Contains(t, after, "Rotation: finished")
	assert.Contains(t, after, "Loaded by kube-apiserver: yes")
	assert.NotContains(t, string(mustRead(t, cfgPath)), oldKey)
	assert.Contains(t, string(out), "Secrets rewritten: "+strconv.Itoa(nBefore))
	nAfter := checkStored("after rotate-keys", newKey)
	assert.Equal(t, nBefore, nAfter, "as many Secrets")
	assert.Equal(t, dataBefore, data(), "every Secret readable, its data unchanged")

	// The audit log: the read of a Secret, by whom, at Metadata level.
	s.kubectl("get", "secret", "by-kubectl", "-o", "name")
	var found map[string]any
	require.Eventually(t, func() bool {
		f, err := os.Open(datadir.AuditLog(dir))
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			ref, _ := ev["objectRef"].(map[string]any)
			if ev["verb"] == "get" && ref["resource"] == "secrets" && ref["name"] == "by-kubectl" && ev["stage"] == "ResponseComplete" {
				found = ev
				return true
			}
		}
		return false
	}, 30*time.Second, 500*time.Millisecond, "the audit log records the read of the Secret")
	user, _ := found["user"].(map[string]any)
	t.Logf("audit event: level=%v verb=%v secret=by-kubectl user=%v code=%v", found["level"], found["verb"], user["username"], found["responseStatus"])
	assert.Equal(t, "Metadata", found["level"])
	assert.NotContains(t, found, "responseObject", "Metadata: no body")
	log := string(mustRead(t, datadir.AuditLog(dir)))
	assert.NotContains(t, log, secretValue, "no Secret's data in the audit log")
	st, err = os.Stat(filepath.Dir(datadir.AuditLog(dir)))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "the audit log's directory")
}

// TestSecretsEncryptionRefusesBadInput: a server whose encryption config
// was tampered with exits 1 naming the file, before anything listens; one
// started without --secrets-encryption over an encrypted datastore
// likewise; secrets-encrypt on a data dir without a config says so.
func TestSecretsEncryptionRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cred", "encryption-config.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
	require.NoError(t, os.WriteFile(cfg, []byte(`{"kind":"EncryptionConfiguration","apiVersion":"apiserver.config.k8s.io/v1","resources":[`), 0o600))
	for _, args := range [][]string{{"--secrets-encryption"}, {}} {
		s := newServer(t, dir)
		s.start(args...)
		code, _ := s.wait(time.Minute)
		assert.Equal(t, 1, code)
		last := lastLine(s.stderr.String())
		t.Logf("server %v: %s", args, last)
		assert.Contains(t, last, cfg)
	}
	require.NoError(t, os.Remove(cfg))
	out, err := exec.Command(binary, "secrets-encrypt", "rotate-keys", "--data-dir="+dir).CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), "start the server with --secrets-encryption first")
	out, err = exec.Command(binary, "secrets-encrypt", "status", "--data-dir="+dir).CombinedOutput()
	assert.NoError(t, err)
	assert.Contains(t, string(out), "Encryption Status: Disabled")
}

// TestPodSecurityDefault: under the default Pod Security configuration a
// privileged Pod in default is refused (baseline), while kube-system is
// exempt: CoreDNS runs there. The server's own kubelet renews its client
// certificate while it runs (--rotate-certificates): its CSR for
// system:node:node-a is approved and issued, and the certificate it uses
// (cert-dir/kubelet-client-current.pem) is not the one the server wrote.
func TestPodSecurityDefault(t *testing.T) {
	requireNodeHost(t)
	dir := t.TempDir()
	s := startNodeServer(t, dir)
	s.waitNodeReady(90 * time.Second)
	s.waitFor("True", 3*time.Minute, "get", "pods", "-n", "kube-system", "-l", "k8s-app=kube-dns", "-o", `jsonpath={.items[0].status.conditions[?(@.type=="Ready")].status}`)
	t.Log("CoreDNS Ready in kube-system (exempt)")
	f := filepath.Join(t.TempDir(), "privileged.yaml")
	require.NoError(t, os.WriteFile(f, []byte(fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: privileged}
spec:
  containers:
  - name: c
    image: %s
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    securityContext: {privileged: true}
`, busyboxImage(t))), 0o600))
	out, err := s.kubectlErr("apply", "-f", f)
	require.Error(t, err, out)
	t.Logf("privileged Pod in default: %s", strings.TrimSpace(out))
	assert.Contains(t, out, `violates PodSecurity "baseline:latest"`)
	assert.Contains(t, out, "privileged")
	// The same Pod is admitted where the namespace asks for privileged.
	s.kubectl("create", "namespace", "privileged-ok")
	s.kubectl("label", "namespace", "privileged-ok", "pod-security.kubernetes.io/enforce=privileged")
	s.kubectl("apply", "-n", "privileged-ok", "-f", f)

	var csrs string
	require.Eventually(t, func() bool {
		csrs, _ = s.kubectlErr("get", "csr", "-o", `jsonpath={range .items[?(@.spec.signerName=="kubernetes.io/kube-apiserver-client-kubelet")]}{.spec.username}{" "}{.status.conditions[0].type}{" "}{.status.certificate}{"\n"}{end}`)
		for line := range strings.Lines(csrs) {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "system:node:node-a" && f[1] == "Approved" && f[2] != "" {
				return true
			}
		}
		return false
	}, 2*time.Minute, time.Second, "the server's kubelet renews its client certificate: %s", csrs)
	current := mustRead(t, filepath.Join(dir, "agent", "kubelet", "pki", "kubelet-client-current.pem"))
	written := mustRead(t, datadir.PKI(dir).NodeLayout("node-a").Client().CertFile)
	assert.NotContains(t, string(current), strings.TrimSpace(string(written)), "the kubelet uses the renewed certificate, not the one written at start")
	t.Log("the server's kubelet renewed its client certificate while running (CSR approved and issued)")
	checkCISFileModes(t, dir)
}

// checkCISFileModes: the CIS file items (1.1.x, 4.1.x) on a server with
// its node, each logged with the mode and owner seen: the etcd data
// directory 0700 (1.1.11); the admin's, the scheduler's, the
// controller-manager's, the kubelet's (also kube-proxy's) kubeconfigs
// 0600 (1.1.13, 1.1.15, 1.1.17, 4.1.3, 4.1.5); every key under tls/ 0600
// (1.1.21); the CNI configuration and the IPAM files 0600 (1.1.9); all of
// them and the PKI directory owned by root:root (1.1.10, 1.1.12's root,
// 1.1.14, 1.1.16, 1.1.18, 1.1.19, 4.1.4, 4.1.6, 4.1.8); the certificates
// under tls/, the kubelet's client CA among them, 0644 or less (1.1.20,
// 4.1.7: the CIS 2.1 benchmark's bound).
func checkCISFileModes(t *testing.T, dir string) {
	t.Helper()
	l := datadir.PKI(dir)
	check := func(item, path string, most os.FileMode) {
		t.Helper()
		st, err := os.Stat(path)
		if !assert.NoError(t, err, item) {
			return
		}
		sys := st.Sys().(*syscall.Stat_t)
		ok := assert.Zero(t, st.Mode().Perm()&^most, "CIS %s: %s is %#o, want %#o or less", item, path, st.Mode().Perm(), most)
		ok = assert.Equal(t, [2]uint32{0, 0}, [2]uint32{sys.Uid, sys.Gid}, "CIS %s: %s owned by root:root", item, path) && ok
		if ok {
			t.Logf("CIS %s: %s %#o root:root", item, path, st.Mode().Perm())
		}
	}
	check("1.1.11/1.1.12", datadir.Etcd(dir), 0o700)
	check("1.1.13/1.1.14", datadir.AdminKubeconfig(dir), 0o600)
	check("1.1.15/1.1.16", l.SchedulerKubeconfig(), 0o600)
	check("1.1.17/1.1.18", l.ControllerManagerKubeconfig(), 0o600)
	check("1.1.19", l.Dir, 0o700)
	check("4.1.3/4.1.4", l.NodeLayout("node-a").KubeProxyKubeconfig(), 0o600)
	check("4.1.5/4.1.6", l.NodeLayout("node-a").Kubeconfig(), 0o600)
	keys, err := filepath.Glob(filepath.Join(l.Dir, "*.key"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(l.Dir, "*", "*.key"))
	require.NoError(t, err)
	require.NotEmpty(t, keys)
	for _, k := range append(keys, more...) {
		check("1.1.21", k, 0o600)
	}
	cni, err := filepath.Glob(filepath.Join(dir, "agent", "etc", "cni", "net.d", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, cni)
	// The node's run directory: /run/k3s-like/ and the first 5 bytes of
	// the data dir's sha256 (internal/node).
	abs, err := filepath.Abs(dir)
	require.NoError(t, err)
	sum := sha256.Sum256([]byte(abs))
	ipam, err := filepath.Glob(filepath.Join("/run/k3s-like", hex.EncodeToString(sum[:5]), "ipam", "*", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, ipam, "host-local's reservations")
	for _, f := range append(cni, ipam...) {
		if filepath.Base(f) != "lock" {
			check("1.1.9/1.1.10", f, 0o600)
		}
	}
	certs, err := filepath.Glob(filepath.Join(l.Dir, "*.crt"))
	require.NoError(t, err)
	require.NotEmpty(t, certs)
	for _, c := range certs {
		check("1.1.20", c, 0o644)
	}
	check("4.1.7/4.1.8 (the kubelet's --client-ca-file)", l.ClientCA().CertFile, 0o644)
}

// field is the value of "Name: value" in a status output.
func field(out, name string) string {
	for line := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// checkEtcdTLS: the CIS etcd items (2.x) on the embedded etcd. Its client
// and peer ports serve a certificate of the etcd CA (a CA of its own, not
// auto-TLS: 2.1, 2.3, 2.4, 2.6) and answer only a client certificate of
// that CA: none, or the admin's (the cluster's client CA), is refused
// (2.2, 2.5, 2.7); the apiserver's etcd client certificate is accepted
// (serverEtcd).
func checkEtcdTLS(t *testing.T, dir string, clientPort, peerPort int) {
	t.Helper()
	l := datadir.PKI(dir)
	caPEM := mustRead(t, l.EtcdCA().CertFile)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	assert.NotEqual(t, string(mustRead(t, l.ClientCA().CertFile)), string(caPEM), "2.7: the etcd CA is not the client CA")
	assert.NotEqual(t, string(mustRead(t, l.ServerCA().CertFile)), string(caPEM), "2.7: the etcd CA is not the server CA")
	admin, err := tls.LoadX509KeyPair(l.Admin().CertFile, l.Admin().KeyFile)
	require.NoError(t, err)
	for _, port := range []struct {
		name string
		port int
	}{{"client (2.2)", clientPort}, {"peer (2.5)", peerPort}} {
		for _, c := range []struct {
			who  string
			cert *tls.Certificate
		}{{"no client certificate", &tls.Certificate{}}, {"the admin's (client CA)", &admin}} {
			// Sent whatever CAs etcd asks for (Go's client would send
			// none of another CA's).
			send := func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c.cert, nil }
			conn, err := tls.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port.port), &tls.Config{RootCAs: pool, GetClientCertificate: send, MinVersion: tls.VersionTLS12})
			if err == nil {
				// TLS 1.3: the server's refusal arrives with the first read.
				_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
				_, err = conn.Write([]byte("GET /version HTTP/1.1\r\nHost: x\r\n\r\n"))
				if err == nil {
					_, err = conn.Read(make([]byte, 1))
				}
				conn.Close()
			}
			if len(c.cert.Certificate) > 0 && err != nil {
				assert.NotContains(t, err.Error(), "certificate required", "the admin's certificate was sent, and refused for its CA")
			}
			if assert.Error(t, err, "etcd %s port with %s", port.name, c.who) &&
				assert.NotContains(t, err.Error(), "x509", "the refusal is etcd's, not ours: its serving certificate is of the etcd CA") {
				t.Logf("CIS 2.x: etcd %s port refuses %s: %v (its serving certificate verified against the etcd CA)", port.name, c.who, err)
			}
		}
	}
}
