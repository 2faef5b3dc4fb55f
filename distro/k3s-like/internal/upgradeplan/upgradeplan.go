package upgradeplan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/controlplane"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/featurecheck"
	"github.com/kubeharness/kubeharness/scoping"
)

// GateChange is one kube feature gate whose effective value differs between
// the two emulation versions.
type GateChange struct {
	Name string `json:"name"`
	// FromStage and ToStage are its stage at each version ("" where it does
	// not exist yet).
	FromStage string `json:"fromStage"`
	ToStage   string `json:"toStage"`
	From      bool   `json:"from"`
	To        bool   `json:"to"`
	// SetBy is who set it explicitly (component and flag), "" for a
	// default: an explicit setting keeps its value at the target.
	SetBy string `json:"setBy,omitempty"`
	// Refused is why the target version would refuse the explicit setting
	// (a gate locked to its default there, say): fix it before moving.
	Refused string `json:"refused,omitempty"`
}

// Gates returns the kube gates whose effective value at to differs from the
// running plan's, sorted by name. gate is the binary's kube gate (it is
// copied, never changed); plan is the running server's.
func Gates(gate featuregate.MutableVersionedFeatureGate, plan *scoping.Plan, to *version.Version) ([]GateChange, error) {
	from, err := emulationOf(plan)
	if err != nil {
		return nil, err
	}
	at, refused, err := gateAt(gate, plan.Overrides, to)
	if err != nil {
		return nil, err
	}
	return gateChanges(gate, at, refused, plan, from, to), nil
}

// emulationOf is the plan's emulation version.
func emulationOf(plan *scoping.Plan) (*version.Version, error) {
	from, err := version.Parse(plan.EmulationVersion)
	if err != nil {
		return nil, fmt.Errorf("the server's emulation version %q: %w", plan.EmulationVersion, err)
	}
	return from, nil
}

// gateChanges compares the plan (at from) with at, the gate at to with the
// plan's overrides applied (gateAt), whose refused overrides are refused.
func gateChanges(gate featuregate.MutableVersionedFeatureGate, at featuregate.FeatureGate, refused map[string]string, plan *scoping.Plan, from, to *version.Version) []GateChange {
	specs := gate.GetAllVersioned()
	current := map[string]scoping.FeatureState{}
	for _, f := range plan.Features {
		current[f.Name] = f
	}
	names := make([]string, 0, len(specs))
	for name := range specs {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var out []GateChange
	for _, name := range names {
		if name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		f, known := current[name]
		fromValue := known && f.Enabled
		toValue := at.Enabled(featuregate.Feature(name))
		if fromValue == toValue {
			continue
		}
		c := GateChange{
			Name: name, From: fromValue, To: toValue,
			FromStage: stageAt(specs[featuregate.Feature(name)], from),
			ToStage:   stageAt(specs[featuregate.Feature(name)], to),
		}
		if known && f.Source != scoping.SourceDefault {
			c.SetBy = requests(f.Requests)
		}
		c.Refused = refused[name]
		out = append(out, c)
	}
	// An explicit setting the target refuses changes nothing by itself, but
	// must be seen.
	for name, why := range refused {
		if !slices.ContainsFunc(out, func(c GateChange) bool { return c.Name == name }) {
			f := current[name]
			out = append(out, GateChange{Name: name, From: f.Enabled, To: f.Enabled, SetBy: requests(f.Requests), Refused: why,
				FromStage: stageAt(specs[featuregate.Feature(name)], from), ToStage: stageAt(specs[featuregate.Feature(name)], to)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// gateAt is a copy of gate at emulation version v with overrides applied
// one by one; an override v refuses is left out and its error returned by
// name.
func gateAt(gate featuregate.MutableVersionedFeatureGate, overrides map[string]bool, v *version.Version) (featuregate.MutableVersionedFeatureGate, map[string]string, error) {
	at := gate.DeepCopy()
	if err := at.SetEmulationVersion(v); err != nil {
		return nil, nil, fmt.Errorf("emulation version %s: %w", v, err)
	}
	refused := map[string]string{}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys) // AllAlpha and AllBeta first, as upstream applies them
	sort.SliceStable(keys, func(i, j int) bool { return isAll(keys[i]) && !isAll(keys[j]) })
	for _, k := range keys {
		if err := at.SetFromMap(map[string]bool{k: overrides[k]}); err != nil {
			refused[k] = err.Error()
		}
	}
	return at, refused, nil
}

func isAll(name string) bool { return name == "AllAlpha" || name == "AllBeta" }

// stageAt is the stage of the spec in force at v, "" before the first.
func stageAt(specs featuregate.VersionedSpecs, v *version.Version) string {
	stage := ""
	for _, s := range specs {
		if s.Version != nil && v.AtLeast(s.Version) {
			stage = scoping.StageName(featuregate.FeatureSpec{PreRelease: s.PreRelease})
		}
	}
	return stage
}

func requests(rs []scoping.Request) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, r.Component+" "+r.Flag)
	}
	return strings.Join(parts, "; ")
}

// APIs are the built-in group-versions ("apps/v1", "v1") and resources
// ("apps/v1/deployments") served, each sorted.
type APIs struct {
	GroupVersions []string `json:"groupVersions"`
	Resources     []string `json:"resources"`
}

// Served is what kube-apiserver of this binary serves of its built-in
// groups at emulation version v, with the gates gates (at v) and the
// --runtime-config runtimeConfig.
func Served(v *version.Version, gates featuregate.FeatureGate, runtimeConfig cliflag.ConfigurationMap) (APIs, error) {
	scheme := legacyscheme.Scheme
	cfg, err := resourceconfig.MergeAPIResourceConfigs(controlplane.DefaultAPIResourceConfigSource(), runtimeConfig, scheme)
	if err != nil {
		return APIs{}, fmt.Errorf("--runtime-config: %w", err)
	}
	eval, err := genericapiserver.NewResourceExpirationEvaluatorFromOptions(genericapiserver.ResourceExpirationEvaluatorOptions{
		CurrentVersion: version.MajorMinor(v.Major(), v.Minor()),
	})
	if err != nil {
		return APIs{}, err
	}
	groups := map[string]map[string]map[string]rest.Storage{} // group -> version -> resource
	for gvk := range scheme.AllKnownTypes() {
		gv := gvk.GroupVersion()
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		if _, builtIn := cfg.GroupVersionConfigs[gv]; !builtIn {
			continue
		}
		if !topLevel(scheme, gvk) {
			continue
		}
		internal := schema.GroupVersionKind{Group: gvk.Group, Version: runtime.APIVersionInternal, Kind: gvk.Kind}
		if !scheme.Recognizes(internal) {
			continue
		}
		resource := gvk.GroupVersion().WithResource(guess(gvk))
		if !cfg.ResourceEnabled(resource) {
			continue
		}
		if allOn(gates, featurecheck.GatesFor(gvk)) {
			if groups[gvk.Group] == nil {
				groups[gvk.Group] = map[string]map[string]rest.Storage{}
			}
			if groups[gvk.Group][gvk.Version] == nil {
				groups[gvk.Group][gvk.Version] = map[string]rest.Storage{}
			}
			groups[gvk.Group][gvk.Version][resource.Resource] = stub{scheme: scheme, gvk: internal}
		}
	}
	var out APIs
	for group, versions := range groups {
		if err := eval.RemoveUnavailableKinds(group, scheme, versions, cfg); err != nil {
			return APIs{}, fmt.Errorf("group %q: %w", group, err)
		}
		for ver, resources := range versions {
			gv := schema.GroupVersion{Group: group, Version: ver}.String()
			out.GroupVersions = append(out.GroupVersions, gv)
			for r := range resources {
				out.Resources = append(out.Resources, gv+"/"+r)
			}
		}
	}
	sort.Strings(out.GroupVersions)
	sort.Strings(out.Resources)
	return out, nil
}

// topLevel reports whether gvk is a top-level resource's kind: it has a
// list kind, or it is a create-only review (TokenReview,
// SubjectAccessReview, ...). Subresource kinds (Scale, Eviction,
// TokenRequest) and options are not; core's Binding is left out though
// discovery lists "bindings" (LiveAPIs leaves it out too).
func topLevel(scheme *runtime.Scheme, gvk schema.GroupVersionKind) bool {
	return scheme.Recognizes(gvk.GroupVersion().WithKind(gvk.Kind+"List")) || strings.HasSuffix(gvk.Kind, "Review")
}

// guess is the resource of a kind: its lower-case plural, as
// meta.UnsafeGuessKindToResource makes it.
func guess(gvk schema.GroupVersionKind) string {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

func allOn(gates featuregate.FeatureGate, names []string) bool {
	for _, n := range names {
		if !gates.Enabled(featuregate.Feature(n)) {
			return false
		}
	}
	return true
}

// stub is the storage the evaluator looks at: it asks only for an
// internal object of the kind (New) to convert to each version.
type stub struct {
	scheme *runtime.Scheme
	gvk    schema.GroupVersionKind
}

func (s stub) New() runtime.Object {
	obj, err := s.scheme.New(s.gvk)
	if err != nil {
		panic(fmt.Sprintf("upgradeplan: %s is recognized but cannot be made: %v", s.gvk, err))
	}
	return obj
}

func (stub) Destroy() {}

// Diff returns what b serves and a does not (added) and the reverse
// (removed), for group-versions and resources.
func Diff(a, b APIs) (added, removed APIs) {
	added.GroupVersions, removed.GroupVersions = diff(a.GroupVersions, b.GroupVersions)
	added.Resources, removed.Resources = diff(a.Resources, b.Resources)
	return added, removed
}

func diff(a, b []string) (added, removed []string) {
	for _, x := range b {
		if !slices.Contains(a, x) {
			added = append(added, x)
		}
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			removed = append(removed, x)
		}
	}
	return added, removed
}

// Build makes the report of moving the running server (its plan, and its
// kube-apiserver's arguments for --runtime-config) to the emulation version
// to, with this binary's kube gate gate (copied, never changed). objs are
// the manifests' objects to judge at to; live, when not nil, is the
// server's discovery (LiveAPIs), compared with the model at the plan's
// version.
func Build(gate featuregate.MutableVersionedFeatureGate, plan *scoping.Plan, apiserverArgs []string, to *version.Version, objs []featurecheck.Object, live *APIs) (*Report, error) {
	from, err := emulationOf(plan)
	if err != nil {
		return nil, err
	}
	rc := cliflag.ConfigurationMap{}
	for _, a := range apiserverArgs {
		if v, ok := strings.CutPrefix(a, "--runtime-config="); ok {
			if err := rc.Set(v); err != nil {
				return nil, fmt.Errorf("kube-apiserver %s: %w", a, err)
			}
		}
	}
	ev := apiservercompat.DefaultBuildEffectiveVersion()
	ev.SetEmulationVersion(to)
	ev.SetMinCompatibilityVersion(version.MajorMinor(to.Major(), to.Minor()).SubtractMinor(1))
	if errs := ev.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("--to-emulated-version=%d.%d: %w", to.Major(), to.Minor(), errors.Join(errs...))
	}
	r := &Report{BinaryVersion: plan.BinaryVersion, From: plan.EmulationVersion, To: fmt.Sprintf("%d.%d", to.Major(), to.Minor())}
	gFrom, _, err := gateAt(gate, plan.Overrides, from)
	if err != nil {
		return nil, err
	}
	gTo, refused, err := gateAt(gate, plan.Overrides, to)
	if err != nil {
		return nil, err
	}
	r.Gates = gateChanges(gate, gTo, refused, plan, from, to)
	before, err := Served(from, gFrom, rc)
	if err != nil {
		return nil, err
	}
	after, err := Served(to, gTo, rc)
	if err != nil {
		return nil, err
	}
	r.Added, r.Removed = Diff(before, after)
	if live != nil {
		plus, minus := Diff(before, *live)
		for _, x := range append(plus.GroupVersions, plus.Resources...) {
			r.ModelDiffers = append(r.ModelDiffers, "+"+x)
		}
		for _, x := range append(minus.GroupVersions, minus.Resources...) {
			r.ModelDiffers = append(r.ModelDiffers, "-"+x)
		}
	}
	builtIn := controlplane.DefaultAPIResourceConfigSource().GroupVersionConfigs
	for _, o := range objs {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("%s %s: apiVersion %q: %w", o.Kind, o.Name, o.APIVersion, err)
		}
		res := guess(gv.WithKind(o.Kind))
		_, known := builtIn[gv]
		r.Objects = append(r.Objects, Object{APIVersion: o.APIVersion, Kind: o.Kind, Name: o.Name, Known: known,
			Served: known && slices.Contains(after.Resources, gv.String()+"/"+res)})
	}
	return r, nil
}

// LiveAPIs is what the model covers of a server's discovery: the
// top-level resources (no subresources) of kube-apiserver's built-in
// group-versions, core's bindings left out (see topLevel).
func LiveAPIs(lists []*metav1.APIResourceList) APIs {
	builtIn := controlplane.DefaultAPIResourceConfigSource().GroupVersionConfigs
	var out APIs
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		if _, ok := builtIn[gv]; !ok {
			continue
		}
		out.GroupVersions = append(out.GroupVersions, l.GroupVersion)
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "bindings") {
				continue
			}
			out.Resources = append(out.Resources, l.GroupVersion+"/"+r.Name)
		}
	}
	sort.Strings(out.GroupVersions)
	sort.Strings(out.Resources)
	return out
}
