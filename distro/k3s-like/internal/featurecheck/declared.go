package featurecheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
)

// maxNodeSample bounds the node names a verdict on declared features
// prints, as the Feature objects' samples are bounded.
const maxNodeSample = 10

// Nodes are the cluster's nodes as KEP-5328 sees them, for Check.
type Nodes struct {
	// Version is the version the Pods' needs are inferred at (the
	// scheduler's: the servers' binary version).
	Version *version.Version
	// Items are the nodes, each with its Node.status.declaredFeatures.
	Items []NodeDeclared
}

// NodeDeclared is a node and the features it declares.
type NodeDeclared struct {
	Name     string
	Features []string
}

// templatePaths are where the Pod template of a workload kind is; a Pod's
// spec is at spec.
var templatePaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// podSpecOf is the Pod spec of u, a Pod or a workload's template; nil
// for other kinds and for an object without one.
func podSpecOf(u *unstructured.Unstructured) (*corev1.PodSpec, error) {
	path, ok := templatePaths[u.GetKind()]
	if !ok {
		return nil, nil
	}
	m, found, err := unstructured.NestedMap(u.Object, path...)
	if err != nil || !found {
		return nil, err
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, spec); err != nil {
		return nil, fmt.Errorf("%s %s: %s: %w", u.GetKind(), u.GetName(), strings.Join(path, "."), err)
	}
	return spec, nil
}

// DeclaredNeeds returns the KEP-5328 declared features a Pod of spec needs
// its node to declare to be scheduled at v, by upstream's inference
// (nodedeclaredfeatures.DefaultFramework, of the minor built), sorted.
func DeclaredNeeds(spec *corev1.PodSpec, v *version.Version) ([]string, error) {
	set, err := ndf.DefaultFramework.InferForPodScheduling(&ndf.PodInfo{Spec: spec}, v)
	if err != nil {
		return nil, err
	}
	needs, err := ndf.DefaultFramework.Unmap(set)
	if err != nil {
		return nil, err
	}
	slices.Sort(needs)
	return needs, nil
}

// declaredVerdict says which of nodes declare every feature of needs:
// "" when all do; none is true when no node does.
func (n *Nodes) declaredVerdict(needs []string) (text string, none bool) {
	var can []string
	for _, node := range n.Items {
		if every(needs, node.Features) {
			can = append(can, node.Name)
		}
	}
	if len(can) == len(n.Items) && len(can) > 0 {
		return "", false
	}
	what := "needs declared feature " + strings.Join(needs, ", ")
	if len(needs) > 1 {
		what = "needs declared features " + strings.Join(needs, ", ")
	}
	if len(can) == 0 {
		return fmt.Sprintf("%s, which no node declares (0 of %d nodes)", what, len(n.Items)), true
	}
	slices.Sort(can)
	sample := strings.Join(can[:min(len(can), maxNodeSample)], ",")
	if more := len(can) - maxNodeSample; more > 0 {
		sample += fmt.Sprintf(" (+%d)", more)
	}
	return fmt.Sprintf("%s, declared by %d of %d nodes: it can run on %s", what, len(can), len(n.Items), sample), false
}

// every reports whether have holds every name of want.
func every(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
