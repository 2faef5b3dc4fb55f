package featurecheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// restartAllPods are a Pod and a Deployment that need the declared feature
// RestartAllContainersOnContainerExits (a restart rule whose action
// restarts every container), and a Pod that needs none.
const restartAllPods = `
apiVersion: v1
kind: Pod
metadata: {name: restart-all}
spec:
  containers:
  - name: main
    image: busybox
    restartPolicy: Never
    restartPolicyRules:
    - action: RestartAllContainers
      exitCodes: {operator: In, values: [42]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  template:
    spec:
      initContainers:
      - name: init
        image: busybox
        restartPolicy: Never
        restartPolicyRules:
        - action: RestartAllContainers
          exitCodes: {operator: In, values: [1]}
      containers:
      - {name: main, image: busybox}
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers:
  - {name: main, image: busybox}
`

const restartAll = "RestartAllContainersOnContainerExits"

func podDiscovery() *fakediscovery.FakeDiscovery {
	return &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}}},
	}}}
}

func TestDeclaredNeeds(t *testing.T) {
	objs, err := Read(strings.NewReader(restartAllPods))
	require.NoError(t, err)
	require.Len(t, objs, 3)
	v := version.MustParse("1.37.2")
	for i, want := range [][]string{{restartAll}, {restartAll}, nil} {
		require.NotNil(t, objs[i].PodSpec, objs[i].Name)
		got, err := DeclaredNeeds(objs[i].PodSpec, v)
		require.NoError(t, err)
		assert.Equal(t, want, got, objs[i].Name)
	}
}

func TestCheckNamesTheNodesThatCanRunIt(t *testing.T) {
	objs, err := Read(strings.NewReader(restartAllPods))
	require.NoError(t, err)
	nodes := &Nodes{Version: version.MustParse("1.37.2"), Items: []NodeDeclared{
		{Name: "node-b"}, {Name: "node-a", Features: []string{restartAll}},
	}}
	res, err := Check(podDiscovery(), nil, nodes, objs)
	require.NoError(t, err)
	want := "needs declared feature " + restartAll + ", declared by 1 of 2 nodes: it can run on node-a"
	assert.Equal(t, "PARTIAL  v1 Pod restart-all: served, but "+want, res[0].String())
	assert.Equal(t, "PARTIAL  apps/v1 Deployment web: served, but "+want, res[1].String())
	assert.Equal(t, "ok       v1 Pod plain", res[2].String())
	assert.False(t, res[0].OK(), "features check exits 1")
	assert.True(t, res[2].OK())

	// Every node declares it: ok.
	nodes.Items[0].Features = []string{restartAll}
	res, err = Check(podDiscovery(), nil, nodes, objs)
	require.NoError(t, err)
	assert.Equal(t, "ok       v1 Pod restart-all", res[0].String())
	assert.True(t, res[0].OK())

	// None does (where the kubelets run NodeDeclaredFeatures off, say).
	nodes.Items[0].Features, nodes.Items[1].Features = nil, nil
	res, err = Check(podDiscovery(), nil, nodes, objs)
	require.NoError(t, err)
	assert.True(t, res[0].NoNode)
	assert.False(t, res[0].OK())
	assert.Equal(t, "MISSING  v1 Pod restart-all: served, but needs declared feature "+restartAll+", which no node declares (0 of 2 nodes)", res[0].String())
}

func TestCheckDeclaredSampleIsBounded(t *testing.T) {
	objs, err := Read(strings.NewReader(restartAllPods))
	require.NoError(t, err)
	nodes := &Nodes{Version: version.MustParse("1.37.2")}
	for i := range 5000 {
		n := NodeDeclared{Name: fmt.Sprintf("node-%04d", i)}
		if i%2 == 0 {
			n.Features = []string{restartAll}
		}
		nodes.Items = append(nodes.Items, n)
	}
	res, err := Check(podDiscovery(), nil, nodes, objs[:1])
	require.NoError(t, err)
	assert.Equal(t, "needs declared feature "+restartAll+", declared by 2500 of 5000 nodes: it can run on "+
		"node-0000,node-0002,node-0004,node-0006,node-0008,node-0010,node-0012,node-0014,node-0016,node-0018 (+2490)", res[0].Declared)
}

func TestReadRefusesABadPodSpec(t *testing.T) {
	_, err := Read(strings.NewReader("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "document 1: Pod p: spec:")
}
