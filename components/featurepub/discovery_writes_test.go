package featurepub

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

// settle waits until every Feature of s holds a summary and no write came
// for quiet, and returns the writes since the last ClearActions.
func settle(t *testing.T, s *applyServer, features int, quiet time.Duration) []string {
	t.Helper()
	var last []string
	since := time.Now()
	require.Eventually(t, func() bool {
		w := s.writes()
		if len(w) != len(last) {
			last, since = w, time.Now()
			return false
		}
		list, err := s.Tracker().List(featuresv1alpha1.Resource, featuresv1alpha1.SchemeGroupVersion.WithKind("Feature"), "")
		if err != nil {
			return false
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return false
		}
		for _, o := range items {
			m, err := meta.Accessor(o)
			if err != nil {
				return false
			}
			f, ok := s.get(t, m.GetName())
			if !ok || f.Status.ClusterEnabled == "" {
				return false
			}
		}
		return len(items) == features && time.Since(since) >= quiet
	}, 10*time.Second, 5*time.Millisecond)
	return last
}

// TestDiscoveryWritesWhatTheFactsRequire: the publisher and the summarizer
// of one server on one recording client. A fresh start writes each Feature
// twice (the publisher creates it, the summarizer adds the summary: two
// field managers) and nothing more; 50 Nodes without reports then cause no
// request at all; a node's first report one apply per Feature whose
// summary it changes, by the summarizer alone; the same report again,
// nothing.
func TestDiscoveryWritesWhatTheFactsRequire(t *testing.T) {
	s := newApplyServer(t)
	plan := gatePlan(false)
	p := &Publisher{Server: "server-a"}
	sum := &Summarizer{Interval: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	go func() { done <- p.keep(ctx, s, Features(plan, p.Server)) }()
	go func() { done <- sum.watch(ctx, s) }()
	defer func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, <-done)
	}()
	quiet := 30 * sum.Interval

	first := settle(t, s, len(plan.Features), quiet)
	assert.Equal(t, []string{"patch bar", "patch bar", "patch baz", "patch baz", "patch foo", "patch foo"}, first)
	assert.Equal(t, int64(3), sum.Applied())

	s.ClearActions()
	for i := range 50 {
		node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%02d", i)}}
		require.NoError(t, s.Tracker().Create(corev1.SchemeGroupVersion.WithResource("nodes"), mustUnstructured(t, node), ""))
	}
	time.Sleep(quiet)
	assert.Empty(t, s.writes(), "Nodes without reports")
	for _, a := range s.Actions() {
		assert.Equal(t, "create", a.GetVerb(), "only the test's own creates: %s %s", a.GetVerb(), a.GetResource())
	}

	// node-00's kubelet reports Foo on, Bar and Baz off: every summary
	// changes (one more node), each Feature once.
	kubelet := &scoping.Plan{BinaryVersion: "1.37", EmulationVersion: "1.37", Components: []string{names.Kubelet},
		Features: []scoping.FeatureState{
			{Name: "Foo", Stage: "Alpha", Enabled: true, Source: scoping.SourceFlag},
			{Name: "Bar", Stage: "Alpha", Source: scoping.SourceDefault},
			{Name: "Baz", Stage: "Beta", Default: true, Source: scoping.SourceFlag},
		}}
	report, err := BuildNodeReport(kubelet, "node-00")
	require.NoError(t, err)
	s.ClearActions()
	for _, pr := range report.Profiles {
		require.NoError(t, s.Tracker().Create(featuresv1alpha1.FeatureProfileResource, mustUnstructured(t, pr), ""))
	}
	require.NoError(t, s.Tracker().Create(featuresv1alpha1.NodeFeatureReportResource, mustUnstructured(t, report.Report), ""))
	assert.Equal(t, []string{"patch bar", "patch baz", "patch foo"}, settle(t, s, 3, quiet), "one apply per changed Feature")
	assert.Equal(t, int64(6), sum.Applied(), "all of them the summarizer's")
	foo, _ := s.get(t, "foo")
	assert.Equal(t, "1/1", foo.Status.NodesEnabled)

	s.ClearActions()
	again := report.Report.DeepCopy()
	again.Labels = map[string]string{"example.com/rack": "7"}
	require.NoError(t, s.Tracker().Update(featuresv1alpha1.NodeFeatureReportResource, mustUnstructured(t, again), ""))
	time.Sleep(quiet)
	assert.Empty(t, s.writes(), "the same report again")
}
