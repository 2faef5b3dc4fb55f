package v1alpha1

import (
	_ "embed"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Feature, NodeFeatureReport and FeatureProfile.
const GroupName = "features.kubeharness.io"

// SchemeGroupVersion is features.kubeharness.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// The resources of the group.
var (
	// Resource is Feature's.
	Resource = SchemeGroupVersion.WithResource("features")
	// NodeFeatureReportResource is NodeFeatureReport's.
	NodeFeatureReportResource = SchemeGroupVersion.WithResource("nodefeaturereports")
	// FeatureProfileResource is FeatureProfile's.
	FeatureProfileResource = SchemeGroupVersion.WithResource("featureprofiles")
)

// The generated CustomResourceDefinitions (controller-gen, `make generate`).
var (
	// CRD is Feature's.
	//
	//go:embed crd/features.kubeharness.io_features.yaml
	CRD []byte
	// NodeFeatureReportCRD is NodeFeatureReport's.
	//
	//go:embed crd/features.kubeharness.io_nodefeaturereports.yaml
	NodeFeatureReportCRD []byte
	// FeatureProfileCRD is FeatureProfile's.
	//
	//go:embed crd/features.kubeharness.io_featureprofiles.yaml
	FeatureProfileCRD []byte
)

// CRDs are the group's CustomResourceDefinitions, Feature's first.
func CRDs() [][]byte { return [][]byte{CRD, NodeFeatureReportCRD, FeatureProfileCRD} }

var (
	// SchemeBuilder registers the group's kinds and their lists.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Feature{}, &FeatureList{},
		&NodeFeatureReport{}, &NodeFeatureReportList{}, &FeatureProfile{}, &FeatureProfileList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
