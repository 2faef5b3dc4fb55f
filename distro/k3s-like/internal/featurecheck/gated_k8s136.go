//go:build k8s1_36

package featurecheck

import "k8s.io/apimachinery/pkg/runtime/schema"

// gatedKinds are the kinds whose storage kube-apiserver 1.36 adds only when
// a feature gate is on (k8s.io/kubernetes@v1.36.3):
//
//	pkg/registry/certificates/rest/storage_certificates.go:95,107,126
//	pkg/registry/scheduling/rest/storage_scheduling.go:89,101
//	pkg/registry/storagemigration/rest/storage_storagemigration.go:52
func gatedKinds() map[schema.GroupVersionKind][]string {
	return map[schema.GroupVersionKind][]string{
		{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "ClusterTrustBundle"}:          {"ClusterTrustBundle"},
		{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "PodCertificateRequest"}:       {"PodCertificateRequest"},
		{Group: "certificates.k8s.io", Version: "v1alpha1", Kind: "ClusterTrustBundle"}:         {"ClusterTrustBundle"},
		{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "Workload"}:                     {"GenericWorkload"},
		{Group: "scheduling.k8s.io", Version: "v1alpha2", Kind: "PodGroup"}:                     {"GenericWorkload"},
		{Group: "storagemigration.k8s.io", Version: "v1beta1", Kind: "StorageVersionMigration"}: {"StorageVersionMigrator"},
	}
}
