package featurecheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

const manifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
# a comment only
---
apiVersion: lifecycle.k8s.io/v1alpha1
kind: EvictionRequest
metadata: {name: er}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm}
`

func TestReadAndCheck(t *testing.T) {
	objs, err := Read(strings.NewReader(manifest))
	require.NoError(t, err)
	require.Equal(t, []Object{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "lifecycle.k8s.io/v1alpha1", Kind: "EvictionRequest", Name: "er"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
	}, objs)

	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
	}}}
	res, err := Check(disc, map[string]Gate{"EvictionRequestAPI": {Stage: "Alpha"}}, objs)
	require.NoError(t, err)
	assert.True(t, res[0].Served)
	assert.True(t, res[2].Served)
	assert.False(t, res[1].Served)
	assert.Contains(t, res[1].Reason, "runtime-config=lifecycle.k8s.io/v1alpha1=true")
	assert.Contains(t, res[1].Reason, "feature gate EvictionRequestAPI (Alpha, disabled)")
}

func TestTable(t *testing.T) {
	assert.True(t, RuntimeConfigOnly(schema.GroupVersion{Group: "scheduling.k8s.io", Version: "v1alpha3"}))
	assert.False(t, RuntimeConfigOnly(schema.GroupVersion{Group: "apps", Version: "v1"}))
	assert.Equal(t, []string{"CompositePodGroup"}, GatesFor(schema.GroupVersionKind{Group: "scheduling.k8s.io", Version: "v1alpha3", Kind: "CompositePodGroup"}))
}
