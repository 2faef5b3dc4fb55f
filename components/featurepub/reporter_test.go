package featurepub_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

func nodePlan(components []string, foo bool, requests ...scoping.Request) *scoping.Plan {
	source := scoping.SourceDefault
	if len(requests) > 0 {
		source = scoping.SourceFlag
	}
	return &scoping.Plan{
		BinaryVersion: "1.37.2", EmulationVersion: "1.37", Components: components,
		Features: []scoping.FeatureState{
			{Name: "Foo", Stage: "Beta", Default: false, Enabled: foo, Source: source, Requests: requests},
			{Name: "Bar", Stage: "GA", Default: true, Enabled: true, Source: scoping.SourceDefault},
		},
	}
}

func TestBuildNodeReport(t *testing.T) {
	plan := nodePlan([]string{names.Containerd, names.Kubelet, names.KubeProxy}, true,
		scoping.Request{Component: names.Kubelet, Value: "true", Flag: "--feature-gates=Foo=true"})
	r, err := featurepub.BuildNodeReport(plan, "node-a")
	require.NoError(t, err)
	require.Len(t, r.Profiles, 1)
	p := r.Profiles[0]
	assert.Equal(t, []string{"Bar", "Foo"}, p.Spec.Enabled)
	assert.Equal(t, "node-a", r.Report.Name)
	assert.Equal(t, []featuresv1alpha1.NodeComponentReport{
		{Name: names.Kubelet, BinaryVersion: "1.37.2", EmulationVersion: "1.37", Profile: p.Name, SetBy: map[string]string{"Foo": "kubelet=true"}},
		{Name: names.KubeProxy, BinaryVersion: "1.37.2", EmulationVersion: "1.37", Profile: p.Name, SetBy: map[string]string{"Foo": "kubelet=true"}},
	}, r.Report.Spec.Components)

	r, err = featurepub.BuildNodeReport(nodePlan([]string{names.Kubelet}, false), "node-b")
	require.NoError(t, err)
	require.Len(t, r.Report.Spec.Components, 1, "--disable-kube-proxy: the kubelet only")
	assert.Nil(t, r.Report.Spec.Components[0].SetBy, "nothing set: no SET-BY")

	_, err = featurepub.BuildNodeReport(nodePlan([]string{names.APIServer}, false), "server-only")
	assert.ErrorContains(t, err, "node server-only: the plan runs none of [kubelet kube-proxy]")
}

func fakeDynamic() *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		featuresv1alpha1.NodeFeatureReportResource: "NodeFeatureReportList",
		featuresv1alpha1.FeatureProfileResource:    "FeatureProfileList",
	})
}

// writes are the create and update actions the fake saw.
func writes(c *dynamicfake.FakeDynamicClient) []string {
	var out []string
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

// Send writes only what changed: a profile once, the report when its
// components or its owner change; an unchanged report costs reads only.
func TestSendWritesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	c := fakeDynamic()
	owner := featurepub.NodeOwner("node-a", types.UID("uid-1"))
	on, err := featurepub.BuildNodeReport(nodePlan([]string{names.Kubelet}, true), "node-a")
	require.NoError(t, err)

	n, err := on.Send(ctx, c, owner)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"create featureprofiles", "create nodefeaturereports"}, writes(c))

	c.ClearActions()
	n, err = on.Send(ctx, c, owner)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a restart with the same gates writes nothing")
	assert.Empty(t, writes(c))
	for _, a := range c.Actions() {
		assert.Equal(t, "get", a.GetVerb(), "only reads: %v", a)
	}

	c.ClearActions()
	off, err := featurepub.BuildNodeReport(nodePlan([]string{names.Kubelet}, false), "node-a")
	require.NoError(t, err)
	n, err = off.Send(ctx, c, owner)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{"create featureprofiles", "update nodefeaturereports"}, writes(c))

	c.ClearActions()
	n, err = on.Send(ctx, c, owner)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the first profile is still there")
	assert.Equal(t, []string{"update nodefeaturereports"}, writes(c))

	c.ClearActions()
	n, err = on.Send(ctx, c, featurepub.NodeOwner("node-a", types.UID("uid-2")))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the Node was deleted and registered again: a new owner")
	got, err := c.Resource(featuresv1alpha1.NodeFeatureReportResource).Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	require.Len(t, got.GetOwnerReferences(), 1)
	assert.Equal(t, types.UID("uid-2"), got.GetOwnerReferences()[0].UID)
	assert.Equal(t, "Node", got.GetOwnerReferences()[0].Kind)

	// The kubelet declares another feature (KEP-5328): the report only.
	c.ClearActions()
	declaring := featurepub.NodeReport{Report: on.Report.DeepCopy(), Profiles: on.Profiles}
	declaring.Report.Spec.DeclaredFeatures = []string{"RestartAllContainersOnContainerExits"}
	n, err = declaring.Send(ctx, c, featurepub.NodeOwner("node-a", types.UID("uid-2")))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, []string{"update nodefeaturereports"}, writes(c))
	got, err = c.Resource(featuresv1alpha1.NodeFeatureReportResource).Get(ctx, "node-a", metav1.GetOptions{})
	require.NoError(t, err)
	d, _, _ := unstructured.NestedStringSlice(got.Object, "spec", "declaredFeatures")
	assert.Equal(t, []string{"RestartAllContainersOnContainerExits"}, d)
}
