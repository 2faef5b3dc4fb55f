package cluster

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeharness/kubeharness/components/pki"
)

// bootstrapSecret is a bootstrap token Secret of the agents' group; no
// expiration when exp is zero, as an older release made it.
func bootstrapSecret(id, secret string, exp time.Time) *corev1.Secret {
	data := map[string][]byte{
		"token-id": []byte(id), "token-secret": []byte(secret),
		"usage-bootstrap-authentication": []byte("true"), "auth-extra-groups": []byte(bootstrapGroup),
	}
	if !exp.IsZero() {
		data["expiration"] = []byte(exp.UTC().Format(time.RFC3339))
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bootstrapSecretPrefix + id, Namespace: metav1.NamespaceSystem},
		Type: corev1.SecretTypeBootstrapToken, Data: data}
}

// bootstrapSecrets are the bootstrap token Secrets in kube-system, by ID.
func bootstrapSecrets(t *testing.T, client *fake.Clientset) map[string]*corev1.Secret {
	t.Helper()
	list, err := client.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]*corev1.Secret{}
	for i, s := range list.Items {
		if s.Type == corev1.SecretTypeBootstrapToken {
			out[string(s.Data["token-id"])] = &list.Items[i]
		}
	}
	return out
}

// TestEnsureBootstrapToken: the server makes a random token with an
// expiry, keeps it while it has more than bootstrapTokenRenewBefore left,
// then makes another (the old one valid until it expires), and deletes
// expired tokens and the token an older release derived from the cluster
// token (no expiry): the upgrade of a data dir. Other bootstrap tokens
// are left alone.
func TestEnsureBootstrapToken(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	other := bootstrapSecret("zzzzzz", "zzzzzzzzzzzzzzzz", time.Time{})
	other.Data["auth-extra-groups"] = []byte("system:bootstrappers:kubeadm:default-node-token")
	client := fake.NewClientset(
		bootstrapSecret("leg4cy", "0123456789abcdef", time.Time{}), // an older release's, derived
		other,
	)

	valid, current, err := ensureBootstrapToken(ctx, client, now, logr.Discard())
	require.NoError(t, err)
	assert.Equal(t, []string{current}, valid)
	got := bootstrapSecrets(t, client)
	assert.NotContains(t, got, "leg4cy", "the derived token is deleted")
	assert.Contains(t, got, "zzzzzz", "another group's token is not the server's")
	first := got[current]
	require.NotNil(t, first)
	assert.Equal(t, bootstrapSecretPrefix+current, first.Name)
	assert.Equal(t, now.Add(bootstrapTokenTTL).Format(time.RFC3339), string(first.Data["expiration"]))
	assert.Regexp(t, `^[a-z0-9]{16}$`, string(first.Data["token-secret"]))
	assert.NotEqual(t, "0123456789abcdef", string(first.Data["token-secret"]))
	assert.Equal(t, bootstrapGroup, string(first.Data["auth-extra-groups"]))

	// Later, with more than bootstrapTokenRenewBefore left: the same token.
	later := now.Add(bootstrapTokenTTL - bootstrapTokenRenewBefore - time.Minute)
	valid, again, err := ensureBootstrapToken(ctx, client, later, logr.Discard())
	require.NoError(t, err)
	assert.Equal(t, current, again)
	assert.Equal(t, []string{current}, valid)

	// Less left: a new token; the old one stays valid until it expires.
	renew := now.Add(bootstrapTokenTTL - bootstrapTokenRenewBefore + time.Minute)
	valid, second, err := ensureBootstrapToken(ctx, client, renew, logr.Discard())
	require.NoError(t, err)
	assert.NotEqual(t, current, second)
	assert.ElementsMatch(t, []string{current, second}, valid)
	assert.Equal(t, renew.Add(bootstrapTokenTTL).Format(time.RFC3339), string(bootstrapSecrets(t, client)[second].Data["expiration"]))

	// Once the first has expired it is deleted.
	valid, third, err := ensureBootstrapToken(ctx, client, now.Add(bootstrapTokenTTL), logr.Discard())
	require.NoError(t, err)
	assert.Equal(t, second, third)
	assert.Equal(t, []string{second}, valid)
	got = bootstrapSecrets(t, client)
	assert.NotContains(t, got, current)
	assert.Len(t, got, 2, "the second and the other group's")
}

// TestPublishJoin: the settings name the current bootstrap token, the
// Role lets read only the settings and the valid tokens' Secrets, and it
// is bound to the join credential's user alone (an older release bound it
// to the bootstrap token's group: applying replaces that).
func TestPublishJoin(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	client := fake.NewClientset(bootstrapSecret("leg4cy", "0123456789abcdef", time.Time{}))
	j := NodeJoin{ClusterDNS: "10.43.0.10", ClusterDomain: "cluster.local", ClusterCIDR: "10.42.0.0/16", FlannelBackend: "vxlan"}
	ca, err := pki.LoadOrCreateCA(filepath.Join(t.TempDir(), "ca.crt"), filepath.Join(t.TempDir(), "ca.key"), "test-ca")
	require.NoError(t, err)
	require.NoError(t, j.publishJoin(ctx, client, now, logr.Discard(), "CA", ca.Key))

	cm, err := client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
	require.NoError(t, err)
	id := cm.Data[settingBootstrapToken]
	assert.Regexp(t, `^[a-z0-9]{6}$`, id)
	assert.NotEqual(t, "leg4cy", id)
	assert.Equal(t, "CA", cm.Data[settingClientCA])
	// Signed by the CA: every key counts, the signature breaks when one
	// changes.
	require.NoError(t, verifySettings(ca.Cert, cm.Data))
	for k := range cm.Data {
		if k == settingSignature {
			continue
		}
		changed := maps.Clone(cm.Data)
		changed[k] += "x"
		assert.Error(t, verifySettings(ca.Cert, changed), "%s changed", k)
	}
	moved := maps.Clone(cm.Data) // a value moved to another key
	moved[settingClusterDNS], moved[settingClusterDomain] = moved[settingClusterDNS]+moved[settingClusterDomain], ""
	assert.Error(t, verifySettings(ca.Cert, moved))
	delete(moved, settingSignature)
	assert.ErrorIs(t, verifySettings(ca.Cert, moved), errSettingsUnsigned)
	for k, v := range cm.Data {
		assert.NotContains(t, v, string(bootstrapSecrets(t, client)[id].Data["token-secret"]), "the settings' %s carries the token's secret", k)
	}

	role, err := client.RbacV1().Roles(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, role.Rules, 2)
	assert.Equal(t, []string{"configmaps"}, role.Rules[0].Resources)
	assert.Equal(t, []string{agentSettings}, role.Rules[0].ResourceNames)
	assert.Equal(t, []string{"secrets"}, role.Rules[1].Resources)
	assert.Equal(t, []string{bootstrapSecretPrefix + id}, role.Rules[1].ResourceNames)
	assert.Equal(t, []string{"get"}, role.Rules[1].Verbs)

	binding, err := client.RbacV1().RoleBindings(metav1.NamespaceSystem).Get(ctx, agentSettings, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, binding.Subjects, 1)
	assert.Equal(t, "User", binding.Subjects[0].Kind)
	assert.Equal(t, JoinUser, binding.Subjects[0].Name)
	assert.False(t, strings.HasPrefix(JoinUser, "system:"), "not a reserved name")

	// Every bootstrap token reads the settings, and nothing else.
	role, err = client.RbacV1().Roles(metav1.NamespaceSystem).Get(ctx, agentBootstrap, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, role.Rules, 1)
	assert.Equal(t, []string{"configmaps"}, role.Rules[0].Resources)
	assert.Equal(t, []string{agentSettings}, role.Rules[0].ResourceNames)
	assert.Equal(t, []string{"get"}, role.Rules[0].Verbs)
	binding, err = client.RbacV1().RoleBindings(metav1.NamespaceSystem).Get(ctx, agentBootstrap, metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, binding.Subjects, 1)
	assert.Equal(t, "Group", binding.Subjects[0].Kind)
	assert.Equal(t, "system:bootstrappers", binding.Subjects[0].Name)
}

// TestPublishNodeAccess: the controller-manager's automatic approval of
// bootstrap tokens' node client requests, bound by an older release, is
// deleted; every bootstrap token may ask (the node-client approver
// decides); nodes renew their own certificates.
func TestPublishNodeAccess(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: nodeClientAutoApprove},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
		Subjects: []rbacv1.Subject{{Kind: "Group", Name: bootstrapGroup}}})
	require.NoError(t, publishNodeAccess(ctx, client))
	_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, nodeClientAutoApprove, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	list, err := client.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, b := range list.Items {
		assert.NotEqual(t, "system:certificates.k8s.io:certificatesigningrequests:nodeclient", b.RoleRef.Name, b.Name)
	}
	b, err := client.RbacV1().ClusterRoleBindings().Get(ctx, "k3s-like-node-bootstrapper", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "system:bootstrappers", b.Subjects[0].Name)
	require.NoError(t, publishNodeAccess(ctx, client), "again: nothing to delete")
}

// TestClaimNodeName: the server's node name is claimed for the password
// in its DATA_DIR (made on first use); a server with another password for
// that name is refused; a server without a node claims nothing.
func TestClaimNodeName(t *testing.T) {
	ctx := t.Context()
	client := fake.NewClientset()
	dir := t.TempDir()
	j := NodeJoin{DataDir: dir, NodeName: "node-a"}
	require.NoError(t, j.claimNodeName(ctx, client))
	password, err := EnsureNodePassword(dir)
	require.NoError(t, err)
	pub, err := NodePasswordPublicKey(password)
	require.NoError(t, err)
	s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, NodePasswordSecret("node-a"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []byte(pub), s.Data[nodePasswordKey])
	require.NoError(t, j.claimNodeName(ctx, client), "the same server again")

	var pe *NodePasswordError
	err = NodeJoin{DataDir: t.TempDir(), NodeName: "node-a"}.claimNodeName(ctx, client)
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "node name node-a is held by another node")

	none := fake.NewClientset()
	require.NoError(t, NodeJoin{DataDir: t.TempDir()}.claimNodeName(ctx, none))
	list, err := none.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

// TestReporterPolicyBeforeRights: the admission policy that limits a node
// to its own NodeFeatureReport, and its binding, are applied before the
// nodes' ClusterRole and binding; when either cannot be applied, the nodes
// get no report rights at all.
func TestReporterPolicyBeforeRights(t *testing.T) {
	ctx := t.Context()
	opts := metav1.ApplyOptions{FieldManager: joinManager, Force: true}
	client := fake.NewClientset()
	require.NoError(t, publishReporterAccess(ctx, client, opts))
	var order []string
	for _, a := range client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok {
			order = append(order, a.GetResource().Resource+"/"+pa.GetName())
		}
	}
	assert.Equal(t, []string{
		"validatingadmissionpolicies/" + nodeReporter, "validatingadmissionpolicybindings/" + nodeReporter,
		"clusterroles/" + nodeReporter, "clusterrolebindings/" + nodeReporter,
	}, order)

	for _, failing := range []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"} {
		client := fake.NewClientset()
		client.PrependReactor("patch", failing, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("admission API unavailable")
		})
		require.Error(t, publishReporterAccess(ctx, client, opts), failing)
		_, err := client.RbacV1().ClusterRoleBindings().Get(ctx, nodeReporter, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s failing: no binding: %v", failing, err)
		_, err = client.RbacV1().ClusterRoles().Get(ctx, nodeReporter, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s failing: no role: %v", failing, err)
	}
}
