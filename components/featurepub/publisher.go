package featurepub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the publisher's component name in the harness.
const Name = "feature-publisher"

// kubeComponents register every gate of k8s.io/kubernetes/pkg/features (the
// process-wide kube gate the plan describes); any other component (etcd)
// registers none.
var kubeComponents = map[string]bool{
	names.APIServer:         true,
	names.Scheduler:         true,
	names.ControllerManager: true,
	names.Kubelet:           true,
	names.KubeProxy:         true,
}

// Publisher is the harness component. Set Server, Kubeconfig and Plan; the
// other fields have defaults.
type Publisher struct {
	// Server is this server's identity: its entry in status.servers and,
	// by default, its field manager, kubeharness/<Server>.
	Server string
	// FieldManager is the server-side apply field manager; "" means
	// "kubeharness/" + Server. Each server needs its own, so that it owns
	// only its own entry of status.servers.
	FieldManager string
	// UserAgent is the client's user agent; "" means
	// "kubeharness-feature-publisher".
	UserAgent string
	// Kubeconfig is the admin kubeconfig the server writes after the
	// barrier (it exists before any component runs).
	Kubeconfig string
	// Connect, if set, may change how the client configuration read from
	// Kubeconfig connects (components.APIServer.InProcess); its error is
	// retried as the apiserver's are.
	Connect func(*rest.Config) error
	// Plan returns the server's feature plan (harness.Status().Plan).
	Plan func() *scoping.Plan
	// Concurrency is the number of applies in flight; 0 means 8.
	Concurrency int
	// MaxBackoff bounds the retry delay; 0 means 30 s.
	MaxBackoff time.Duration

	mu   sync.Mutex
	done bool
}

var (
	_ harness.Component = (*Publisher)(nil)
	_ harness.Readier   = (*Publisher)(nil)
	_ harness.Renewer   = (*Publisher)(nil)
)

// Renew is harness.Renewer's: a new, unstarted Publisher with the same
// settings, so that the harness can restart the components it depends on
// (a scheduler demoted after a lost lease) and it with them.
func (p *Publisher) Renew() harness.Component {
	return &Publisher{Server: p.Server, FieldManager: p.FieldManager, UserAgent: p.UserAgent, Kubeconfig: p.Kubeconfig,
		Connect: p.Connect, Plan: p.Plan, Concurrency: p.Concurrency, MaxBackoff: p.MaxBackoff}
}

// Name returns Name, "feature-publisher".
func (p *Publisher) Name() string { return Name }

// AddFlags adds no flags: the publisher is configured by its fields.
func (p *Publisher) AddFlags(*scoping.Scope) error { return nil }

// Ready returns nil at once: nothing waits for the publication.
func (p *Publisher) Ready(context.Context) error { return nil }

func (p *Publisher) fieldManager() string {
	if p.FieldManager != "" {
		return p.FieldManager
	}
	return "kubeharness/" + p.Server
}

func (p *Publisher) userAgent() string {
	if p.UserAgent != "" {
		return p.UserAgent
	}
	return "kubeharness-feature-publisher"
}

// Published reports whether the publisher finished one full publication.
func (p *Publisher) Published() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

// Run publishes, retrying until it succeeds or ctx ends, then keeps the
// publication until ctx ends (keep). It always returns nil: feature
// discovery is never a reason to stop the control plane. It logs through
// ctx's logger (klog.FromContext).
func (p *Publisher) Run(ctx context.Context) error {
	var (
		dyn      dynamic.Interface
		features []*featuresv1alpha1.Feature
	)
	connected := retry(ctx, "installing the feature CRDs", p.MaxBackoff, func() error {
		var err error
		dyn, features, err = p.connect(ctx)
		return err
	})
	if !connected {
		return nil
	}
	return p.keep(ctx, dyn, features)
}

// connect reads the plan, installs the CRDs, and returns a client and the
// Features this server publishes.
func (p *Publisher) connect(ctx context.Context) (dynamic.Interface, []*featuresv1alpha1.Feature, error) {
	plan := p.Plan()
	if plan == nil {
		return nil, nil, errors.New("no feature plan yet")
	}
	cfg, err := clientConfig(p.Kubeconfig, p.userAgent(), "", p.Connect)
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	if err := InstallCRDs(ctx, cfg); err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return dyn, Features(plan, p.Server), nil
}

// clientConfig is kubeconfig's client configuration (a new one each call),
// its user agent userAgent, or fallback if that is "".
func clientConfig(kubeconfig, userAgent, fallback string, connect func(*rest.Config) error) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = cmp.Or(userAgent, fallback)
	if connect != nil {
		if err := connect(cfg); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: connecting: %w", kubeconfig, err)
		}
	}
	return cfg, nil
}

// InstallCRDs creates or updates the CRDs of features.kubeharness.io
// (Feature, NodeFeatureReport, FeatureProfile) and waits until each is
// Established. A client that may only get and update them (ServerRules)
// gets a *CRDNotInstalledError for one that is missing.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	c, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	for _, doc := range featuresv1alpha1.CRDs() {
		if err := installCRD(ctx, crds, doc); err != nil {
			return err
		}
	}
	return nil
}

func installCRD(ctx context.Context, crds apiextensionsv1client.CustomResourceDefinitionInterface, doc []byte) error {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(doc, crd); err != nil {
		return fmt.Errorf("embedded CRD: %w", err)
	}
	existing, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); apierrors.IsForbidden(err) {
			return &CRDNotInstalledError{Name: crd.Name, Err: err}
		} else if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	case err != nil:
		return fmt.Errorf("get CRD %s: %w", crd.Name, err)
	default:
		existing.Spec = crd.Spec
		existing.Labels, existing.Annotations = crd.Labels, crd.Annotations
		if _, err := crds.Update(ctx, existing, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update CRD %s: %w", crd.Name, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s not Established: %w", crd.Name, err)
	}
	return nil
}

// CRDNotInstalledError is a CRD of features.kubeharness.io that is not
// there and that the client may not create: whoever installs the CRDs
// (InstallCRDs with a client that may create them) has not yet.
type CRDNotInstalledError struct {
	Name string
	Err  error
}

func (e *CRDNotInstalledError) Error() string {
	return fmt.Sprintf("the CRD %s is not installed and this client may not create it (install it with InstallCRDs as a user that may): %v", e.Name, e.Err)
}

func (e *CRDNotInstalledError) Unwrap() error { return e.Err }

// ObjectName is the Feature object name of a gate: its name lowercased.
func ObjectName(feature string) string { return strings.ToLower(feature) }

// Features are the Feature objects this server applies: the top-level
// fields and its own entry in status.servers.
func Features(plan *scoping.Plan, server string) []*featuresv1alpha1.Feature {
	states := plan.FeatureStates()
	out := make([]*featuresv1alpha1.Feature, 0, len(states))
	for _, fs := range states {
		byComponent := map[string]scoping.Request{}
		for _, r := range fs.Requests {
			byComponent[r.Component] = r
		}
		var comps []featuresv1alpha1.ComponentFeature
		for _, c := range plan.Components {
			r := byComponent[c]
			comps = append(comps, featuresv1alpha1.ComponentFeature{Name: c, Registers: kubeComponents[c], Value: r.Value, Flag: r.Flag})
		}
		f := &featuresv1alpha1.Feature{
			TypeMeta:   metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "Feature"},
			ObjectMeta: metav1.ObjectMeta{Name: ObjectName(fs.Name)},
			Status: featuresv1alpha1.FeatureStatus{
				Name:             fs.Name,
				Stage:            fs.Stage,
				Default:          fs.Default,
				Enabled:          fs.Enabled,
				LockedToDefault:  fs.LockedToDefault,
				EmulationVersion: plan.EmulationVersion,
				BinaryVersion:    plan.BinaryVersion,
				SetBy:            fs.SetBy(),
				Servers: []featuresv1alpha1.ServerFeature{{
					Server:           server,
					Enabled:          fs.Enabled,
					Stage:            fs.Stage,
					EmulationVersion: plan.EmulationVersion,
					Components:       comps,
				}},
			},
		}
		out = append(out, f)
	}
	return out
}

// applyAll applies every Feature, Concurrency at a time, and returns the
// resourceVersion each applied one has now, by name; on failure, also how
// many failed and the first error. It stops starting applies when ctx ends.
func (p *Publisher) applyAll(ctx context.Context, dyn dynamic.Interface, features []*featuresv1alpha1.Feature) (map[string]string, error) {
	n := p.Concurrency
	if n <= 0 {
		n = 8
	}
	res := dyn.Resource(featuresv1alpha1.Resource)
	force := true
	var (
		g       errgroup.Group // no WithContext: one failed apply does not cancel the others
		failed  atomic.Int32
		mu      sync.Mutex
		applied = map[string]string{}
	)
	g.SetLimit(n)
	for _, f := range features {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			body, err := json.Marshal(f)
			var got *unstructured.Unstructured
			if err == nil {
				got, err = res.Patch(ctx, f.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: p.fieldManager(), Force: &force})
			}
			if err != nil {
				failed.Add(1)
				return fmt.Errorf("apply Feature %s: %w", f.Name, err)
			}
			rv := ""
			if got != nil {
				rv = got.GetResourceVersion()
			}
			mu.Lock()
			applied[f.Name] = rv
			mu.Unlock()
			return nil
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		return applied, ctx.Err()
	}
	if err != nil {
		return applied, fmt.Errorf("%d of %d applies failed, first: %w", failed.Load(), len(features), err)
	}
	return applied, nil
}

// removeStale deletes the Features among objs (the informer's) of gates
// this server does not know (not in want) and no other server reports; a
// gate only this server reported before loses the object, one another
// server still reports keeps it.
func (p *Publisher) removeStale(ctx context.Context, dyn dynamic.Interface, objs []any, want map[string]*featuresv1alpha1.Feature) (int, error) {
	res := dyn.Resource(featuresv1alpha1.Resource)
	removed := 0
	for _, o := range objs {
		item, err := meta.Accessor(o)
		if err != nil || want[item.GetName()] != nil || reportedByOther(o, p.Server) {
			continue
		}
		uid := item.GetUID()
		err = res.Delete(ctx, item.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return removed, fmt.Errorf("delete stale Feature %s: %w", item.GetName(), err)
		}
		removed++
	}
	return removed, nil
}

// reportedByOther reports whether the Feature o (typed, or unstructured
// when it did not convert) holds an entry of a server other than self.
func reportedByOther(o any, self string) bool {
	switch f := o.(type) {
	case *featuresv1alpha1.Feature:
		for _, s := range f.Status.Servers {
			if s.Server != "" && s.Server != self {
				return true
			}
		}
	case *unstructured.Unstructured:
		servers, _, _ := unstructured.NestedSlice(f.Object, "status", "servers")
		for _, s := range servers {
			m, ok := s.(map[string]any)
			if !ok {
				continue
			}
			if name, _ := m["server"].(string); name != "" && name != self {
				return true
			}
		}
	}
	return false
}
