package featurepub

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

// applyServer is a fake dynamic client whose Feature applies merge as the
// apiserver's do for the publisher's fields: the top-level fields are the
// applied ones, status.servers is a map by server, the summary is kept;
// the summarizer's (no status.name) set the summary alone;
// every write gets a new resourceVersion (the fake's tracker sets none).
type applyServer struct {
	*dynamicfake.FakeDynamicClient
	mu sync.Mutex
	rv int
}

func newApplyServer(t *testing.T) *applyServer {
	s := &applyServer{FakeDynamicClient: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		featuresv1alpha1.Resource:                  "FeatureList",
		featuresv1alpha1.NodeFeatureReportResource: "NodeFeatureReportList",
		featuresv1alpha1.FeatureProfileResource:    "FeatureProfileList",
	})}
	s.PrependReactor("patch", "features", func(a clienttesting.Action) (bool, runtime.Object, error) {
		p := a.(clienttesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return true, nil, apierrors.NewBadRequest("not an apply")
		}
		var in featuresv1alpha1.Feature
		if err := json.Unmarshal(p.GetPatch(), &in); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		cur, exists := s.get(t, p.GetName())
		if in.Status.Name == "" { // the summarizer's: its own fields only
			if !exists {
				return true, nil, apierrors.NewNotFound(featuresv1alpha1.Resource.GroupResource(), p.GetName())
			}
			cur.Status.ClusterEnabled, cur.Status.NodesEnabled, cur.Status.Disagreeing, cur.Status.Nodes, cur.Status.Conditions =
				in.Status.ClusterEnabled, in.Status.NodesEnabled, in.Status.Disagreeing, in.Status.Nodes, in.Status.Conditions
			return true, s.put(t, cur, true), nil
		}
		if !exists {
			cur = &featuresv1alpha1.Feature{TypeMeta: in.TypeMeta}
			cur.Name = p.GetName()
		}
		servers := slices.DeleteFunc(cur.Status.Servers, func(sf featuresv1alpha1.ServerFeature) bool {
			return slices.ContainsFunc(in.Status.Servers, func(n featuresv1alpha1.ServerFeature) bool { return n.Server == sf.Server })
		})
		summary := cur.Status
		cur.Status = in.Status
		cur.Status.Servers = append(servers, in.Status.Servers...)
		cur.Status.ClusterEnabled, cur.Status.NodesEnabled, cur.Status.Disagreeing, cur.Status.Nodes, cur.Status.Conditions =
			summary.ClusterEnabled, summary.NodesEnabled, summary.Disagreeing, summary.Nodes, summary.Conditions
		u := s.put(t, cur, exists)
		return true, u, nil
	})
	return s
}

// get is the tracker's Feature name.
func (s *applyServer) get(t *testing.T, name string) (*featuresv1alpha1.Feature, bool) {
	o, err := s.Tracker().Get(featuresv1alpha1.Resource, "", name)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	f := &featuresv1alpha1.Feature{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.(runtime.Unstructured).UnstructuredContent(), f))
	return f, true
}

// put writes f into the tracker with a new resourceVersion, as a write by
// anyone (the publisher's applies, or a test's other writer): the tracker
// records no action for it.
func (s *applyServer) put(t *testing.T, f *featuresv1alpha1.Feature, exists bool) runtime.Object {
	s.mu.Lock()
	s.rv++
	f.ResourceVersion = strconv.Itoa(s.rv)
	s.mu.Unlock()
	u := mustUnstructured(t, f)
	if exists {
		require.NoError(t, s.Tracker().Update(featuresv1alpha1.Resource, u, ""))
	} else {
		require.NoError(t, s.Tracker().Create(featuresv1alpha1.Resource, u, ""))
	}
	return u
}

// writes are the write requests the publisher made to Features, "verb
// name" each, since the last ClearActions.
func (s *applyServer) writes() []string {
	var out []string
	for _, a := range s.Actions() {
		if a.GetResource() != featuresv1alpha1.Resource {
			continue
		}
		switch a := a.(type) {
		case clienttesting.PatchAction:
			out = append(out, "patch "+a.GetName())
		case clienttesting.CreateAction, clienttesting.UpdateAction:
			out = append(out, a.GetVerb())
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// watching reports whether an informer watches the Features (the fake
// registers the watcher while it records the action).
func (s *applyServer) watching() bool {
	return slices.ContainsFunc(s.Actions(), func(a clienttesting.Action) bool {
		return a.GetVerb() == "watch" && a.GetResource() == featuresv1alpha1.Resource
	})
}

// gatePlan is a plan of three alpha gates of an apiserver and a scheduler,
// Bar enabled by the scheduler's flag when bar.
func gatePlan(bar bool) *scoping.Plan {
	plan := &scoping.Plan{BinaryVersion: "1.37", EmulationVersion: "1.37", Components: []string{names.APIServer, names.Scheduler},
		Features: []scoping.FeatureState{
			{Name: "Foo", Stage: "Alpha", Source: scoping.SourceDefault},
			{Name: "Bar", Stage: "Alpha", Source: scoping.SourceDefault},
			{Name: "Baz", Stage: "Beta", Default: true, Enabled: true, Source: scoping.SourceDefault},
		}}
	if bar {
		plan.Features[1].Enabled, plan.Features[1].Source = true, scoping.SourceFlag
		plan.Features[1].Requests = []scoping.Request{{Component: names.Scheduler, Value: "true", Flag: "--feature-gates=Bar=true"}}
	}
	return plan
}

// runKeep runs p.keep against s until the first publication is done and
// the informer watches; stop ends it and waits for it.
func runKeep(t *testing.T, s *applyServer, p *Publisher, plan *scoping.Plan) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.keep(ctx, s, Features(plan, p.Server)) }()
	stop = func() {
		cancel()
		require.NoError(t, <-done)
	}
	ok := assert.Eventually(t, func() bool { return p.Published() && s.watching() }, 10*time.Second, 5*time.Millisecond)
	if !ok {
		stop()
		t.FailNow()
	}
	return stop
}

// TestPublishWritesOnlyChanges: a start with the Features as this server
// wrote them makes no write request; a changed gate writes that Feature
// only; another server's entry and the cluster's summary are not this
// server's to compare.
func TestPublishWritesOnlyChanges(t *testing.T) {
	s := newApplyServer(t)
	p := &Publisher{Server: "server-a"}
	runKeep(t, s, p, gatePlan(false))()
	assert.Equal(t, []string{"patch bar", "patch baz", "patch foo"}, s.writes(), "the first start creates every Feature")

	// Another server's entry and the summarizer's summary (what the nodes'
	// reports change) are in every Feature.
	for _, name := range []string{"foo", "bar", "baz"} {
		f, ok := s.get(t, name)
		require.True(t, ok)
		f.Status.Servers = append(f.Status.Servers, featuresv1alpha1.ServerFeature{Server: "server-b", Enabled: true})
		f.Status.ClusterEnabled, f.Status.NodesEnabled = "partial", "3/5"
		s.put(t, f, true)
	}

	s.ClearActions()
	p = p.Renew().(*Publisher)
	runKeep(t, s, p, gatePlan(false))()
	assert.Empty(t, s.writes(), "a restart with the same plan writes nothing")

	s.ClearActions()
	p = p.Renew().(*Publisher)
	runKeep(t, s, p, gatePlan(true))()
	assert.Equal(t, []string{"patch bar"}, s.writes(), "only the gate that changed")
	bar, _ := s.get(t, "bar")
	assert.True(t, bar.Status.Enabled)
	assert.Equal(t, "kube-scheduler=true", bar.Status.SetBy)
	assert.Equal(t, "partial", bar.Status.ClusterEnabled, "the summary is not the publisher's")
	require.Len(t, bar.Status.Servers, 2)
	assert.Equal(t, "server-b", bar.Status.Servers[0].Server, "the other server's entry is kept")
	assert.Equal(t, "--feature-gates=Bar=true", bar.Status.Servers[1].Components[1].Flag)
}

// TestPublishAfterOtherWriters: at the start, a Feature whose top-level
// fields someone else changed is applied again, and a stale one (a gate no
// server knows) deleted.
func TestPublishAfterOtherWriters(t *testing.T) {
	s := newApplyServer(t)
	p := &Publisher{Server: "server-a"}
	runKeep(t, s, p, gatePlan(false))()
	foo, _ := s.get(t, "foo")
	foo.Status.Stage = "Beta"
	s.put(t, foo, true)
	gone := &featuresv1alpha1.Feature{TypeMeta: foo.TypeMeta, Status: featuresv1alpha1.FeatureStatus{Name: "Gone",
		Servers: []featuresv1alpha1.ServerFeature{{Server: "server-a"}}}}
	gone.Name = "gone"
	s.put(t, gone, false)
	s.ClearActions()

	p = p.Renew().(*Publisher)
	runKeep(t, s, p, gatePlan(false))()
	assert.Equal(t, []string{"delete gone", "patch foo"}, s.writes())
	_, ok := s.get(t, "gone")
	assert.False(t, ok, "a gate only this server reported is removed")
	foo, _ = s.get(t, "foo")
	assert.Equal(t, "Alpha", foo.Status.Stage)
}

// TestKeepRepublishes: while it runs, the publisher applies again a
// Feature deleted or whose entry of this server someone changed, that
// Feature only; the summarizer's writes (node reports, Nodes coming and
// going) and another server's top-level values cause no write.
func TestKeepRepublishes(t *testing.T) {
	s := newApplyServer(t)
	p := &Publisher{Server: "server-a"}
	stop := runKeep(t, s, p, gatePlan(false))
	defer stop()
	s.ClearActions()

	// The summary of every Feature changes (as node reports do), and
	// another server writes Foo's top-level fields with its own values.
	for _, name := range []string{"foo", "bar", "baz"} {
		f, _ := s.get(t, name)
		f.Status.ClusterEnabled, f.Status.NodesEnabled = "true", "100/100"
		if name == "foo" {
			f.Status.Stage, f.Status.BinaryVersion = "Beta", "1.38"
		}
		s.put(t, f, true)
	}
	// Then Bar is deleted: the events are handled in order, so once it is
	// back every change above was seen.
	require.NoError(t, s.Tracker().Delete(featuresv1alpha1.Resource, "", "bar"))
	require.Eventually(t, func() bool { _, ok := s.get(t, "bar"); return ok }, 10*time.Second, 5*time.Millisecond, "bar re-created")
	assert.Equal(t, []string{"patch bar"}, s.writes(), "the deleted Feature only")
	foo, _ := s.get(t, "foo")
	assert.Equal(t, "Beta", foo.Status.Stage, "another server's top-level values stay until a restart")

	// Someone changes this server's entry of Baz.
	s.ClearActions()
	baz, _ := s.get(t, "baz")
	baz.Status.Servers[0].Enabled = false
	s.put(t, baz, true)
	require.Eventually(t, func() bool { f, _ := s.get(t, "baz"); return f.Status.Servers[0].Enabled }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, []string{"patch baz"}, s.writes(), "the changed Feature only")
	baz, _ = s.get(t, "baz")
	assert.Equal(t, "100/100", baz.Status.NodesEnabled, "the summary is kept")
}
