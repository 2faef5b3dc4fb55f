package featurepub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// SummarizerName is the summarizer's component name in the harness.
const SummarizerName = "feature-summarizer"

// Summarizer is a server's harness component that keeps the cluster's view
// of every Feature object (Summarize: ClusterEnabled, the nodes' summaries,
// the Enabled condition) from the servers' entries and the nodes'
// NodeFeatureReports. It watches the three kinds and, Interval after a
// change, applies the Features whose view changed, and only those; it
// deletes the FeatureProfiles no report names that are older than
// ProfileGrace. Every server may run one: they share a field manager and
// apply the same content, which the apiserver does not write again. It
// never fails the harness.
type Summarizer struct {
	// Kubeconfig is the admin kubeconfig the server writes after the
	// barrier.
	Kubeconfig string
	// Connect, if set, may change how the client configuration read from
	// Kubeconfig connects (components.APIServer.InProcess).
	Connect func(*rest.Config) error
	// FieldManager is the server-side apply field manager, the same in
	// every server; "" means "kubeharness/node-summary".
	FieldManager string
	// UserAgent is the client's; "" means "kubeharness-feature-summarizer".
	UserAgent string
	// Interval is how long changes are gathered before one recomputation;
	// 0 means 2 s.
	Interval time.Duration
	// ProfileGrace is how old an unreferenced profile gets before it is
	// deleted; 0 means 10 minutes.
	ProfileGrace time.Duration

	mu      sync.Mutex
	last    map[string]Summary
	applied atomic.Int64
	rounds  atomic.Int64 // recomputations done, for tests
}

var (
	_ harness.Component = (*Summarizer)(nil)
	_ harness.Readier   = (*Summarizer)(nil)
	_ harness.Renewer   = (*Summarizer)(nil)
)

// Name returns SummarizerName.
func (s *Summarizer) Name() string { return SummarizerName }

// AddFlags adds no flags.
func (s *Summarizer) AddFlags(*scoping.Scope) error { return nil }

// Ready returns nil at once: nothing waits for the summaries.
func (s *Summarizer) Ready(context.Context) error { return nil }

// Renew is harness.Renewer's: a new, unstarted Summarizer with the same
// settings.
func (s *Summarizer) Renew() harness.Component {
	return &Summarizer{Kubeconfig: s.Kubeconfig, Connect: s.Connect, FieldManager: s.FieldManager, UserAgent: s.UserAgent,
		Interval: s.Interval, ProfileGrace: s.ProfileGrace}
}

// Last returns the summaries of the last recomputation, by the gate's exact
// name; nil before the first.
func (s *Summarizer) Last() map[string]Summary {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.last)
}

// Applied is the number of Feature applies the summarizer made.
func (s *Summarizer) Applied() int64 { return s.applied.Load() }

func (s *Summarizer) fieldManager() string {
	if s.FieldManager != "" {
		return s.FieldManager
	}
	return "kubeharness/node-summary"
}

// Run watches and applies until ctx ends; it always returns nil. It logs
// through ctx's logger (klog.FromContext).
func (s *Summarizer) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg, err := clientConfig(s.Kubeconfig, s.UserAgent, "kubeharness-feature-summarizer", s.Connect)
	if err != nil {
		logger.Error(err, "No client; summarizing nothing", "kubeconfig", s.Kubeconfig)
		<-ctx.Done()
		return nil
	}
	cfg.QPS, cfg.Burst = 100, 200
	if !retry(ctx, "installing the CRDs", 0, func() error { return InstallCRDs(ctx, cfg) }) {
		return nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "No dynamic client; summarizing nothing")
		<-ctx.Done()
		return nil
	}
	return s.watch(ctx, dyn)
}

func (s *Summarizer) watch(ctx context.Context, dyn dynamic.Interface) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	defer factory.Shutdown()
	dirty := make(chan struct{}, 1)
	mark := func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { mark() },
		UpdateFunc: func(any, any) { mark() },
		DeleteFunc: func(any) { mark() },
	}
	var stores [3]cache.Store // features, reports, profiles
	for i, kind := range []struct {
		gvr       schema.GroupVersionResource
		transform cache.TransformFunc
	}{
		{featuresv1alpha1.Resource, typed[featuresv1alpha1.Feature]},
		{featuresv1alpha1.NodeFeatureReportResource, typed[featuresv1alpha1.NodeFeatureReport]},
		{featuresv1alpha1.FeatureProfileResource, typed[featuresv1alpha1.FeatureProfile]},
	} {
		inf := factory.ForResource(kind.gvr).Informer()
		if err := inf.SetTransform(kind.transform); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return err
		}
		stores[i] = inf.GetStore()
	}
	factory.Start(ctx.Done())
	for gvr, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			klog.FromContext(ctx).Info("Not synced; summarizing nothing", "resource", gvr.Resource, "err", ctx.Err())
			return nil
		}
	}
	interval := s.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-dirty:
		}
		if !sleep(ctx, interval) {
			return nil
		}
		select { // the changes of the interval are in this round
		case <-dirty:
		default:
		}
		err := s.round(ctx, dyn, stores[0].List(), reportsOf(stores[1].List()), stores[2].List())
		if err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Summarizing the features; trying again", "after", 5*time.Second)
			if !sleep(ctx, 5*time.Second) {
				return nil
			}
			mark()
		}
	}
}

// round recomputes every summary, applies those that changed and deletes
// the profiles no report names.
func (s *Summarizer) round(ctx context.Context, dyn dynamic.Interface, featureObjs []any, reports []featuresv1alpha1.NodeFeatureReport, profileObjs []any) error {
	features := make([]featuresv1alpha1.Feature, 0, len(featureObjs))
	var errs []error
	for _, o := range featureObjs {
		var f featuresv1alpha1.Feature
		if err := fromObject(o, &f); err != nil {
			errs = append(errs, err)
			continue
		}
		features = append(features, f)
	}
	profiles := make(map[string]*featuresv1alpha1.FeatureProfile, len(profileObjs))
	for _, o := range profileObjs {
		p := &featuresv1alpha1.FeatureProfile{}
		if err := fromObject(o, p); err != nil {
			errs = append(errs, err)
			continue
		}
		profiles[p.Name] = p
	}
	sums := Summarize(features, reports, profiles)
	s.mu.Lock()
	s.last = sums
	s.mu.Unlock()
	defer s.rounds.Add(1)

	var g errgroup.Group // no WithContext: one failed apply does not cancel the others
	g.SetLimit(8)
	var failed []error
	var mu sync.Mutex
	res := dyn.Resource(featuresv1alpha1.Resource)
	for i := range features {
		f := &features[i]
		want, ok := sums[f.Status.Name]
		if !ok || equalSummary(currentSummary(f), want) {
			continue
		}
		g.Go(func() error {
			if err := s.apply(ctx, res, f, want); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(failed) > 0 {
		errs = append(errs, fmt.Errorf("%d applies failed, first: %w", len(failed), failed[0]))
	}
	errs = append(errs, s.removeProfiles(ctx, dyn, reports, profiles))
	return errors.Join(errs...)
}

// currentSummary is the summary f holds.
func currentSummary(f *featuresv1alpha1.Feature) Summary {
	s := Summary{ClusterEnabled: f.Status.ClusterEnabled, NodesEnabled: f.Status.NodesEnabled, Disagreeing: f.Status.Disagreeing, Nodes: f.Status.Nodes,
		NodesDeclaring: f.Status.NodesDeclaring, DeclaredDisagreeing: f.Status.DeclaredDisagreeing, Declared: f.Status.Declared}
	if c := meta.FindStatusCondition(f.Status.Conditions, featuresv1alpha1.ConditionEnabled); c != nil {
		s.Condition = *c
		s.Condition.LastTransitionTime = metav1.Time{}
	}
	return s
}

func equalSummary(a, b Summary) bool { return equality.Semantic.DeepEqual(a, b) }

// summaryApply is the apply configuration of the fields the summarizer owns.
type summaryApply struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Status struct {
		ClusterEnabled string                                `json:"clusterEnabled,omitempty"`
		NodesEnabled   string                                `json:"nodesEnabled,omitempty"`
		Disagreeing    string                                `json:"disagreeing,omitempty"`
		Nodes          []featuresv1alpha1.NodeFeatureSummary `json:"nodes,omitempty"`
		Conditions     []metav1.Condition                    `json:"conditions"`

		NodesDeclaring      string                                    `json:"nodesDeclaring,omitempty"`
		DeclaredDisagreeing string                                    `json:"declaredDisagreeing,omitempty"`
		Declared            []featuresv1alpha1.DeclaredFeatureSummary `json:"declared,omitempty"`
	} `json:"status"`
}

// apply writes want into f with server-side apply, keeping the condition's
// transition time while its status stays.
func (s *Summarizer) apply(ctx context.Context, res dynamic.NamespaceableResourceInterface, f *featuresv1alpha1.Feature, want Summary) error {
	var a summaryApply
	a.APIVersion, a.Kind = featuresv1alpha1.SchemeGroupVersion.String(), "Feature"
	a.Metadata.Name = f.Name
	a.Status.ClusterEnabled, a.Status.NodesEnabled, a.Status.Disagreeing, a.Status.Nodes = want.ClusterEnabled, want.NodesEnabled, want.Disagreeing, want.Nodes
	a.Status.NodesDeclaring, a.Status.DeclaredDisagreeing, a.Status.Declared = want.NodesDeclaring, want.DeclaredDisagreeing, want.Declared
	c := want.Condition
	c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	if old := meta.FindStatusCondition(f.Status.Conditions, featuresv1alpha1.ConditionEnabled); old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	a.Status.Conditions = []metav1.Condition{c}
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	force := true
	if _, err := res.Patch(ctx, f.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: s.fieldManager(), Force: &force}); err != nil {
		return fmt.Errorf("apply Feature %s: %w", f.Name, err)
	}
	s.applied.Add(1)
	return nil
}

// removeProfiles deletes the profiles no report names that are older than
// ProfileGrace (a node creates its profile before its report).
func (s *Summarizer) removeProfiles(ctx context.Context, dyn dynamic.Interface, reports []featuresv1alpha1.NodeFeatureReport, profiles map[string]*featuresv1alpha1.FeatureProfile) error {
	grace := s.ProfileGrace
	if grace <= 0 {
		grace = 10 * time.Minute
	}
	named := map[string]bool{}
	for _, r := range reports {
		for _, c := range r.Spec.Components {
			named[c.Profile] = true
		}
	}
	res := dyn.Resource(featuresv1alpha1.FeatureProfileResource)
	var errs []error
	for name, p := range profiles {
		if named[name] || time.Since(p.CreationTimestamp.Time) < grace {
			continue
		}
		uid := p.UID
		err := res.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete FeatureProfile %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// typed is the summarizer's informers' transform: each object is kept as
// its typed T, without its managed fields (the summary needs neither the
// unstructured maps nor who wrote which field: several times less memory
// per object). An object that does not convert is kept as it came; the
// round leaves it out (its writer's problem, not every other node's).
func typed[T any, PT interface {
	*T
	metav1.Object
}](o any) (any, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return o, nil
	}
	t := PT(new(T))
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
		return o, nil
	}
	t.SetManagedFields(nil)
	return t, nil
}

// fromObject copies the typed object an informer's store holds (typed's)
// into into; any other object is an error naming it.
func fromObject[T any](o any, into *T) error {
	t, ok := o.(*T)
	if !ok {
		if u, isU := o.(*unstructured.Unstructured); isU {
			return fmt.Errorf("%s %s does not convert to %T", u.GetKind(), u.GetName(), into)
		}
		return fmt.Errorf("unexpected object %T in the informer's store", o)
	}
	*into = *t
	return nil
}

// reportsOf returns the reports among objs; one that did not convert is
// left out.
func reportsOf(objs []any) []featuresv1alpha1.NodeFeatureReport {
	out := make([]featuresv1alpha1.NodeFeatureReport, 0, len(objs))
	for _, o := range objs {
		if r, ok := o.(*featuresv1alpha1.NodeFeatureReport); ok {
			out = append(out, *r)
		}
	}
	return out
}
