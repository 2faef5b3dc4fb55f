package featurecheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/featuregate"
	_ "k8s.io/kubernetes/pkg/features" // the kube gates, for TestTable
)

const manifest = `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
---
# a comment only
---
apiVersion: certificates.k8s.io/v1beta1
kind: PodCertificateRequest
metadata: {name: pcr}
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
		{APIVersion: "certificates.k8s.io/v1beta1", Kind: "PodCertificateRequest", Name: "pcr"},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
	}, objs)

	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
	}}}
	res, err := Check(disc, map[string]Gate{"PodCertificateRequest": {Stage: "Beta"}}, nil, objs)
	require.NoError(t, err)
	assert.True(t, res[0].Served)
	assert.True(t, res[2].Served)
	assert.False(t, res[1].Served)
	assert.Contains(t, res[1].Reason, "runtime-config=certificates.k8s.io/v1beta1=true")
	assert.Contains(t, res[1].Reason, "feature gate PodCertificateRequest (Beta, disabled)")
}

// TestTable: the tables of the minor built (certificates.k8s.io/v1beta1
// and its PodCertificateRequest are off by default and gated in 1.36 and
// 1.37 alike), and every gate the gated-kinds table names is a kube gate of
// that minor, so a table copied from another minor fails here.
func TestTable(t *testing.T) {
	assert.True(t, RuntimeConfigOnly(schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1beta1"}))
	assert.False(t, RuntimeConfigOnly(schema.GroupVersion{Group: "apps", Version: "v1"}))
	assert.False(t, RuntimeConfigOnly(schema.GroupVersion{Group: "no.such.group", Version: "v1"}))
	assert.Equal(t, []string{"PodCertificateRequest"}, GatesFor(schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1beta1", Kind: "PodCertificateRequest"}))
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for gvk, gates := range gatedKinds() {
		for _, g := range gates {
			_, ok := known[featuregate.Feature(g)]
			assert.True(t, ok, "%s: gate %s is registered in this minor", gvk, g)
		}
	}
	assert.NotEmpty(t, KnownGates())
}

// TestCheckPartial: an object that is served but needs a gate enabled only
// on some nodes is PARTIAL, naming the gate, the count and the nodes; a
// missing one says the gate is partial.
func TestCheckPartial(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "certificates.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "podcertificaterequests", Kind: "PodCertificateRequest"}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
	}}}
	gates := map[string]Gate{"PodCertificateRequest": {Stage: "Beta", Enabled: true, Cluster: "partial", Nodes: "4987/5000", Disagreeing: "node-0007,node-0009 (+11)"}}
	objs := []Object{
		{APIVersion: "certificates.k8s.io/v1beta1", Kind: "PodCertificateRequest", Name: "pcr"},
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
	}
	res, err := Check(disc, gates, nil, objs)
	require.NoError(t, err)
	assert.Equal(t, "PARTIAL  certificates.k8s.io/v1beta1 PodCertificateRequest pcr: served, but feature gate PodCertificateRequest is partial: enabled on 4987/5000 nodes, disagreeing: node-0007,node-0009 (+11)", res[0].String())
	assert.Equal(t, "ok       apps/v1 Deployment web", res[1].String())

	disc.Resources = disc.Resources[1:] // v1beta1 not served
	res, err = Check(disc, gates, nil, objs[:1])
	require.NoError(t, err)
	assert.False(t, res[0].Served)
	assert.Contains(t, res[0].Reason, "feature gate PodCertificateRequest (Beta, partial: enabled on 4987/5000 nodes, disagreeing: node-0007,node-0009 (+11))")
}
