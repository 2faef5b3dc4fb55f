package featurepub

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// ReporterName is the reporter's component name in the harness.
const ReporterName = "feature-reporter"

// nodeComponents are the component kinds a node reports, in plan order.
var nodeComponents = []string{names.Kubelet, names.KubeProxy}

// NodeReport is what one node sends: its NodeFeatureReport and the
// FeatureProfiles the report names.
type NodeReport struct {
	Report   *featuresv1alpha1.NodeFeatureReport
	Profiles []*featuresv1alpha1.FeatureProfile
}

// BuildNodeReport is node's report of plan: one entry per node component
// kind (kubelet, kube-proxy) the plan runs, all sharing one profile, since
// the components of one process run the process's gate. It is an error if
// the plan runs neither.
func BuildNodeReport(plan *scoping.Plan, node string) (NodeReport, error) {
	values := make(map[string]bool, len(plan.Features))
	setBy := map[string]string{}
	for _, f := range plan.FeatureStates() {
		values[f.Name] = f.Enabled
		if f.Source != scoping.SourceDefault || len(f.Requests) > 0 {
			setBy[f.Name] = f.SetBy()
		}
	}
	if len(setBy) == 0 {
		setBy = nil
	}
	profile := Profile(values)
	report := &featuresv1alpha1.NodeFeatureReport{
		TypeMeta:   metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "NodeFeatureReport"},
		ObjectMeta: metav1.ObjectMeta{Name: node},
	}
	for _, c := range nodeComponents {
		if !slices.Contains(plan.Components, c) {
			continue
		}
		report.Spec.Components = append(report.Spec.Components, featuresv1alpha1.NodeComponentReport{
			Name: c, BinaryVersion: plan.BinaryVersion, EmulationVersion: plan.EmulationVersion, Profile: profile.Name, SetBy: setBy})
	}
	if len(report.Spec.Components) == 0 {
		return NodeReport{}, fmt.Errorf("node %s: the plan runs none of %v", node, nodeComponents)
	}
	return NodeReport{Report: report, Profiles: []*featuresv1alpha1.FeatureProfile{profile}}, nil
}

// Profile is the FeatureProfile of the gates' values, named by ProfileName.
func Profile(values map[string]bool) *featuresv1alpha1.FeatureProfile {
	p := &featuresv1alpha1.FeatureProfile{
		TypeMeta: metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "FeatureProfile"},
	}
	for _, n := range slices.Sorted(maps.Keys(values)) {
		if values[n] {
			p.Spec.Enabled = append(p.Spec.Enabled, n)
		} else {
			p.Spec.Disabled = append(p.Spec.Disabled, n)
		}
	}
	p.Spec.EnabledCount = int32(len(p.Spec.Enabled))
	p.Name = ProfileName(p.Spec)
	return p
}

// ProfileName is "gates-" and the first 20 hex digits of the SHA-256 of
// the sorted enabled and disabled names: the same values, the same name.
func ProfileName(spec featuresv1alpha1.FeatureProfileSpec) string {
	h := sha256.New()
	for _, n := range spec.Enabled {
		fmt.Fprintf(h, "+%s\n", n)
	}
	for _, n := range spec.Disabled {
		fmt.Fprintf(h, "-%s\n", n)
	}
	return "gates-" + hex.EncodeToString(h.Sum(nil))[:20]
}

// Send writes what the cluster does not have yet: each profile it cannot
// read (created; AlreadyExists is success), then the report, created, or
// updated if its components or its owner differ. It reads through the
// apiserver's watch cache (resourceVersion 0), so an unchanged report costs
// reads only. owner is the node's Node, the report's owner. It returns the
// number of writes it made.
func (r NodeReport) Send(ctx context.Context, dyn dynamic.Interface, owner metav1.OwnerReference) (int, error) {
	writes := 0
	profiles := dyn.Resource(featuresv1alpha1.FeatureProfileResource)
	cached := metav1.GetOptions{ResourceVersion: "0"}
	for _, p := range r.Profiles {
		_, err := profiles.Get(ctx, p.Name, cached)
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return writes, fmt.Errorf("get FeatureProfile %s: %w", p.Name, err)
		}
		u, err := toUnstructured(p)
		if err != nil {
			return writes, err
		}
		if _, err := profiles.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return writes, fmt.Errorf("create FeatureProfile %s: %w", p.Name, err)
		}
		writes++
	}
	want := r.Report.DeepCopy()
	want.OwnerReferences = []metav1.OwnerReference{owner}
	reports := dyn.Resource(featuresv1alpha1.NodeFeatureReportResource)
	got, err := reports.Get(ctx, want.Name, cached)
	if apierrors.IsNotFound(err) {
		u, err := toUnstructured(want)
		if err != nil {
			return writes, err
		}
		if _, err := reports.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return writes, fmt.Errorf("create NodeFeatureReport %s: %w", want.Name, err)
		}
		return writes + 1, nil
	}
	if err != nil {
		return writes, fmt.Errorf("get NodeFeatureReport %s: %w", want.Name, err)
	}
	var have featuresv1alpha1.NodeFeatureReport
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &have); err != nil {
		return writes, fmt.Errorf("NodeFeatureReport %s: %w", want.Name, err)
	}
	if equality.Semantic.DeepEqual(have.Spec, want.Spec) && equality.Semantic.DeepEqual(have.OwnerReferences, want.OwnerReferences) {
		return writes, nil
	}
	want.ResourceVersion = have.ResourceVersion
	u, err := toUnstructured(want)
	if err != nil {
		return writes, err
	}
	// A conflict (the cached read was stale) fails this Send; the caller
	// retries, reading again.
	if _, err := reports.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return writes, fmt.Errorf("update NodeFeatureReport %s: %w", want.Name, err)
	}
	return writes + 1, nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// NodeOwner is the owner reference of a report to its Node.
func NodeOwner(name string, uid types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: name, UID: uid}
}

// Reporter is the node's harness component: once its dependencies are
// ready (add it after the kubelet, whose Node it waits for), it sends the
// node's report (BuildNodeReport, Send) with the node's own credentials,
// retrying with backoff until it succeeds, then reads it again every
// Resync (jittered) and writes only what was lost or changed. It never
// fails the harness.
type Reporter struct {
	// Node is the node's name.
	Node string
	// Kubeconfig is the node's kubeconfig (the kubelet's).
	Kubeconfig string
	// Plan returns the node's feature plan (harness.Status().Plan).
	Plan func() *scoping.Plan
	// UserAgent is the client's; "" means "kubeharness-feature-reporter".
	UserAgent string
	// Resync is how often the report is read again; 0 means 10 minutes.
	Resync time.Duration
	// MaxBackoff bounds the retry delay; 0 means 30 s.
	MaxBackoff time.Duration

	mu   sync.Mutex
	sent bool
}

var (
	_ harness.Component = (*Reporter)(nil)
	_ harness.Readier   = (*Reporter)(nil)
)

// Name returns ReporterName.
func (r *Reporter) Name() string { return ReporterName }

// AddFlags adds no flags.
func (r *Reporter) AddFlags(*scoping.Scope) error { return nil }

// Ready returns nil at once: nothing waits for the report.
func (r *Reporter) Ready(context.Context) error { return nil }

// Sent reports whether the report was sent once.
func (r *Reporter) Sent() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

// Run sends the report until ctx ends; it always returns nil. It logs
// through ctx's logger (klog.FromContext).
func (r *Reporter) Run(ctx context.Context) error {
	resync := r.Resync
	if resync <= 0 {
		resync = 10 * time.Minute
	}
	for {
		sent := retry(ctx, "reporting the node's features", r.MaxBackoff, func() error {
			writes, err := r.sendOnce(ctx)
			if err == nil && (writes > 0 || !r.Sent()) {
				klog.FromContext(ctx).Info("Reported the node's features", "node", r.Node, "writes", writes)
			}
			return err
		})
		if !sent {
			return nil
		}
		r.mu.Lock()
		r.sent = true
		r.mu.Unlock()
		if !sleep(ctx, resync/2+rand.N(resync)) {
			return nil
		}
	}
}

func (r *Reporter) sendOnce(ctx context.Context) (int, error) {
	plan := r.Plan()
	if plan == nil {
		return 0, errors.New("no feature plan yet")
	}
	report, err := BuildNodeReport(plan, r.Node)
	if err != nil {
		return 0, err
	}
	cfg, err := clientConfig(r.Kubeconfig, r.UserAgent, "kubeharness-feature-reporter", nil)
	if err != nil {
		return 0, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, r.Node, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("get Node %s: %w", r.Node, err)
	}
	// The features the kubelet declares (KEP-5328), as its Node says:
	// none where it runs NodeDeclaredFeatures off.
	report.Report.Spec.DeclaredFeatures = sortedDeclared(n.Status.DeclaredFeatures)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	return report.Send(ctx, dyn, NodeOwner(n.Name, n.UID))
}
