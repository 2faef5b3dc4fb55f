package v1alpha1

import (
	_ "embed"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Feature.
const GroupName = "features.kubeharness.io"

// SchemeGroupVersion is features.kubeharness.io/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the plural resource name of Feature.
var Resource = SchemeGroupVersion.WithResource("features")

// CRD is the generated CustomResourceDefinition of Feature (controller-gen,
// `make generate`).
//
//go:embed crd/features.kubeharness.io_features.yaml
var CRD []byte

var (
	// SchemeBuilder registers Feature and FeatureList.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Feature{}, &FeatureList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
