package featurepub_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
)

// feature is a Feature object the servers published, each server's value
// given.
func feature(name string, servers map[string]bool) featuresv1alpha1.Feature {
	f := featuresv1alpha1.Feature{ObjectMeta: metav1.ObjectMeta{Name: featurepub.ObjectName(name)}}
	f.Status.Name = name
	for s, on := range servers {
		f.Status.Servers = append(f.Status.Servers, featuresv1alpha1.ServerFeature{Server: s, Enabled: on})
		f.Status.Enabled = on
	}
	return f
}

// fleet builds reports and profiles: count nodes named prefix-0… whose
// kubelet runs version with the gates' values, SET-BY setBy.
type fleet struct {
	reports  []featuresv1alpha1.NodeFeatureReport
	profiles map[string]*featuresv1alpha1.FeatureProfile
}

func (fl *fleet) add(prefix string, count int, version string, values map[string]bool, setBy map[string]string, components ...string) {
	if fl.profiles == nil {
		fl.profiles = map[string]*featuresv1alpha1.FeatureProfile{}
	}
	if len(components) == 0 {
		components = []string{"kubelet"}
	}
	p := featurepub.Profile(values)
	fl.profiles[p.Name] = p
	for i := range count {
		r := featuresv1alpha1.NodeFeatureReport{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, i)}}
		for _, c := range components {
			r.Spec.Components = append(r.Spec.Components, featuresv1alpha1.NodeComponentReport{
				Name: c, BinaryVersion: version, EmulationVersion: "1.37", Profile: p.Name, SetBy: setBy})
		}
		fl.reports = append(fl.reports, r)
	}
}

func TestSummarizeEveryNodeEnabled(t *testing.T) {
	var fl fleet
	fl.add("node", 3, "v1.37.2", map[string]bool{"Foo": true, "Bar": false}, nil, "kubelet", "kube-proxy")
	sums := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true})}, fl.reports, fl.profiles)
	s := sums["Foo"]
	assert.Equal(t, "true", s.ClusterEnabled)
	assert.Equal(t, "3/3", s.NodesEnabled)
	assert.Empty(t, s.Disagreeing)
	require.Len(t, s.Nodes, 2)
	assert.Equal(t, "kube-proxy", s.Nodes[0].Component)
	assert.Equal(t, featuresv1alpha1.NodeFeatureSummary{Component: "kubelet", Nodes: 3, Enabled: 3,
		Groups: []featuresv1alpha1.NodeFeatureGroup{{BinaryVersion: "v1.37.2", EmulationVersion: "1.37", SetBy: "default", Enabled: "true", Nodes: 3}}}, s.Nodes[1])
	assert.Equal(t, metav1.ConditionTrue, s.Condition.Status)
	assert.Equal(t, featurepub.ReasonEnabledEverywhere, s.Condition.Reason)
	assert.Equal(t, featuresv1alpha1.ConditionEnabled, s.Condition.Type)
}

func TestSummarizeOneNodeOff(t *testing.T) {
	var fl fleet
	fl.add("node", 9, "v1.37.2", map[string]bool{"Foo": true}, map[string]string{"Foo": "kubelet=true"})
	fl.add("odd", 1, "v1.37.2", map[string]bool{"Foo": false}, nil)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true})}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "partial", s.ClusterEnabled)
	assert.Equal(t, "9/10", s.NodesEnabled)
	assert.Equal(t, "odd-0000", s.Disagreeing)
	k := s.Nodes[0]
	assert.Equal(t, int32(1), k.Disagreeing)
	assert.Equal(t, []string{"odd-0000"}, k.DisagreeingSample)
	assert.Equal(t, []featuresv1alpha1.NodeFeatureGroup{
		{BinaryVersion: "v1.37.2", EmulationVersion: "1.37", SetBy: "kubelet=true", Enabled: "true", Nodes: 9},
		{BinaryVersion: "v1.37.2", EmulationVersion: "1.37", SetBy: "default", Enabled: "false", Nodes: 1},
	}, k.Groups)
	assert.Equal(t, metav1.ConditionFalse, s.Condition.Status)
	assert.Equal(t, featurepub.ReasonPartlyEnabled, s.Condition.Reason)
	assert.Contains(t, s.Condition.Message, "not enabled on 1 of 10 nodes' kubelet (odd-0000)")
}

// When most nodes run the gate off, the sample names the few that run it
// on, and the condition's message says so.
func TestSummarizeMinorityEnabled(t *testing.T) {
	var fl fleet
	fl.add("off", 30, "v1.37.2", map[string]bool{"Foo": false}, nil)
	fl.add("on", 12, "v1.37.2", map[string]bool{"Foo": true}, map[string]string{"Foo": "kubelet=true"})
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": false})}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "partial", s.ClusterEnabled)
	assert.Equal(t, "12/42", s.NodesEnabled)
	assert.Equal(t, "on-0000,on-0001,on-0002,on-0003,on-0004,on-0005,on-0006,on-0007,on-0008,on-0009 (+2)", s.Disagreeing)
	assert.Equal(t, int32(12), s.Nodes[0].Disagreeing)
	assert.Contains(t, s.Condition.Message, "disabled in server server-a")
	assert.Contains(t, s.Condition.Message, "enabled on 12 of 42 nodes' kubelet (on-0000,")
}

// A tie goes to the control plane's value: the nodes that differ from the
// servers are the ones named.
func TestSummarizeTieGoesToTheControlPlane(t *testing.T) {
	for _, cp := range []bool{true, false} {
		var fl fleet
		fl.add("on", 2, "v1.37.2", map[string]bool{"Foo": true}, nil)
		fl.add("off", 2, "v1.37.2", map[string]bool{"Foo": false}, nil)
		s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": cp})}, fl.reports, fl.profiles)["Foo"]
		want := "on-0000,on-0001"
		if cp {
			want = "off-0000,off-0001"
		}
		assert.Equal(t, want, s.Disagreeing, "servers enabled=%v", cp)
	}
}

func TestSummarizeUnknownGateIsNotEnabled(t *testing.T) {
	var fl fleet
	fl.add("new", 3, "v1.37.2", map[string]bool{"Foo": true}, nil)
	fl.add("old", 2, "v1.36.3", map[string]bool{"Other": true}, nil)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true})}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "partial", s.ClusterEnabled)
	assert.Equal(t, "3/5", s.NodesEnabled)
	assert.Equal(t, int32(2), s.Nodes[0].Unknown)
	assert.Contains(t, s.Nodes[0].Groups, featuresv1alpha1.NodeFeatureGroup{BinaryVersion: "v1.36.3", EmulationVersion: "1.37", SetBy: "default", Enabled: "unknown", Nodes: 2})
	assert.Equal(t, "old-0000,old-0001", s.Disagreeing)
}

func TestSummarizeServerOffNodesOn(t *testing.T) {
	var fl fleet
	fl.add("node", 2, "v1.37.2", map[string]bool{"Foo": true}, nil)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true, "server-b": false})}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "partial", s.ClusterEnabled)
	assert.Equal(t, "2/2", s.NodesEnabled)
	assert.Equal(t, "disabled in server server-b", s.Condition.Message)
}

func TestSummarizeNoNodes(t *testing.T) {
	sums := featurepub.Summarize([]featuresv1alpha1.Feature{
		feature("Foo", map[string]bool{"server-a": true}),
		feature("Bar", map[string]bool{"server-a": false}),
	}, nil, nil)
	assert.Equal(t, "true", sums["Foo"].ClusterEnabled)
	assert.Equal(t, "false", sums["Bar"].ClusterEnabled)
	assert.Equal(t, featurepub.ReasonDisabled, sums["Bar"].Condition.Reason)
	assert.Empty(t, sums["Foo"].NodesEnabled)
	assert.Empty(t, sums["Foo"].Nodes)
}

// A report whose profile has not been seen yet is not counted (the node
// writes its profile first; the summarizer's watch may see the report
// first); a malformed Feature without status.name is not summarized.
func TestSummarizeSkipsWhatItCannotRead(t *testing.T) {
	var fl fleet
	fl.add("node", 2, "v1.37.2", map[string]bool{"Foo": true}, nil)
	fl.reports = append(fl.reports, featuresv1alpha1.NodeFeatureReport{
		ObjectMeta: metav1.ObjectMeta{Name: "early"},
		Spec: featuresv1alpha1.NodeFeatureReportSpec{Components: []featuresv1alpha1.NodeComponentReport{
			{Name: "kubelet", BinaryVersion: "v1.37.2", Profile: "gates-notyetseen"}}},
	})
	broken := feature("", nil)
	broken.Name = "broken"
	sums := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true}), broken}, fl.reports, fl.profiles)
	assert.Len(t, sums, 1)
	assert.Equal(t, "2/2", sums["Foo"].NodesEnabled)
}

// At 5,000 nodes in 40 kinds (versions, SET-BY), a Feature object with the
// summaries of two component kinds stays small: the groups and the sample
// are bounded.
func TestSummarizeIsBounded(t *testing.T) {
	var fl fleet
	for v := range 40 {
		setBy := map[string]string{}
		if v%2 == 1 {
			setBy["Foo"] = "kubelet=false"
		}
		fl.add(fmt.Sprintf("pool%02d-node", v), 125, fmt.Sprintf("v1.37.%d", v), map[string]bool{"Foo": v%2 == 0}, setBy, "kubelet", "kube-proxy")
	}
	require.Len(t, fl.reports, 5000)
	f := feature("Foo", map[string]bool{"server-a": true, "server-b": true, "server-c": true})
	s := featurepub.Summarize([]featuresv1alpha1.Feature{f}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "2500/5000", s.NodesEnabled)
	for _, ns := range s.Nodes {
		assert.Len(t, ns.Groups, featuresv1alpha1.MaxNodeGroups)
		assert.Equal(t, int32(5000-featuresv1alpha1.MaxNodeGroups*125), ns.OtherNodes)
		assert.Len(t, ns.DisagreeingSample, featuresv1alpha1.MaxDisagreeingSample)
		assert.Equal(t, int32(2500), ns.Disagreeing)
	}
	assert.True(t, strings.HasSuffix(s.Disagreeing, " (+2490)"), s.Disagreeing)
	f.Status.ClusterEnabled, f.Status.NodesEnabled, f.Status.Disagreeing, f.Status.Nodes = s.ClusterEnabled, s.NodesEnabled, s.Disagreeing, s.Nodes
	f.Status.Conditions = []metav1.Condition{s.Condition}
	body, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Less(t, len(body), 16<<10, "a Feature with the summaries of 5,000 nodes: %d bytes", len(body))
}

func TestProfileName(t *testing.T) {
	a := featurepub.Profile(map[string]bool{"Foo": true, "Bar": false})
	b := featurepub.Profile(map[string]bool{"Bar": false, "Foo": true})
	c := featurepub.Profile(map[string]bool{"Foo": false, "Bar": false})
	d := featurepub.Profile(map[string]bool{"Foo": true})
	assert.Equal(t, a.Name, b.Name)
	assert.NotEqual(t, a.Name, c.Name, "a flipped value is another profile")
	assert.NotEqual(t, a.Name, d.Name, "a gate the binary does not know is another profile")
	assert.Regexp(t, `^gates-[0-9a-f]{20}$`, a.Name)
	assert.Equal(t, []string{"Foo"}, a.Spec.Enabled)
	assert.Equal(t, []string{"Bar"}, a.Spec.Disabled)
	assert.Equal(t, int32(1), a.Spec.EnabledCount)
}

// A profile whose name is not the hash of its content (written by a node
// under a name another profile has) is not believed: the nodes that name it
// are not counted.
func TestSummarizeIgnoresForgedProfiles(t *testing.T) {
	var fl fleet
	fl.add("node", 3, "v1.37.2", map[string]bool{"Foo": true}, nil)
	fl.add("victim", 2, "v1.37.2", map[string]bool{"Foo": false}, nil)
	for name, p := range fl.profiles {
		if len(p.Spec.Disabled) == 1 { // the victims': forge it to say Foo is on
			forged := p.DeepCopy()
			forged.Spec.Enabled, forged.Spec.Disabled = []string{"Foo"}, nil
			fl.profiles[name] = forged
		}
	}
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true})}, fl.reports, fl.profiles)["Foo"]
	assert.Equal(t, "3/3", s.NodesEnabled, "the two victims are left out, not counted as enabled")
}
