package featurepub

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/internal/logtest"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustUnstructured(t *testing.T, obj runtime.Object) runtime.Object {
	t.Helper()
	u, err := toUnstructured(obj)
	require.NoError(t, err)
	return u
}

// TestSummarizerAppliesWhatChanged: the summarizer's watch applies the
// Feature whose summary differs from what it holds, not the one that
// already holds its summary; it applies only its own fields; stopping it
// joins its informers (goleak).
func TestSummarizerAppliesWhatChanged(t *testing.T) {
	plan := &scoping.Plan{BinaryVersion: "v1.37.2", EmulationVersion: "1.37", Components: []string{names.Kubelet},
		Features: []scoping.FeatureState{{Name: "Foo", Enabled: true, Source: scoping.SourceDefault}, {Name: "Bar", Enabled: true, Source: scoping.SourceDefault}}}
	report, err := BuildNodeReport(plan, "node-a")
	require.NoError(t, err)
	report.Report.OwnerReferences = []metav1.OwnerReference{NodeOwner("node-a", "uid-a")}

	feature := func(name string) *featuresv1alpha1.Feature {
		return &featuresv1alpha1.Feature{
			TypeMeta:   metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "Feature"},
			ObjectMeta: metav1.ObjectMeta{Name: ObjectName(name)},
			Status: featuresv1alpha1.FeatureStatus{Name: name, Enabled: true,
				Servers: []featuresv1alpha1.ServerFeature{{Server: "server-a", Enabled: true}}},
		}
	}
	foo, bar := feature("Foo"), feature("Bar")
	// Bar already holds its summary.
	sum := Summarize([]featuresv1alpha1.Feature{*bar}, []featuresv1alpha1.NodeFeatureReport{*report.Report},
		map[string]*featuresv1alpha1.FeatureProfile{report.Profiles[0].Name: report.Profiles[0]})["Bar"]
	bar.Status.ClusterEnabled, bar.Status.NodesEnabled, bar.Status.Nodes = sum.ClusterEnabled, sum.NodesEnabled, sum.Nodes
	c := sum.Condition
	c.LastTransitionTime = metav1.Now()
	bar.Status.Conditions = []metav1.Condition{c}

	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		featuresv1alpha1.Resource:                  "FeatureList",
		featuresv1alpha1.NodeFeatureReportResource: "NodeFeatureReportList",
		featuresv1alpha1.FeatureProfileResource:    "FeatureProfileList",
	}, mustUnstructured(t, foo), mustUnstructured(t, bar), mustUnstructured(t, report.Report), mustUnstructured(t, report.Profiles[0]))
	var mu sync.Mutex
	applied := map[string][]byte{}
	client.PrependReactor("patch", "features", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		mu.Lock()
		applied[p.GetName()] = p.GetPatch()
		mu.Unlock()
		return true, nil, nil
	})

	s := &Summarizer{Interval: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.watch(ctx, client) }()
	require.Eventually(t, func() bool { return s.Last() != nil }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // rounds enough to apply Bar, were it wrong
	cancel()
	require.NoError(t, <-done)

	mu.Lock()
	defer mu.Unlock()
	require.Contains(t, applied, "foo")
	assert.NotContains(t, applied, "bar", "Bar holds its summary already")
	var body map[string]any
	require.NoError(t, json.Unmarshal(applied["foo"], &body))
	status := body["status"].(map[string]any)
	assert.Equal(t, "true", status["clusterEnabled"])
	assert.Equal(t, "1/1", status["nodesEnabled"])
	assert.NotContains(t, status, "servers", "only the summarizer's own fields")
	assert.NotContains(t, status, "name")
	assert.Equal(t, int64(1), s.Applied())
}

// TestSummarizerWithoutKubeconfig: a kubeconfig it cannot read is logged,
// never an error; it waits for its context.
func TestSummarizerWithoutKubeconfig(t *testing.T) {
	ctx, lines := logtest.Capture(context.Background())
	s := &Summarizer{Kubeconfig: "/nonexistent/admin.kubeconfig"}
	ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	assert.NoError(t, s.Run(ctx))
	assert.NotEmpty(t, lines(`"kubeconfig"="/nonexistent/admin.kubeconfig"`), "logged through the context's logger")
}

// TestTypedTransform: the summarizer's informers keep each object typed,
// without its managed fields; an object that does not convert is kept as
// it came, and a round leaves such a report out (reportsOf) while
// fromObject names such a Feature in its error.
func TestTypedTransform(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": featuresv1alpha1.SchemeGroupVersion.String(), "kind": "Feature",
		"metadata": map[string]any{"name": "somegate", "resourceVersion": "7", "managedFields": []any{map[string]any{"manager": "k3s-like", "operation": "Apply"}}},
		"status":   map[string]any{"name": "SomeGate", "enabled": true},
	}}
	out, err := typed[featuresv1alpha1.Feature](u)
	require.NoError(t, err)
	f, ok := out.(*featuresv1alpha1.Feature)
	require.True(t, ok, "typed: got %T", out)
	assert.Equal(t, "somegate", f.Name)
	assert.Equal(t, "7", f.ResourceVersion)
	assert.Equal(t, "SomeGate", f.Status.Name)
	assert.Nil(t, f.ManagedFields, "managed fields dropped")
	var got featuresv1alpha1.Feature
	require.NoError(t, fromObject(out, &got))
	assert.Equal(t, "SomeGate", got.Status.Name)

	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": featuresv1alpha1.SchemeGroupVersion.String(), "kind": "NodeFeatureReport",
		"metadata": map[string]any{"name": "node-x"}, "spec": "not an object",
	}}
	kept, err := typed[featuresv1alpha1.NodeFeatureReport](bad)
	require.NoError(t, err, "a malformed object is no error of the informer's")
	assert.Same(t, bad, kept)
	good, err := typed[featuresv1alpha1.NodeFeatureReport](&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": featuresv1alpha1.SchemeGroupVersion.String(), "kind": "NodeFeatureReport", "metadata": map[string]any{"name": "node-y"},
	}})
	require.NoError(t, err)
	reports := reportsOf([]any{kept, good})
	require.Len(t, reports, 1)
	assert.Equal(t, "node-y", reports[0].Name)

	badFeature := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": featuresv1alpha1.SchemeGroupVersion.String(), "kind": "Feature", "metadata": map[string]any{"name": "broken"}, "status": "x",
	}}
	keptF, _ := typed[featuresv1alpha1.Feature](badFeature)
	assert.ErrorContains(t, fromObject(keptF, &got), "Feature broken does not convert")
	passthrough, err := typed[featuresv1alpha1.Feature]("not an object")
	require.NoError(t, err)
	assert.Equal(t, "not an object", passthrough)
}
