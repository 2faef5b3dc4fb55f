package featurepub

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/names"
)

// The values of FeatureStatus.ClusterEnabled and NodeFeatureGroup.Enabled.
const (
	valueTrue    = "true"
	valueFalse   = "false"
	valuePartial = "partial"
	valueUnknown = "unknown"
)

// The reasons of the Enabled condition.
const (
	ReasonEnabledEverywhere = "EnabledEverywhere"
	ReasonPartlyEnabled     = "PartlyEnabled"
	ReasonDisabled          = "Disabled"
)

// Summary is the cluster's view of one feature: the FeatureStatus fields
// the summarizer owns.
type Summary struct {
	// ClusterEnabled is true, false or partial.
	ClusterEnabled string `json:"clusterEnabled,omitempty"`
	// NodesEnabled is "enabled/reporting" of the nodes' kubelets; "" when
	// no node reports.
	NodesEnabled string `json:"nodesEnabled,omitempty"`
	// Disagreeing is the kubelets' disagreeing sample, printable.
	Disagreeing string `json:"disagreeing,omitempty"`
	// Nodes has one entry per component kind on nodes, by name.
	Nodes []featuresv1alpha1.NodeFeatureSummary `json:"nodes,omitempty"`
	// Condition is the Enabled condition without its transition time.
	Condition metav1.Condition `json:"condition"`
	// NodesDeclaring is "declaring/reporting" of the nodes' kubelets for
	// the KEP-5328 declared features the gate guards; "" when it guards
	// none or no kubelet reports.
	NodesDeclaring string `json:"nodesDeclaring,omitempty"`
	// DeclaredDisagreeing is their disagreeing sample, printable.
	DeclaredDisagreeing string `json:"declaredDisagreeing,omitempty"`
	// Declared has one entry per declared feature the gate guards.
	Declared []featuresv1alpha1.DeclaredFeatureSummary `json:"declared,omitempty"`
}

// class is the nodes that report one component alike: same versions, same
// profile, same SET-BY of every gate.
type class struct {
	component, binaryVersion, emulationVersion string
	profile                                    *profileSet
	setBy                                      map[string]string
	names                                      []string // sorted
	// declared are the kubelets' declared features (KEP-5328);
	// publishing is false where the kubelet runs NodeDeclaredFeatures off.
	declared   map[string]bool
	publishing bool
}

// profileSet is a FeatureProfile as sets.
type profileSet struct {
	enabled, disabled map[string]bool
}

func newProfileSet(p *featuresv1alpha1.FeatureProfile) *profileSet {
	s := &profileSet{enabled: make(map[string]bool, len(p.Spec.Enabled)), disabled: make(map[string]bool, len(p.Spec.Disabled))}
	for _, n := range p.Spec.Enabled {
		s.enabled[n] = true
	}
	for _, n := range p.Spec.Disabled {
		s.disabled[n] = true
	}
	return s
}

func (s *profileSet) value(feature string) string {
	switch {
	case s.enabled[feature]:
		return valueTrue
	case s.disabled[feature]:
		return valueFalse
	}
	return valueUnknown
}

// classes groups the reports whose profiles are known; a report that names
// a profile not (yet) seen, or one whose name is not the hash of its
// content (ProfileName: a node wrote values under another's name), is left
// out.
func classes(reports []featuresv1alpha1.NodeFeatureReport, profiles map[string]*featuresv1alpha1.FeatureProfile) []*class {
	sets := map[string]*profileSet{}
	valid := map[string]bool{}
	for name, p := range profiles {
		valid[name] = ProfileName(p.Spec) == name
	}
	byKey := map[string]*class{}
	for i := range reports {
		r := &reports[i]
		for _, c := range r.Spec.Components {
			p, ok := profiles[c.Profile]
			if !ok || !valid[c.Profile] {
				continue
			}
			set := sets[c.Profile]
			if set == nil {
				set = newProfileSet(p)
				sets[c.Profile] = set
			}
			key := classKey(c)
			if c.Name == names.Kubelet {
				key += declaredKey(r)
			}
			cl := byKey[key]
			if cl == nil {
				cl = &class{component: c.Name, binaryVersion: c.BinaryVersion, emulationVersion: c.EmulationVersion, profile: set, setBy: c.SetBy}
				cl.declared, cl.publishing = declaredSet(r, set)
				byKey[key] = cl
			}
			cl.names = append(cl.names, r.Name)
		}
	}
	out := slices.Collect(maps.Values(byKey))
	for _, cl := range out {
		slices.Sort(cl.names)
	}
	return out
}

func classKey(c featuresv1alpha1.NodeComponentReport) string {
	var b strings.Builder
	for _, s := range []string{c.Name, c.BinaryVersion, c.EmulationVersion, c.Profile} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, k := range slices.Sorted(maps.Keys(c.SetBy)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(c.SetBy[k])
		b.WriteByte(0)
	}
	return b.String()
}

// Summarize is the cluster's view of every feature (by status.name, the
// gate's exact name): the servers' entries of the Feature objects and the
// nodes' reports, with the profiles they name. Its cost grows with the
// number of distinct (component, versions, profile, SET-BY) classes of
// nodes, not with the number of nodes, but for the sorting of names.
func Summarize(features []featuresv1alpha1.Feature, reports []featuresv1alpha1.NodeFeatureReport, profiles map[string]*featuresv1alpha1.FeatureProfile) map[string]Summary {
	cls := classes(reports, profiles)
	byComponent := map[string][]*class{}
	for _, cl := range cls {
		byComponent[cl.component] = append(byComponent[cl.component], cl)
	}
	components := slices.Sorted(maps.Keys(byComponent))
	out := make(map[string]Summary, len(features))
	for i := range features {
		f := &features[i]
		if f.Status.Name == "" {
			continue
		}
		out[f.Status.Name] = summarizeFeature(f, components, byComponent)
	}
	return out
}

func summarizeFeature(f *featuresv1alpha1.Feature, components []string, byComponent map[string][]*class) Summary {
	name := f.Status.Name
	var s Summary
	total, enabled := 0, 0
	var serversOff []string
	cpEnabled := len(f.Status.Servers) > 0
	for _, srv := range f.Status.Servers {
		total++
		if srv.Enabled {
			enabled++
		} else {
			serversOff = append(serversOff, srv.Server)
			cpEnabled = false
		}
	}
	if len(f.Status.Servers) == 0 {
		cpEnabled = f.Status.Enabled
	}
	var offNotes []string
	if len(serversOff) > 0 {
		slices.Sort(serversOff)
		offNotes = append(offNotes, fmt.Sprintf("disabled in server %s", strings.Join(serversOff, ",")))
	}
	for _, comp := range components {
		ns := summarizeComponent(name, comp, byComponent[comp], cpEnabled)
		s.Nodes = append(s.Nodes, ns)
		total += int(ns.Nodes)
		enabled += int(ns.Enabled)
		if off := ns.Nodes - ns.Enabled; off > 0 {
			note := fmt.Sprintf("not enabled on %d of %d nodes' %s", off, ns.Nodes, comp)
			if ns.Disagreeing > 0 && !majorityEnabled(ns, cpEnabled) {
				// The sample names the enabled minority then: say so.
				note = fmt.Sprintf("enabled on %d of %d nodes' %s", ns.Enabled, ns.Nodes, comp)
			}
			if len(ns.DisagreeingSample) > 0 {
				note += " (" + sampleText(ns) + ")"
			}
			offNotes = append(offNotes, note)
		}
		if comp == names.Kubelet {
			s.NodesEnabled = formatCount(ns.Enabled, ns.Nodes)
			s.Disagreeing = sampleText(ns)
		}
	}
	summarizeDeclared(&s, name, byComponent[names.Kubelet])
	switch {
	case total == 0:
		s.ClusterEnabled = strconv.FormatBool(f.Status.Enabled)
	case enabled == total:
		s.ClusterEnabled = valueTrue
	case enabled == 0:
		s.ClusterEnabled = valueFalse
	default:
		s.ClusterEnabled = valuePartial
	}
	s.Condition = metav1.Condition{Type: featuresv1alpha1.ConditionEnabled}
	switch s.ClusterEnabled {
	case valueTrue:
		s.Condition.Status, s.Condition.Reason = metav1.ConditionTrue, ReasonEnabledEverywhere
		s.Condition.Message = fmt.Sprintf("enabled in %d servers and on %d nodes' components", len(f.Status.Servers), total-len(f.Status.Servers))
	case valueFalse:
		s.Condition.Status, s.Condition.Reason = metav1.ConditionFalse, ReasonDisabled
		s.Condition.Message = "disabled everywhere"
	default:
		s.Condition.Status, s.Condition.Reason = metav1.ConditionFalse, ReasonPartlyEnabled
		s.Condition.Message = strings.Join(offNotes, "; ")
	}
	return s
}

// majorityEnabled reports whether the majority of ns's nodes run the gate
// enabled; a tie goes to the control plane's value.
func majorityEnabled(ns featuresv1alpha1.NodeFeatureSummary, cpEnabled bool) bool {
	off := ns.Nodes - ns.Enabled
	if ns.Enabled != off {
		return ns.Enabled > off
	}
	return cpEnabled
}

// sampleText is DisagreeingSample joined, with the count of the others.
func sampleText(ns featuresv1alpha1.NodeFeatureSummary) string {
	return sampleOf(ns.DisagreeingSample, ns.Disagreeing)
}

// sampleOf is sample joined, with the count of the others of total.
func sampleOf(sample []string, total int32) string {
	if len(sample) == 0 {
		return ""
	}
	t := strings.Join(sample, ",")
	if more := int(total) - len(sample); more > 0 {
		t += fmt.Sprintf(" (+%d)", more)
	}
	return t
}

// formatCount is "n/of".
func formatCount(n, of int32) string { return fmt.Sprintf("%d/%d", n, of) }

type groupKey struct{ binaryVersion, emulationVersion, setBy, enabled string }

func summarizeComponent(feature, comp string, cls []*class, cpEnabled bool) featuresv1alpha1.NodeFeatureSummary {
	ns := featuresv1alpha1.NodeFeatureSummary{Component: comp}
	groups := map[groupKey]int32{}
	values := make([]string, len(cls))
	for i, cl := range cls {
		v := cl.profile.value(feature)
		values[i] = v
		n := int32(len(cl.names))
		ns.Nodes += n
		switch v {
		case valueTrue:
			ns.Enabled += n
		case valueUnknown:
			ns.Unknown += n
		}
		setBy := cl.setBy[feature]
		if setBy == "" {
			setBy = "default"
		}
		groups[groupKey{cl.binaryVersion, cl.emulationVersion, setBy, v}] += n
	}
	keys := slices.SortedFunc(maps.Keys(groups), func(a, b groupKey) int {
		if c := cmp.Compare(groups[b], groups[a]); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.binaryVersion, b.binaryVersion), cmp.Compare(a.emulationVersion, b.emulationVersion),
			cmp.Compare(a.setBy, b.setBy), cmp.Compare(a.enabled, b.enabled))
	})
	for i, k := range keys {
		if i >= featuresv1alpha1.MaxNodeGroups {
			ns.OtherNodes += groups[k]
			continue
		}
		ns.Groups = append(ns.Groups, featuresv1alpha1.NodeFeatureGroup{
			BinaryVersion: k.binaryVersion, EmulationVersion: k.emulationVersion, SetBy: k.setBy, Enabled: k.enabled, Nodes: groups[k]})
	}
	majority := majorityEnabled(ns, cpEnabled)
	var sample []string
	for i, cl := range cls {
		if (values[i] == valueTrue) == majority {
			continue
		}
		ns.Disagreeing += int32(len(cl.names))
		sample = append(sample, cl.names[:min(len(cl.names), featuresv1alpha1.MaxDisagreeingSample)]...)
	}
	slices.Sort(sample)
	if len(sample) > featuresv1alpha1.MaxDisagreeingSample {
		sample = sample[:featuresv1alpha1.MaxDisagreeingSample]
	}
	ns.DisagreeingSample = sample
	return ns
}
