package e2e

import (
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// cleanerServiceAccount is the ServiceAccount upstream's pod certificate
// request cleaner gets its client for, through ClientOrDie: klog.Fatal
// (exit 255) when that request fails.
const cleanerServiceAccount = "podcertificaterequestcleaner"

// TestStopWhileControllersAreBuilt: SIGTERM while kube-controller-manager
// builds its controllers and a request of the build does not answer: the
// create of the pod certificate request cleaner's ServiceAccount, held by
// a validating webhook that accepts the connection and never answers (a
// datastore without quorum holds every request the same way: the last
// server of an embedded etcd cluster whose servers are stopped one after
// another, TestHAStopEveryServer). Upstream's constructor exits the
// process when that request fails; a stop ended it 1 s after the SIGTERM,
// and the server exited 255. The server exits 0, within its stop bound,
// and says it left the build blocked.
func TestStopWhileControllersAreBuilt(t *testing.T) {
	held := holdingListener(t)
	dir := t.TempDir()
	s := newServer(t, dir)
	s.start()
	s.waitReady(90 * time.Second)

	// The cleaner's ServiceAccount deleted and its create held: the next
	// build of the controllers creates it.
	ca, err := os.ReadFile(filepath.Join(dir, "tls", "client-ca.crt"))
	require.NoError(t, err)
	c := s.client()
	ctx := t.Context()
	_, err = c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-serviceaccount-creates"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "hold.e2e.kubeharness.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + held.addr + "/"), CABundle: ca},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"serviceaccounts"}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: metav1.NamespaceSystem}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](30),
		}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, c.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Delete(ctx, cleanerServiceAccount, metav1.DeleteOptions{}))
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(30 * time.Second)
	require.Equal(t, 0, code, "the first stop, with nothing held:\n%s", exitReport(s.stderr.String()))

	s.start()
	select {
	case <-held.accepted:
	case <-s.exited:
		t.Fatalf("k3s-like exited before its build's create reached the webhook: %v\n%s", s.exitErr, exitReport(s.stderr.String()))
	case <-time.After(90 * time.Second):
		t.Fatalf("no create reached the webhook within 90 s\n%s", exitReport(s.stderr.String()))
	}
	time.Sleep(500 * time.Millisecond) // the create is held, past any chance of an answer
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, took := s.wait(30 * time.Second)
	log := s.stderr.String()
	t.Logf("FAULT stop-while-building held=%s exit=%d took=%.1fs", cleanerServiceAccount, code, took.Seconds())
	assert.Equal(t, 0, code, "a stop while the build's request is held:\n%s", exitReport(log))
	assert.Less(t, took, 20*time.Second, "the stop is bounded")
	assert.Contains(t, log, "Stopped while building its controllers, a request of the build unanswered")
	assert.Contains(t, log, `"Harness done" errors=0`)
}

// holding is a TCP listener that accepts connections and never answers.
type holding struct {
	addr     string
	accepted chan struct{} // closed at the first connection
}

// holdingListener listens on loopback until the test ends; each
// connection is held open, unanswered, until then.
func holdingListener(t *testing.T) *holding {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &holding{addr: ln.Addr().String(), accepted: make(chan struct{})}
	var (
		mu    sync.Mutex
		conns []net.Conn
		once  sync.Once
		done  sync.WaitGroup
	)
	done.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			once.Do(func() { close(h.accepted) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		done.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return h
}
