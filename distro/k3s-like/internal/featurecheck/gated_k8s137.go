//go:build !k8s1_36

package featurecheck

import "k8s.io/apimachinery/pkg/runtime/schema"

// gatedKinds are the kinds whose storage kube-apiserver 1.37 adds only when
// a feature gate is on (k8s.io/kubernetes@v1.37.2):
//
//	pkg/registry/certificates/rest/storage_certificates.go:90,102,121,133,152
//	pkg/registry/lifecycle/rest/storage_coordination.go:56,68
//	pkg/registry/scheduling/rest/storage_scheduling.go:97,109,128,140,153
//	pkg/registry/storagemigration/rest/storage_storagemigration.go:59,78
func gatedKinds() map[schema.GroupVersionKind][]string {
	return map[schema.GroupVersionKind][]string{
		{Group: "certificates.k8s.io", Version: "v1", Kind: "ClusterTrustBundle"}:               {"ClusterTrustBundle"},
		{Group: "certificates.k8s.io", Version: "v1", Kind: "PodCertificateRequest"}:            {"PodCertificateRequest"},
		{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "ClusterTrustBundle"}:          {"ClusterTrustBundle"},
		{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "PodCertificateRequest"}:       {"PodCertificateRequest"},
		{Group: "certificates.k8s.io", Version: "v1alpha1", Kind: "ClusterTrustBundle"}:         {"ClusterTrustBundle"},
		{Group: "lifecycle.k8s.io", Version: "v1alpha1", Kind: "Eviction"}:                      {"EvictionRequestAPI"},
		{Group: "lifecycle.k8s.io", Version: "v1alpha1", Kind: "EvictionRequest"}:               {"EvictionRequestAPI"},
		{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "Workload"}:                      {"GenericWorkload"},
		{Group: "scheduling.k8s.io", Version: "v1beta1", Kind: "PodGroup"}:                      {"GenericWorkload"},
		{Group: "scheduling.k8s.io", Version: "v1alpha3", Kind: "Workload"}:                     {"GenericWorkload"},
		{Group: "scheduling.k8s.io", Version: "v1alpha3", Kind: "PodGroup"}:                     {"GenericWorkload"},
		{Group: "scheduling.k8s.io", Version: "v1alpha3", Kind: "CompositePodGroup"}:            {"CompositePodGroup"},
		{Group: "storagemigration.k8s.io", Version: "v1", Kind: "StorageVersionMigration"}:      {"StorageVersionMigrator"},
		{Group: "storagemigration.k8s.io", Version: "v1beta1", Kind: "StorageVersionMigration"}: {"StorageVersionMigrator"},
	}
}
