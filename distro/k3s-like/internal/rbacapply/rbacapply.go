package rbacapply

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/pki"
)

// FeaturePublisher names the ClusterRole and binding of the servers'
// feature publisher and summarizer.
const FeaturePublisher = "kubeharness:feature-publisher"

// FeaturePublisherAccess applies FeaturePublisher's rules
// (featurepub.ServerRules) and binds them to the feature publisher's user
// (pki.FeaturePublisherUser).
func FeaturePublisherAccess(ctx context.Context, client kubernetes.Interface, opts metav1.ApplyOptions) error {
	return ClusterRole(ctx, client, opts, FeaturePublisher, featurepub.ServerRules(), "User", pki.FeaturePublisherUser)
}

// ClusterRole applies the ClusterRole name with rules and binds it, by a
// ClusterRoleBinding of the same name, to the subject of kind (User or
// Group).
func ClusterRole(ctx context.Context, client kubernetes.Interface, opts metav1.ApplyOptions, name string, rules []rbacv1.PolicyRule, kind, subject string) error {
	role := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		role.WithRules(rbacv1ac.PolicyRule().WithAPIGroups(r.APIGroups...).WithResources(r.Resources...).
			WithResourceNames(r.ResourceNames...).WithVerbs(r.Verbs...).WithNonResourceURLs(r.NonResourceURLs...))
	}
	if _, err := client.RbacV1().ClusterRoles().Apply(ctx, role, opts); err != nil {
		return err
	}
	_, err := client.RbacV1().ClusterRoleBindings().Apply(ctx, rbacv1ac.ClusterRoleBinding(name).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("ClusterRole").WithName(name)).
		WithSubjects(rbacv1ac.Subject().WithKind(kind).WithAPIGroup("rbac.authorization.k8s.io").WithName(subject)), opts)
	return err
}
