package secretsencrypt

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// TestLoadedHashes: the hash labels of last_config_info, whatever the
// label order, and nothing from other metrics.
func TestLoadedHashes(t *testing.T) {
	metrics := `# HELP apiserver_encryption_config_controller_last_config_info [ALPHA] Information about the last applied encryption configuration
# TYPE apiserver_encryption_config_controller_last_config_info gauge
apiserver_encryption_config_controller_last_config_info{apiserver_id_hash="sha256:aa",hash="sha256:bb"} 1
apiserver_encryption_config_controller_last_config_info{hash="sha256:cc",apiserver_id_hash="sha256:dd"} 1
apiserver_encryption_config_controller_automatic_reloads_total{apiserver_id_hash="sha256:aa",status="success"} 1
other{hash="sha256:ee"} 1
`
	got, err := loadedHashes([]byte(metrics))
	require.NoError(t, err)
	assert.Equal(t, []string{"sha256:bb", "sha256:cc"}, got)
	got, err = loadedHashes(nil)
	require.NoError(t, err)
	assert.Empty(t, got)
	// A body that is not the text format (a proxy's error page, a cut
	// response) is an error, not "no config loaded".
	_, err = loadedHashes([]byte("apiserver_encryption_config_controller_last_config_info{hash=\"sha256:bb\" 1\n"))
	assert.ErrorContains(t, err, "/metrics")
}

// TestAPIServersCountsLiveLeases: identity leases renewed within their
// duration count; an expired one (a stopped server) does not.
func TestAPIServersCountsLiveLeases(t *testing.T) {
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	lease := func(name string, renewed time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"apiserver.kubernetes.io/identity": "kube-apiserver"}},
			Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at.Add(-renewed)}, LeaseDurationSeconds: ptr.To[int32](3600)},
		}
	}
	other := lease("not-an-apiserver", 0)
	other.Labels = nil
	c := fake.NewClientset(lease("apiserver-a", time.Minute), lease("apiserver-b", 2*time.Hour), other)
	n, err := KubeCluster{Client: c, Now: func() time.Time { return at }}.APIServers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestRewriteSecrets: every Secret of every namespace is updated once; a
// conflict (written since, with the active key) counts and goes on; any
// other error stops with the Secret's name.
func TestRewriteSecrets(t *testing.T) {
	var objs []runtime.Object
	for i := range 120 {
		objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i), Namespace: fmt.Sprintf("ns%d", i%3)}})
	}
	c := fake.NewClientset(objs...)
	updated := map[string]int{}
	c.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.UpdateAction).GetObject().(*corev1.Secret)
		updated[s.Namespace+"/"+s.Name]++
		if s.Name == "s7" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, s.Name, fmt.Errorf("changed"))
		}
		return false, nil, nil
	})
	n, err := KubeCluster{Client: c}.RewriteSecrets(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 120, n)
	assert.Len(t, updated, 120)
	for k, v := range updated {
		assert.Equal(t, 1, v, k)
	}

	c.PrependReactor("update", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(fmt.Errorf("no key to decrypt"))
	})
	_, err = KubeCluster{Client: c}.RewriteSecrets(t.Context())
	assert.ErrorContains(t, err, "Secret ns")
	assert.ErrorContains(t, err, "no key to decrypt")
}
