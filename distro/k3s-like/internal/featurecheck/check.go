// Package featurecheck tells, for each object of a set of Kubernetes
// manifests, whether the cluster serves its API group/version and kind, and
// if not, what would make it served: the feature gates the apiserver adds
// its storage under, and --runtime-config for the alpha and beta
// group-versions the apiserver does not serve by default.
//
// It covers the API-group/version/kind level only; see docs/features.md
// (`k3s-like features check`) for what it does not cover.
package featurecheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/kubernetes/pkg/controlplane"
)

// Object is one manifest document's identity, and its Pod spec if it is
// a Pod or a workload with a Pod template.
type Object struct {
	APIVersion, Kind, Name string
	PodSpec                *corev1.PodSpec
}

// Read returns the objects of a multi-document YAML (or JSON) stream;
// empty documents are skipped, a List's items are expanded.
func Read(r io.Reader) ([]Object, error) {
	dec := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var out []Object
	for i := 1; ; i++ {
		doc, err := dec.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096).Decode(&u.Object); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
			for _, item := range list.Items {
				spec, err := podSpecOf(&item)
				if err != nil {
					return nil, fmt.Errorf("document %d: %w", i, err)
				}
				out = append(out, Object{APIVersion: item.GetAPIVersion(), Kind: item.GetKind(), Name: item.GetName(), PodSpec: spec})
			}
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: no apiVersion or kind", i)
		}
		spec, err := podSpecOf(u)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		out = append(out, Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Name: u.GetName(), PodSpec: spec})
	}
}

// Gate is a feature gate's state in the cluster, from its Feature object.
type Gate struct {
	Stage   string
	Enabled bool
	// Cluster is the Feature's clusterEnabled: true, false, partial (in
	// some servers or on some nodes only), or "" (not summarized).
	Cluster string
	// Nodes is its nodesEnabled ("4987/5000"); Disagreeing its sample of
	// the nodes that run the minority value.
	Nodes, Disagreeing string
}

// partial says where g is on, if it is on only in some places; "" if not.
func (g Gate) partial() string {
	if g.Cluster != "partial" {
		return ""
	}
	s := "partial"
	if g.Nodes != "" {
		s += ": enabled on " + g.Nodes + " nodes"
	}
	if g.Disagreeing != "" {
		s += ", disagreeing: " + g.Disagreeing
	}
	return s
}

// Result is the verdict on one object.
type Result struct {
	Object
	Served bool
	// Reason says why it is not served and what would serve it; empty if
	// served.
	Reason string
	// Partial, for an object served, names the gates it needs that are
	// enabled only in some servers or on some nodes, and which; empty if
	// none.
	Partial string
	// Declared, for a Pod (or a Pod template) that needs KEP-5328
	// declared features only some nodes declare, says which and the
	// nodes that can run it; empty if every node declares them.
	Declared string
	// NoNode: no node declares them, no node can run it.
	NoNode bool
}

// OK reports whether the object is served and nothing it needs is
// enabled or declared in some places only: String's "ok".
func (r Result) OK() bool { return r.Served && r.Partial == "" && r.Declared == "" }

func (r Result) String() string {
	id := r.APIVersion + " " + r.Kind
	if r.Name != "" {
		id += " " + r.Name
	}
	buts := slices.DeleteFunc([]string{r.Partial, r.Declared}, func(s string) bool { return s == "" })
	switch {
	case r.Served && r.NoNode:
		return "MISSING  " + id + ": served, but " + strings.Join(buts, "; ")
	case r.Served && len(buts) > 0:
		return "PARTIAL  " + id + ": served, but " + strings.Join(buts, "; ")
	case r.Served:
		return "ok       " + id
	}
	if r.Declared != "" {
		return "MISSING  " + id + ": " + r.Reason + "; " + r.Declared
	}
	return "MISSING  " + id + ": " + r.Reason
}

// partialGates names the gates of gvk that are partial in gates.
func partialGates(gvk schema.GroupVersionKind, gates map[string]Gate) string {
	var out []string
	for _, g := range GatesFor(gvk) {
		if p := gates[g].partial(); p != "" {
			out = append(out, "feature gate "+g+" is "+p)
		}
	}
	return strings.Join(out, "; ")
}

// Check checks each object against the cluster's discovery; gates are the
// cluster's Feature objects by exact gate name (may be nil: the gates'
// states are then not reported); nodes, the nodes' declared features
// (KEP-5328) that each Pod and Pod template is checked against (may be
// nil: not checked).
func Check(disc discovery.DiscoveryInterface, gates map[string]Gate, nodes *Nodes, objs []Object) ([]Result, error) {
	out, err := checkServed(disc, gates, objs)
	if err != nil || nodes == nil {
		return out, err
	}
	for i, o := range objs {
		if o.PodSpec == nil {
			continue
		}
		needs, err := DeclaredNeeds(o.PodSpec, nodes.Version)
		if err != nil {
			return nil, fmt.Errorf("%s %s: declared features: %w", o.Kind, o.Name, err)
		}
		if len(needs) > 0 {
			out[i].Declared, out[i].NoNode = nodes.declaredVerdict(needs)
		}
	}
	return out, nil
}

// checkServed checks each object against the cluster's discovery.
func checkServed(disc discovery.DiscoveryInterface, gates map[string]Gate, objs []Object) ([]Result, error) {
	served := map[string]map[string]bool{} // group/version -> kinds; nil: not served
	out := make([]Result, 0, len(objs))
	for _, o := range objs {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			out = append(out, Result{Object: o, Reason: fmt.Sprintf("apiVersion %q: %v", o.APIVersion, err)})
			continue
		}
		kinds, ok := served[gv.String()]
		if !ok {
			list, err := disc.ServerResourcesForGroupVersion(gv.String())
			switch {
			case apierrors.IsNotFound(err):
				kinds = nil
			case err != nil:
				return nil, fmt.Errorf("discovery of %s: %w", gv, err)
			default:
				kinds = map[string]bool{}
				for _, r := range list.APIResources {
					if !strings.Contains(r.Name, "/") {
						kinds[r.Kind] = true
					}
				}
			}
			served[gv.String()] = kinds
		}
		if kinds[o.Kind] {
			out = append(out, Result{Object: o, Served: true, Partial: partialGates(gv.WithKind(o.Kind), gates)})
			continue
		}
		out = append(out, Result{Object: o, Reason: explain(gv, o.Kind, kinds != nil, gates)})
	}
	return out, nil
}

// explain says what would serve gv's kind.
func explain(gv schema.GroupVersion, kind string, gvServed bool, gates map[string]Gate) string {
	var needs []string
	if !gvServed && RuntimeConfigOnly(gv) {
		needs = append(needs, fmt.Sprintf("--kube-apiserver-arg=runtime-config=%s=true (not served by default)", gv))
	}
	for _, g := range GatesFor(gv.WithKind(kind)) {
		s := "feature gate " + g
		if st, ok := gates[g]; ok {
			state := "disabled"
			if st.Enabled {
				state = "enabled"
			}
			if p := st.partial(); p != "" {
				state = p
			}
			s += fmt.Sprintf(" (%s, %s)", st.Stage, state)
		}
		needs = append(needs, s)
	}
	what := fmt.Sprintf("%s is not served", gv)
	if gvServed {
		what = fmt.Sprintf("%s is served but has no kind %s", gv, kind)
	}
	if len(needs) == 0 {
		return what + "; no known gate or runtime-config serves it (a CRD or an aggregated API may)"
	}
	return what + "; needs " + strings.Join(needs, " and ")
}

// GatesFor returns the feature gates kube-apiserver needs on to serve gvk,
// or nil: the table of the minor this binary is built from (gated_k8s*.go).
func GatesFor(gvk schema.GroupVersionKind) []string { return gatedKinds()[gvk] }

// RuntimeConfigOnly reports whether gv is a built-in alpha or beta
// group-version kube-apiserver serves only with --runtime-config: upstream's
// own list, the group-versions its DefaultAPIResourceConfigSource disables
// (k8s.io/kubernetes pkg/controlplane/instance.go, of the minor built).
func RuntimeConfigOnly(gv schema.GroupVersion) bool {
	enabled, listed := controlplane.DefaultAPIResourceConfigSource().GroupVersionConfigs[gv]
	return listed && !enabled
}

// KnownGates are every gate the built-in table names, sorted.
func KnownGates() []string {
	set := map[string]bool{}
	for _, gs := range gatedKinds() {
		for _, g := range gs {
			set[g] = true
		}
	}
	out := make([]string, 0, len(set))
	for g := range set {
		out = append(out, g)
	}
	sort.Strings(out)
	return out
}
