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

// restartAll is a gate upstream's KEP-5328 registry guards a declared
// feature of the same name with (restartallcontainers, 1.36 to 1.38).
const restartAll = "RestartAllContainersOnContainerExits"

// addDeclaring adds count nodes named prefix-0… whose kubelet runs
// restartAll and NodeDeclaredFeatures with the values given and declares
// the features given.
func (fl *fleet) addDeclaring(prefix string, count int, gateOn, publishing bool, declared ...string) {
	first := len(fl.reports)
	fl.add(prefix, count, "v1.37.2", map[string]bool{restartAll: gateOn, featurepub.NodeDeclaredFeaturesGate: publishing}, nil)
	for i := first; i < len(fl.reports); i++ {
		fl.reports[i].Spec.DeclaredFeatures = declared
	}
}

func TestSummarizeDeclaredFeatures(t *testing.T) {
	var fl fleet
	fl.addDeclaring("on", 3, true, true, restartAll)
	fl.addDeclaring("off", 1, false, true)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature(restartAll, map[string]bool{"server-a": true})}, fl.reports, fl.profiles)[restartAll]
	assert.Equal(t, "partial", s.ClusterEnabled, "the gate's own summary")
	assert.Equal(t, "3/4", s.NodesEnabled)
	assert.Equal(t, "off-0000", s.Disagreeing)
	assert.Equal(t, "3/4", s.NodesDeclaring)
	assert.Equal(t, "off-0000", s.DeclaredDisagreeing)
	assert.Equal(t, []featuresv1alpha1.DeclaredFeatureSummary{{Name: restartAll, Nodes: 4, Declaring: 3, Disagreeing: 1,
		DisagreeingSample: []string{"off-0000"}}}, s.Declared)
}

func TestSummarizeDeclaredMinorityNamesTheDeclaring(t *testing.T) {
	var fl fleet
	fl.addDeclaring("on", 1, true, true, restartAll)
	fl.addDeclaring("off", 2, false, true)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature(restartAll, map[string]bool{"server-a": false})}, fl.reports, fl.profiles)[restartAll]
	assert.Equal(t, "1/3", s.NodesDeclaring)
	assert.Equal(t, "on-0000", s.DeclaredDisagreeing, "the declaring node is the minority")
}

// Where the kubelets run NodeDeclaredFeatures off, their Nodes declare
// nothing: the gates' summaries are as before, and the declared summary
// says why no node declares.
func TestSummarizeDeclaredFeaturesOff(t *testing.T) {
	var fl fleet
	fl.addDeclaring("node", 2, true, false)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature(restartAll, map[string]bool{"server-a": true})}, fl.reports, fl.profiles)[restartAll]
	assert.Equal(t, "true", s.ClusterEnabled)
	assert.Equal(t, "2/2", s.NodesEnabled)
	assert.Equal(t, "0/2", s.NodesDeclaring)
	assert.Empty(t, s.DeclaredDisagreeing, "no node declares: none disagrees")
	require.Len(t, s.Declared, 1)
	assert.Equal(t, int32(2), s.Declared[0].NotPublishing)
	assert.Zero(t, s.Declared[0].Declaring)
}

func TestSummarizeGateWithoutDeclaredFeature(t *testing.T) {
	var fl fleet
	fl.addDeclaring("node", 2, true, true, restartAll)
	s := featurepub.Summarize([]featuresv1alpha1.Feature{feature("Foo", map[string]bool{"server-a": true})}, fl.reports, fl.profiles)["Foo"]
	assert.Empty(t, s.NodesDeclaring)
	assert.Nil(t, s.Declared)
}

func TestSummarizeDeclaredIsBounded(t *testing.T) {
	var fl fleet
	for v := range 40 {
		var declared []string
		if v%2 == 0 {
			declared = []string{restartAll}
		}
		fl.addDeclaring(fmt.Sprintf("pool%02d-node", v), 125, v%2 == 0, true, declared...)
	}
	require.Len(t, fl.reports, 5000)
	f := feature(restartAll, map[string]bool{"server-a": true, "server-b": true, "server-c": true})
	s := featurepub.Summarize([]featuresv1alpha1.Feature{f}, fl.reports, fl.profiles)[restartAll]
	assert.Equal(t, "2500/5000", s.NodesDeclaring)
	require.Len(t, s.Declared, 1)
	assert.Len(t, s.Declared[0].DisagreeingSample, featuresv1alpha1.MaxDisagreeingSample)
	assert.Equal(t, int32(2500), s.Declared[0].Disagreeing)
	assert.True(t, strings.HasSuffix(s.DeclaredDisagreeing, " (+2490)"), s.DeclaredDisagreeing)
	f.Status.ClusterEnabled, f.Status.NodesEnabled, f.Status.Disagreeing, f.Status.Nodes = s.ClusterEnabled, s.NodesEnabled, s.Disagreeing, s.Nodes
	f.Status.NodesDeclaring, f.Status.DeclaredDisagreeing, f.Status.Declared = s.NodesDeclaring, s.DeclaredDisagreeing, s.Declared
	f.Status.Conditions = []metav1.Condition{s.Condition}
	body, err := json.Marshal(f)
	require.NoError(t, err)
	assert.Less(t, len(body), 16<<10, "a Feature with the summaries of 5,000 nodes: %d bytes", len(body))
}
