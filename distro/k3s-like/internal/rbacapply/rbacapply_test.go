package rbacapply

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/pki"
)

// TestFeaturePublisherAccess: the ClusterRole holds featurepub's rules,
// its binding names the feature publisher's user and the role, and a
// second apply with changed rules replaces them.
func TestFeaturePublisherAccess(t *testing.T) {
	client := fake.NewClientset()
	opts := metav1.ApplyOptions{FieldManager: "test", Force: true}
	require.NoError(t, FeaturePublisherAccess(t.Context(), client, opts))

	role, err := client.RbacV1().ClusterRoles().Get(t.Context(), FeaturePublisher, metav1.GetOptions{})
	require.NoError(t, err)
	want := featurepub.ServerRules()
	require.Len(t, role.Rules, len(want))
	for i, r := range want {
		assert.Equal(t, r.Verbs, role.Rules[i].Verbs)
		assert.Equal(t, r.Resources, role.Rules[i].Resources)
		assert.Equal(t, r.APIGroups, role.Rules[i].APIGroups)
	}
	binding, err := client.RbacV1().ClusterRoleBindings().Get(t.Context(), FeaturePublisher, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: FeaturePublisher}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: pki.FeaturePublisherUser}}, binding.Subjects)

	get := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}}
	require.NoError(t, ClusterRole(t.Context(), client, opts, FeaturePublisher, []rbacv1.PolicyRule{get}, "Group", "g"))
	role, err = client.RbacV1().ClusterRoles().Get(t.Context(), FeaturePublisher, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []rbacv1.PolicyRule{get}, role.Rules)
}
