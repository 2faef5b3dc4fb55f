package cluster

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
)

// TestCreateBootstrapToken: a random bootstrap token Secret that expires
// at now+ttl, in a group of its own (node-join neither hands it out nor
// deletes it), whose full form parses back as a bootstrap token; a ttl
// that is not positive or above a year is refused, and nothing made.
func TestCreateBootstrapToken(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, ttl := range []time.Duration{0, -time.Hour, MaxBootstrapTTL + time.Second} {
		_, _, err := CreateBootstrapToken(ctx, client, ttl, "d", now)
		require.Error(t, err, ttl)
		assert.Contains(t, err.Error(), "every bootstrap token expires")
	}
	list, err := client.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)

	tok, exp, err := CreateBootstrapToken(ctx, client, 2*time.Hour, "for node-c", now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(2*time.Hour), exp)
	assert.Equal(t, BootstrapToken, tok.Kind)
	id, secret, ok := strings.Cut(tok.Secret, ".")
	require.True(t, ok)
	s, err := client.CoreV1().Secrets("kube-system").Get(ctx, bootstrapSecretPrefix+id, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeBootstrapToken, s.Type)
	assert.Equal(t, secret, string(s.Data["token-secret"]))
	assert.Equal(t, "2026-12-05T12:00:00Z", string(s.Data["expiration"]))
	assert.Equal(t, createdTokenGroup, string(s.Data["auth-extra-groups"]))
	assert.Equal(t, "for node-c", string(s.Data["description"]))
	full := tok.Full([]byte("ca"))
	back, err := ParseToken(full)
	require.NoError(t, err)
	assert.Equal(t, tok.Secret, back.Secret)
	assert.Equal(t, BootstrapToken, back.Kind)

	// node-join's renewal leaves it alone: another group.
	valid, current, err := ensureBootstrapToken(ctx, client, now, logr.Discard())
	require.NoError(t, err)
	assert.NotContains(t, valid, id)
	assert.NotEqual(t, id, current)
	_, err = client.CoreV1().Secrets("kube-system").Get(ctx, bootstrapSecretPrefix+id, metav1.GetOptions{})
	assert.NoError(t, err, "not deleted")
}

// TestResealServerRecord: no record, nothing to do; a record sealed with
// the old token is sealed with the new one (it opens with the new secret,
// not the old); a record this server's token does not open is an error,
// and left as it was.
func TestResealServerRecord(t *testing.T) {
	ctx := t.Context()
	f, err := pki.Ensure(pki.Config{Dir: filepath.Join(t.TempDir(), "server"), APIServerURL: "https://127.0.0.1:6443"})
	require.NoError(t, err)
	old, next := Token{Secret: "old-secret"}, Token{Secret: "new-secret"}
	client := fake.NewClientset()
	found, err := ResealServerRecord(ctx, client, f.Dir, old, next)
	require.NoError(t, err)
	assert.False(t, found)

	record, err := bootstrap.Seal(old.Secret, f.Dir, bootstrap.EmbeddedFiles)
	require.NoError(t, err)
	client = fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: serverBootstrap, Namespace: "kube-system"},
		Data: map[string][]byte{recordKey: record, etcdKeyPrefix + "node-a": []byte("https://192.0.2.10:2379")}})
	found, err = ResealServerRecord(ctx, client, f.Dir, old, next)
	require.NoError(t, err)
	assert.True(t, found)
	s, err := client.CoreV1().Secrets("kube-system").Get(ctx, serverBootstrap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, bootstrap.Opens(s.Data[recordKey], next.Secret, f.Dir, bootstrap.EmbeddedFiles), "sealed with the new token")
	assert.False(t, bootstrap.Opens(s.Data[recordKey], old.Secret, f.Dir, bootstrap.EmbeddedFiles), "not with the old")

	other, err := bootstrap.Seal("another-cluster", f.Dir, bootstrap.EmbeddedFiles)
	require.NoError(t, err)
	client = fake.NewClientset(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: serverBootstrap, Namespace: "kube-system"},
		Data: map[string][]byte{recordKey: other}})
	_, err = ResealServerRecord(ctx, client, f.Dir, old, next)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not open with this server's token")
	assert.NotContains(t, err.Error(), "old-secret")
	s, err = client.CoreV1().Secrets("kube-system").Get(ctx, serverBootstrap, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, other, s.Data[recordKey], "left as it was")
}
