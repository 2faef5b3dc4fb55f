package featurepub_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
)

// validate checks obj against the OpenAPI schema of crd, as the apiserver
// does on a write.
func validate(t *testing.T, crd []byte, obj runtime.Object) field.ErrorList {
	t.Helper()
	var v1 apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.UnmarshalStrict(crd, &v1))
	var props apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1.Spec.Versions[0].Schema.OpenAPIV3Schema, &props, nil))
	validator, _, err := validation.NewSchemaValidator(&props)
	require.NoError(t, err)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return validation.ValidateCustomResource(nil, u, validator)
}

// TestWhatIsWrittenFitsTheCRDs: a Feature with every value the summarizer
// writes (true, false, partial; groups true, false, unknown), a report and
// a profile the reporter writes pass the generated schemas (controller-gen
// once made the enums booleans, which the apiserver refused).
func TestWhatIsWrittenFitsTheCRDs(t *testing.T) {
	var fl fleet
	fl.add("new", 3, "v1.37.2", map[string]bool{"Foo": true, "Bar": false}, map[string]string{"Foo": "kubelet=true"}, "kubelet", "kube-proxy")
	fl.add("old", 2, "v1.36.3", map[string]bool{"Bar": true}, nil)
	features := []featuresv1alpha1.Feature{
		feature("Foo", map[string]bool{"server-a": true}),
		feature("Bar", map[string]bool{"server-a": false}),
		feature("Baz", map[string]bool{"server-a": true}),
	}
	sums := featurepub.Summarize(features, fl.reports, fl.profiles)
	assert.Equal(t, "partial", sums["Foo"].ClusterEnabled)
	assert.Equal(t, "partial", sums["Baz"].ClusterEnabled, "on in the server, unknown to every node's binary")
	for _, f := range features {
		s := sums[f.Status.Name]
		f.TypeMeta = metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "Feature"}
		f.Status.Stage = "Alpha"
		f.Status.ClusterEnabled, f.Status.NodesEnabled, f.Status.Disagreeing, f.Status.Nodes = s.ClusterEnabled, s.NodesEnabled, s.Disagreeing, s.Nodes
		c := s.Condition
		c.LastTransitionTime = metav1.Now()
		f.Status.Conditions = []metav1.Condition{c}
		assert.Empty(t, validate(t, featuresv1alpha1.CRD, &f), "%s: %+v", f.Status.Name, s)
	}
	r, err := featurepub.BuildNodeReport(nodePlan([]string{names.Kubelet, names.KubeProxy}, true), "node-a")
	require.NoError(t, err)
	assert.Empty(t, validate(t, featuresv1alpha1.NodeFeatureReportCRD, r.Report))
	assert.Empty(t, validate(t, featuresv1alpha1.FeatureProfileCRD, r.Profiles[0]))

	// And a value outside the enum is refused: the check can fail.
	bad := features[0]
	bad.Status.ClusterEnabled = "maybe"
	assert.NotEmpty(t, validate(t, featuresv1alpha1.CRD, &bad))
}

// TestCRDEnumsAreStrings: a string field's enum values are JSON strings in
// every CRD of the group (an unquoted true in a kubebuilder Enum marker
// becomes a boolean the apiserver never matches a string to, while the
// schema validator above converts and accepts it).
func TestCRDEnumsAreStrings(t *testing.T) {
	var walk func(path string, p apiextensionsv1.JSONSchemaProps)
	walk = func(path string, p apiextensionsv1.JSONSchemaProps) {
		if p.Type == "string" {
			for _, e := range p.Enum {
				assert.True(t, len(e.Raw) > 0 && e.Raw[0] == '"', "%s: enum value %s is not a string", path, e.Raw)
			}
		}
		for name, sub := range p.Properties {
			walk(path+"."+name, sub)
		}
		if p.Items != nil && p.Items.Schema != nil {
			walk(path+"[]", *p.Items.Schema)
		}
	}
	enums := 0
	for _, doc := range featuresv1alpha1.CRDs() {
		var crd apiextensionsv1.CustomResourceDefinition
		require.NoError(t, yaml.UnmarshalStrict(doc, &crd))
		for _, v := range crd.Spec.Versions {
			walk(crd.Name, *v.Schema.OpenAPIV3Schema)
		}
		enums += countEnums(*crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	}
	assert.GreaterOrEqual(t, enums, 3, "clusterEnabled, the groups' enabled, the condition's status")
}

func countEnums(p apiextensionsv1.JSONSchemaProps) int {
	n := 0
	if len(p.Enum) > 0 {
		n++
	}
	for _, sub := range p.Properties {
		n += countEnums(sub)
	}
	if p.Items != nil && p.Items.Schema != nil {
		n += countEnums(*p.Items.Schema)
	}
	return n
}
