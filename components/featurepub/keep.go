package featurepub

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

const (
	// recheck is how often the publisher compares its Features with the
	// informer's copies without an event (no request unless one differs).
	recheck = 10 * time.Minute
	// unseenTTL bounds how long a write the informer has not shown yet
	// keeps its Feature from being compared (publication.unseen).
	unseenTTL = time.Minute
)

// publication is what one Run publishes and the writes the informer has
// not shown yet.
type publication struct {
	server   string
	features []*featuresv1alpha1.Feature
	want     map[string]*featuresv1alpha1.Feature // by object name; read-only

	mu     sync.Mutex
	unseen map[string]write  // by object name
	seen   map[string]string // the last resourceVersion the informer showed, by object name
}

// write is an apply whose result the informer has not shown yet: the
// resourceVersion the apiserver returned, and when.
type write struct {
	rv string
	at time.Time
}

func newPublication(server string, features []*featuresv1alpha1.Feature) *publication {
	want := make(map[string]*featuresv1alpha1.Feature, len(features))
	for _, f := range features {
		want[f.Name] = f
	}
	return &publication{server: server, features: features, want: want, unseen: map[string]write{}, seen: map[string]string{}}
}

// keep publishes features and keeps them until ctx ends, reading the
// apiserver's Features through an informer: it applies a Feature only when
// the apiserver's copy differs in what this server writes (differs), so a
// restart with the same plan writes nothing. At the start it compares the
// top-level fields too and removes the stale Features; later it applies
// again a Feature that was deleted or whose entry of this server someone
// changed, but not one whose top-level fields another server rewrote (two
// servers with different values would rewrite each other forever). It
// always returns nil.
func (p *Publisher) keep(ctx context.Context, dyn dynamic.Interface, features []*featuresv1alpha1.Feature) error {
	logger := klog.FromContext(ctx)
	pub := newPublication(p.Server, features)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	defer factory.Shutdown()
	inf := factory.ForResource(featuresv1alpha1.Resource).Informer()
	if err := inf.SetTransform(publisherView); err != nil {
		logger.Error(err, "No informer; publishing nothing")
		<-ctx.Done()
		return nil
	}
	dirty := make(chan struct{}, 1)
	mark := func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { pub.observe(o, false, mark) },
		UpdateFunc: func(_, o any) { pub.observe(o, false, mark) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			pub.observe(o, true, mark)
		},
	})
	if err != nil {
		logger.Error(err, "No informer; publishing nothing")
		<-ctx.Done()
		return nil
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	store := inf.GetStore()
	start := true
	for {
		published := retry(ctx, "publishing the Feature objects", p.MaxBackoff, func() error {
			t0 := time.Now()
			applied, removed, err := p.round(ctx, dyn, store, pub, start)
			if err == nil && (start || applied > 0) {
				logger.Info("Published the Feature objects", "applied", applied, "unchanged", len(features)-applied,
					"fieldManager", p.fieldManager(), "staleRemoved", removed, "took", time.Since(t0).Round(time.Millisecond))
			}
			return err
		})
		if !published {
			return nil
		}
		if start {
			p.mu.Lock()
			p.done = true
			p.mu.Unlock()
			start = false
		}
		t := time.NewTimer(recheck)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-dirty:
		case <-t.C:
		}
		t.Stop()
	}
}

// observe is the informer's handlers': o, a Feature the informer shows
// (deleted: its last state), is the result of the write in unseen, if
// any; mark is called when o is a Feature this server publishes that was
// deleted or lacks this server's entry as it writes it.
func (pub *publication) observe(o any, deleted bool, mark func()) {
	m, err := meta.Accessor(o)
	if err != nil {
		return
	}
	name := m.GetName()
	want := pub.want[name]
	if want == nil {
		return
	}
	rv := m.GetResourceVersion()
	pub.mu.Lock()
	pub.seen[name] = rv
	if w, ok := pub.unseen[name]; ok && w.rv == rv {
		delete(pub.unseen, name)
	}
	pub.mu.Unlock()
	if deleted || differs(o, want, pub.server, false) {
		mark()
	}
}

// round applies the Features whose copy in store differs from what this
// server writes (differs; the top-level fields only with start), except
// those whose last write the informer has not shown yet (for at most
// unseenTTL, in case it never shows it); with start it also removes the
// stale Features.
func (p *Publisher) round(ctx context.Context, dyn dynamic.Interface, store cache.Store, pub *publication, start bool) (applied, removed int, err error) {
	var todo []*featuresv1alpha1.Feature
	now := time.Now()
	pub.mu.Lock()
	for _, f := range pub.features {
		if w, ok := pub.unseen[f.Name]; ok {
			if now.Sub(w.at) < unseenTTL {
				continue // the informer's copy is older than the last write
			}
			delete(pub.unseen, f.Name)
		}
		cur, exists, err := store.GetByKey(f.Name)
		if err != nil {
			pub.mu.Unlock()
			return 0, 0, err
		}
		if !exists || differs(cur, f, pub.server, start) {
			todo = append(todo, f)
		}
	}
	pub.mu.Unlock()
	written, err := p.applyAll(ctx, dyn, todo)
	pub.mu.Lock()
	for name, rv := range written {
		if pub.seen[name] != rv { // else the informer showed it already
			pub.unseen[name] = write{rv: rv, at: now}
		}
	}
	pub.mu.Unlock()
	if err != nil || !start {
		return len(written), 0, err
	}
	removed, err = p.removeStale(ctx, dyn, store.List(), pub.want)
	return len(written), removed, err
}

// differs reports whether cur, the informer's copy of a Feature, differs
// from want in this server's entry of status.servers, or with top in the
// top-level fields every server writes. The cluster's summary (the
// summarizer's) and the other servers' entries are not compared; a copy
// that did not convert (not typed) differs.
func differs(cur any, want *featuresv1alpha1.Feature, server string, top bool) bool {
	f, ok := cur.(*featuresv1alpha1.Feature)
	if !ok {
		return true
	}
	if !equality.Semantic.DeepEqual(serverEntry(f, server), serverEntry(want, server)) {
		return true
	}
	return top && !equality.Semantic.DeepEqual(topLevel(f.Status), topLevel(want.Status))
}

// serverEntry is f's entry of server in status.servers, nil if none.
func serverEntry(f *featuresv1alpha1.Feature, server string) *featuresv1alpha1.ServerFeature {
	for i := range f.Status.Servers {
		if f.Status.Servers[i].Server == server {
			return &f.Status.Servers[i]
		}
	}
	return nil
}

// topLevel is s without the servers' entries and the cluster's summary.
func topLevel(s featuresv1alpha1.FeatureStatus) featuresv1alpha1.FeatureStatus {
	s.Servers = nil
	return withoutSummary(s)
}

// withoutSummary is s without the fields the summarizer writes.
func withoutSummary(s featuresv1alpha1.FeatureStatus) featuresv1alpha1.FeatureStatus {
	s.ClusterEnabled, s.NodesEnabled, s.Disagreeing, s.Nodes, s.Conditions = "", "", "", nil, nil
	return s
}

// publisherView is the publisher's informer's transform: each Feature
// typed, without its managed fields (typed) and the cluster's summary,
// which the publisher neither compares nor writes.
func publisherView(o any) (any, error) {
	t, err := typed[featuresv1alpha1.Feature](o)
	if f, ok := t.(*featuresv1alpha1.Feature); ok {
		f.Status = withoutSummary(f.Status)
	}
	return t, err
}
