package featurepub

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// TestServerRulesCreateNoCRD: the publisher's rules reach CRDs only by
// name (the three of features.kubeharness.io) and never create one, nor
// touch anything outside their group but those three.
func TestServerRulesCreateNoCRD(t *testing.T) {
	var crdRules int
	for _, r := range ServerRules() {
		if len(r.APIGroups) == 1 && r.APIGroups[0] == "apiextensions.k8s.io" {
			crdRules++
			assert.NotContains(t, r.Verbs, "create")
			assert.NotContains(t, r.Verbs, "*")
			assert.ElementsMatch(t, []string{
				"features.features.kubeharness.io", "nodefeaturereports.features.kubeharness.io", "featureprofiles.features.kubeharness.io",
			}, r.ResourceNames)
			continue
		}
		assert.Equal(t, []string{featuresv1alpha1.GroupName}, r.APIGroups)
	}
	assert.Equal(t, 1, crdRules)
}

// TestInstallCRDNotInstalled: a client that may not create a missing CRD
// gets a CRDNotInstalledError naming it; one that exists is updated by
// such a client.
func TestInstallCRDNotInstalled(t *testing.T) {
	ctx := context.Background()
	doc := featuresv1alpha1.CRDs()[0]
	var crd apiextensionsv1.CustomResourceDefinition
	require.NoError(t, yaml.Unmarshal(doc, &crd))
	c := apiextensionsfake.NewClientset()
	c.PrependReactor("create", "customresourcedefinitions", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, crd.Name, errors.New("RBAC"))
	})
	err := installCRD(ctx, c.ApiextensionsV1().CustomResourceDefinitions(), doc)
	var ne *CRDNotInstalledError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, crd.Name, ne.Name)
	assert.True(t, apierrors.IsForbidden(err))

	// Installed by someone who may: updated, and Established.
	installed := crd.DeepCopy()
	installed.Spec.Versions = nil
	installed.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	require.NoError(t, c.Tracker().Add(installed))
	require.NoError(t, installCRD(ctx, c.ApiextensionsV1().CustomResourceDefinitions(), doc))
	got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, crd.Spec, got.Spec)
}
