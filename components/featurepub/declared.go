package featurepub

import (
	"maps"
	"slices"
	"strings"
	"sync"

	ndffeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// NodeDeclaredFeaturesGate is the kubelet's gate of KEP-5328: with it off
// the kubelet publishes no Node.status.declaredFeatures.
const NodeDeclaredFeaturesGate = "NodeDeclaredFeatures"

// declaredByGate is, by gate, the KEP-5328 declared features the gate
// guards: those of upstream's registry (k8s.io/component-helpers
// nodedeclaredfeatures/features.AllFeatures, of the minor built) whose
// requirements name the gate, sorted; computed once, the registry does not
// change in a process.
var declaredByGate = sync.OnceValue(func() map[string][]string {
	out := map[string][]string{}
	for _, f := range ndffeatures.AllFeatures {
		req := f.Requirements()
		if req == nil {
			continue
		}
		for _, g := range req.EnabledFeatureGates {
			if !slices.Contains(out[g], f.Name()) {
				out[g] = append(out[g], f.Name())
			}
		}
	}
	for _, d := range out {
		slices.Sort(d)
	}
	return out
})

// declaredSet is a report's declared features as a set; publishing is
// false when the node's kubelet runs NodeDeclaredFeatures off (or does
// not know it): its Node declares nothing.
func declaredSet(r *featuresv1alpha1.NodeFeatureReport, p *profileSet) (set map[string]bool, publishing bool) {
	set = make(map[string]bool, len(r.Spec.DeclaredFeatures))
	for _, d := range r.Spec.DeclaredFeatures {
		set[d] = true
	}
	return set, p.value(NodeDeclaredFeaturesGate) == valueTrue
}

// summarizeDeclared fills s's declared fields for gate: for each declared
// feature the gate guards, the kubelets' nodes that declare it, with the
// same bounds as the gates' summaries (MaxDeclaredFeatures entries,
// MaxDisagreeingSample names each); NodesDeclaring counts the nodes that
// declare every one of them.
func summarizeDeclared(s *Summary, gate string, kubelets []*class) {
	declared := declaredByGate()[gate]
	if len(declared) == 0 || len(kubelets) == 0 {
		return
	}
	if len(declared) > featuresv1alpha1.MaxDeclaredFeatures {
		declared = declared[:featuresv1alpha1.MaxDeclaredFeatures]
	}
	for _, d := range declared {
		s.Declared = append(s.Declared, declaredSummary(d, kubelets, func(cl *class) bool { return cl.declared[d] }))
	}
	all := declaredSummary("", kubelets, func(cl *class) bool {
		for _, d := range declared {
			if !cl.declared[d] {
				return false
			}
		}
		return true
	})
	s.NodesDeclaring = formatCount(all.Declaring, all.Nodes)
	s.DeclaredDisagreeing = sampleOf(all.DisagreeingSample, all.Disagreeing)
}

// declaredSummary counts the nodes of kubelets that declare name
// (declares); a tie goes to declaring.
func declaredSummary(name string, kubelets []*class, declares func(*class) bool) featuresv1alpha1.DeclaredFeatureSummary {
	ds := featuresv1alpha1.DeclaredFeatureSummary{Name: name}
	for _, cl := range kubelets {
		n := int32(len(cl.names))
		ds.Nodes += n
		if declares(cl) {
			ds.Declaring += n
		}
		if !cl.publishing {
			ds.NotPublishing += n
		}
	}
	majority := ds.Declaring >= ds.Nodes-ds.Declaring
	var sample []string
	for _, cl := range kubelets {
		if declares(cl) == majority {
			continue
		}
		ds.Disagreeing += int32(len(cl.names))
		sample = append(sample, cl.names[:min(len(cl.names), featuresv1alpha1.MaxDisagreeingSample)]...)
	}
	slices.Sort(sample)
	ds.DisagreeingSample = sample[:min(len(sample), featuresv1alpha1.MaxDisagreeingSample)]
	if len(ds.DisagreeingSample) == 0 {
		ds.DisagreeingSample = nil
	}
	return ds
}

// declaredKey is the class key's part for the declared features.
func declaredKey(r *featuresv1alpha1.NodeFeatureReport) string {
	return strings.Join(r.Spec.DeclaredFeatures, ",")
}

// sortedDeclared is a report's declared features as the report holds
// them: sorted, without duplicates.
func sortedDeclared(declared []string) []string {
	if len(declared) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, d := range declared {
		set[d] = true
	}
	return slices.Sorted(maps.Keys(set))
}
