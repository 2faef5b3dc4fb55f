package featurepub_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

func TestFeatures(t *testing.T) {
	plan := &scoping.Plan{
		BinaryVersion: "1.37", EmulationVersion: "1.37",
		Components: []string{etcd.Name, names.APIServer, names.Scheduler},
		Features: []scoping.FeatureState{
			{Name: "SchedulerPreQueueingHints", Stage: "Alpha", Enabled: true, Source: scoping.SourceFlag,
				Requests: []scoping.Request{{Component: "kube-scheduler", Value: "true", Flag: "--feature-gates=SchedulerPreQueueingHints=true"}}},
			{Name: "AllAlpha", Stage: "Alpha", Source: scoping.SourceDefault},
		},
	}
	fs := featurepub.Features(plan, "node-1")
	require.Len(t, fs, 2)
	f := fs[0]
	assert.Equal(t, "schedulerprequeueinghints", f.Name)
	assert.Equal(t, "SchedulerPreQueueingHints", f.Status.Name)
	assert.Equal(t, "kube-scheduler=true", f.Status.SetBy)
	require.Len(t, f.Status.Servers, 1)
	assert.Equal(t, []featuresv1alpha1.ComponentFeature{
		{Name: etcd.Name},
		{Name: "kube-apiserver", Registers: true},
		{Name: "kube-scheduler", Registers: true, Value: "true", Flag: "--feature-gates=SchedulerPreQueueingHints=true"},
	}, f.Status.Servers[0].Components)
	assert.Equal(t, "default", fs[1].Status.SetBy)
}

func TestEmbeddedCRD(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(featuresv1alpha1.CRD, crd))
	assert.Equal(t, "features.features.kubeharness.io", crd.Name)
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope)
	require.Len(t, crd.Spec.Versions, 1)
	v := crd.Spec.Versions[0]
	assert.True(t, v.Subresources == nil || v.Subresources.Status == nil, "no status subresource: a plain apply writes status")
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		if c.Priority == 0 {
			cols = append(cols, c.Name)
		}
	}
	assert.Equal(t, []string{"Stage", "Enabled", "Default", "Set-By", "Age"}, cols)
	servers := v.Schema.OpenAPIV3Schema.Properties["status"].Properties["servers"]
	assert.Equal(t, "map", *servers.XListType)
	assert.Equal(t, []string{"server"}, servers.XListMapKeys)
}

// TestRenew: a renewed Publisher has the settings and none of the run
// state.
func TestRenew(t *testing.T) {
	plan := func() *scoping.Plan { return nil }
	p := &featurepub.Publisher{Server: "a", FieldManager: "fm", UserAgent: "ua", Kubeconfig: "/k", Plan: plan, Concurrency: 3, MaxBackoff: time.Second}
	n := p.Renew().(*featurepub.Publisher)
	assert.Equal(t, "a", n.Server)
	assert.Equal(t, "fm", n.FieldManager)
	assert.Equal(t, "ua", n.UserAgent)
	assert.Equal(t, "/k", n.Kubeconfig)
	assert.Equal(t, 3, n.Concurrency)
	assert.Equal(t, time.Second, n.MaxBackoff)
	assert.NotNil(t, n.Plan)
	assert.NotSame(t, p, n)
}
