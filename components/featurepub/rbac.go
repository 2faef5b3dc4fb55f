package featurepub

import (
	rbacv1 "k8s.io/api/rbac/v1"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// ServerRules are the permissions the Publisher and the Summarizer use,
// and no more: the three CRDs of features.kubeharness.io, read and
// updated by name (not created: RBAC cannot limit a create by name, so
// whoever binds these rules installs the CRDs first, InstallCRDs as a
// user that may create them), the Features (applied, watched, and deleted when stale), the
// NodeFeatureReports (read) and the FeatureProfiles (read, and deleted
// when no report names them). Bind them to the identity in their
// Kubeconfig.
func ServerRules() []rbacv1.PolicyRule {
	var crds []string
	for _, r := range []string{featuresv1alpha1.Resource.Resource, featuresv1alpha1.NodeFeatureReportResource.Resource, featuresv1alpha1.FeatureProfileResource.Resource} {
		crds = append(crds, r+"."+featuresv1alpha1.GroupName)
	}
	group := featuresv1alpha1.GroupName
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, ResourceNames: crds, Verbs: []string{"get", "update"}},
		{APIGroups: []string{group}, Resources: []string{featuresv1alpha1.Resource.Resource}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{group}, Resources: []string{featuresv1alpha1.NodeFeatureReportResource.Resource}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{group}, Resources: []string{featuresv1alpha1.FeatureProfileResource.Resource}, Verbs: []string{"get", "list", "watch", "delete"}},
	}
}
