package features

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/scoping"
)

// testPlan has a gate set by two components, one by the emulated version,
// one by default, and a warning.
func testPlan() *scoping.Plan {
	return &scoping.Plan{
		BinaryVersion:           "1.37",
		EmulationVersion:        "1.36",
		MinCompatibilityVersion: "1.35",
		Components:              []string{"etcd", "kube-apiserver", "kube-scheduler"},
		Features: []scoping.FeatureState{
			{Name: "AlphaGate", Stage: "Alpha", Enabled: true, Source: scoping.SourceFlag, Requests: []scoping.Request{
				{Component: "kube-scheduler", Value: "true", Flag: "--feature-gates=AlphaGate=true"},
				{Component: "kube-apiserver", Value: "true", Flag: "--feature-gates=AlphaGate=true"},
			}},
			{Name: "BetaGate", Stage: "Beta", Default: true, Enabled: true, Source: scoping.SourceEmulatedVersion},
			{Name: "GAGate", Stage: "GA", Default: true, Enabled: true, LockedToDefault: true, Source: scoping.SourceDefault},
		},
		Warnings: []string{"something to know"},
	}
}

func printFeaturesTo(t *testing.T, o featuresOptions, plan *scoping.Plan) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	require.NoError(t, o.print(&out, &errOut, plan))
	return out.String(), errOut.String()
}

func fields(line string) []string { return strings.Fields(line) }

// TestFeaturesTable: no preamble; kubectl get features' columns from the
// CRD but AGE; NAME the object name; SET-BY as featurepub publishes it;
// the warning on stderr only.
func TestFeaturesTable(t *testing.T) {
	out, stderr := printFeaturesTo(t, featuresOptions{output: "table", nodeName: "server-a"}, testPlan())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY"}, fields(lines[0]))
	assert.Equal(t, []string{"alphagate", "Alpha", "true", "false", "kube-apiserver=true,kube-scheduler=true"}, fields(lines[1]))
	assert.Equal(t, []string{"betagate", "Beta", "true", "true", "emulated-version"}, fields(lines[2]))
	assert.Equal(t, []string{"gagate", "GA", "true", "true", "default"}, fields(lines[3]))
	assert.NotContains(t, out, "EMULATED")
	assert.NotContains(t, out, "Warning")
	assert.Equal(t, "Warning: something to know\n", stderr)
	// kubectl's layout: columns three spaces apart at the widest cell.
	assert.True(t, strings.HasPrefix(lines[0], "NAME        STAGE   ENABLED   DEFAULT   SET-BY"), "%q", lines[0])
}

// TestFeaturesTableColumnsFollowTheCRD: the columns are the CRD's printer
// columns, but AGE, whatever they are: a column added to the CRD shows.
func TestFeaturesTableColumnsFollowTheCRD(t *testing.T) {
	columns, err := crdPrinterColumns()
	require.NoError(t, err)
	var want, wantWide []string
	for _, c := range columns {
		if c.JSONPath == ".metadata.creationTimestamp" {
			continue
		}
		if c.Priority == 0 {
			want = append(want, strings.ToUpper(c.Name))
		}
		wantWide = append(wantWide, strings.ToUpper(c.Name))
	}
	require.Contains(t, want, "SET-BY")
	out, _ := printFeaturesTo(t, featuresOptions{output: "table"}, testPlan())
	assert.Equal(t, append([]string{"NAME"}, want...), fields(strings.SplitN(out, "\n", 2)[0]))
	out, _ = printFeaturesTo(t, featuresOptions{output: "wide"}, testPlan())
	assert.Equal(t, append(append([]string{"NAME"}, wantWide...), "EMULATED", "BINARY"), fields(strings.SplitN(out, "\n", 2)[0]))
}

// TestFeaturesWide: SERVERS (the --node-name), NODES and DISAGREEING
// (none without node summaries), then the versions.
func TestFeaturesWide(t *testing.T) {
	out, _ := printFeaturesTo(t, featuresOptions{output: "wide", nodeName: "server-a"}, testPlan())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "SERVERS", "NODES", "DISAGREEING", "DECLARED", "DECLARED-DISAGREEING", "EMULATED", "BINARY"}, fields(lines[0]))
	assert.Equal(t, []string{"gagate", "GA", "true", "true", "default", "server-a", "1.36", "1.37"}, fields(lines[3]), "NODES and DISAGREEING empty")
}

// TestFeaturesNoHeaders: only the rows, for table and wide.
func TestFeaturesNoHeaders(t *testing.T) {
	for _, output := range []string{"table", "wide"} {
		out, _ := printFeaturesTo(t, featuresOptions{output: output, noHeaders: true, nodeName: "server-a"}, testPlan())
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Len(t, lines, 3, "%s: %s", output, out)
		assert.Equal(t, "alphagate", fields(lines[0])[0], output)
		assert.NotContains(t, out, "NAME", output)
	}
	// Meaningless for the other formats, as kubectl: ignored.
	out, _ := printFeaturesTo(t, featuresOptions{output: "name", noHeaders: true}, testPlan())
	assert.Equal(t, 3, strings.Count(out, "\n"))
}

// TestFeaturesJSONAndYAML: a FeatureList of exactly what featurepub
// publishes for this server, in both encodings.
func TestFeaturesJSONAndYAML(t *testing.T) {
	plan := testPlan()
	var want []featuresv1alpha1.Feature
	for _, f := range featurepub.Features(plan, "server-a") {
		f.Status.ClusterEnabled = strconv.FormatBool(f.Status.Enabled) // no node summaries: the server's value
		want = append(want, *f)
	}
	for output, unmarshal := range map[string]func([]byte, any) error{
		"json": json.Unmarshal,
		"yaml": func(b []byte, v any) error { return yaml.UnmarshalStrict(b, v) },
	} {
		out, stderr := printFeaturesTo(t, featuresOptions{output: output, nodeName: "server-a"}, plan)
		var list featuresv1alpha1.FeatureList
		require.NoError(t, unmarshal([]byte(out), &list), "%s:\n%s", output, out)
		assert.Equal(t, "features.kubeharness.io/v1alpha1", list.APIVersion, output)
		assert.Equal(t, "FeatureList", list.Kind, output)
		assert.Equal(t, want, list.Items, output)
		require.Len(t, list.Items, 3, output)
		assert.Equal(t, "AlphaGate", list.Items[0].Status.Name)
		assert.Equal(t, "kube-apiserver=true,kube-scheduler=true", list.Items[0].Status.SetBy)
		assert.Equal(t, "server-a", list.Items[0].Status.Servers[0].Server)
		assert.Equal(t, "Warning: something to know\n", stderr, "%s: the warning is not in the document", output)
	}
	out, _ := printFeaturesTo(t, featuresOptions{output: "json"}, testPlan())
	assert.True(t, strings.HasPrefix(out, "{\n    \""), "kubectl's JSON indentation: %q", out[:min(len(out), 40)])
}

// TestFeaturesEmptyPlan: a list with no items is still a list, and a table
// of no rows prints nothing (kubectl prints its "No resources found" on
// stderr; a plan always has gates, so this is only about not failing).
func TestFeaturesEmptyPlan(t *testing.T) {
	empty := &scoping.Plan{}
	out, _ := printFeaturesTo(t, featuresOptions{output: "json"}, empty)
	var list map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, []any{}, list["items"], "items is [], not null")
	out, _ = printFeaturesTo(t, featuresOptions{output: "name"}, empty)
	assert.Empty(t, out)
	_, _ = printFeaturesTo(t, featuresOptions{output: "table"}, empty)
}

// TestFeaturesOrder: the rows in object-name order, as the apiserver lists
// them, not in the plan's order of the gates' names.
func TestFeaturesOrder(t *testing.T) {
	plan := &scoping.Plan{Features: []scoping.FeatureState{{Name: "APIThing"}, {Name: "AlphaThing"}, {Name: "Zeta"}, {Name: "aLast"}}}
	out, _ := printFeaturesTo(t, featuresOptions{output: "name"}, plan)
	assert.Equal(t, "feature.features.kubeharness.io/alast\nfeature.features.kubeharness.io/alphathing\nfeature.features.kubeharness.io/apithing\nfeature.features.kubeharness.io/zeta\n", out)
	out, _ = printFeaturesTo(t, featuresOptions{output: "json"}, plan)
	var list featuresv1alpha1.FeatureList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	var names []string
	for _, f := range list.Items {
		names = append(names, f.Status.Name)
	}
	assert.Equal(t, []string{"aLast", "AlphaThing", "APIThing", "Zeta"}, names)
}

// TestFeaturesName: kind.group/name per Feature, as kubectl -o name.
func TestFeaturesName(t *testing.T) {
	out, _ := printFeaturesTo(t, featuresOptions{output: "name"}, testPlan())
	assert.Equal(t, "feature.features.kubeharness.io/alphagate\nfeature.features.kubeharness.io/betagate\nfeature.features.kubeharness.io/gagate\n", out)
}

// TestFeaturesUnknownOutput: the error names the value and the choices, and
// nothing is printed.
func TestFeaturesUnknownOutput(t *testing.T) {
	for _, output := range []string{"", "Table", "jsonpath", "go-template", "custom-columns=NAME:.metadata.name"} {
		var out, stderr bytes.Buffer
		err := (&featuresOptions{output: output}).print(&out, &stderr, testPlan())
		require.Error(t, err, output)
		assert.Equal(t, "-o "+output+": unknown output format; use one of table, wide, json, yaml, name", err.Error())
		assert.Empty(t, out.String(), output)
		assert.Empty(t, stderr.String(), output)
	}
}

// TestFeaturesWideNodes: with the server's node summaries, ENABLED is the
// cluster's (partial) and -o wide shows NODES and the disagreeing sample,
// DECLARED and its sample (KEP-5328); a gate without a summary shows the
// server's own value.
func TestFeaturesWideNodes(t *testing.T) {
	nodes := map[string]featurepub.Summary{"AlphaGate": {
		ClusterEnabled: "partial", NodesEnabled: "4987/5000", Disagreeing: "node-0007,node-0009 (+11)",
		Nodes:          []featuresv1alpha1.NodeFeatureSummary{{Component: "kubelet", Nodes: 5000, Enabled: 4987, Disagreeing: 13}},
		NodesDeclaring: "4990/5000", DeclaredDisagreeing: "node-0007 (+9)",
		Declared: []featuresv1alpha1.DeclaredFeatureSummary{{Name: "AlphaGate", Nodes: 5000, Declaring: 4990, Disagreeing: 10,
			DisagreeingSample: []string{"node-0007"}}},
	}}
	out, _ := printFeaturesTo(t, featuresOptions{output: "wide", nodeName: "server-a", nodes: nodes}, testPlan())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	assert.Equal(t, []string{"NAME", "STAGE", "ENABLED", "DEFAULT", "SET-BY", "SERVERS", "NODES", "DISAGREEING", "DECLARED", "DECLARED-DISAGREEING", "EMULATED", "BINARY"}, fields(lines[0]))
	assert.Equal(t, []string{"alphagate", "Alpha", "partial", "false", "kube-apiserver=true,kube-scheduler=true", "server-a", "4987/5000", "node-0007,node-0009", "(+11)", "4990/5000", "node-0007", "(+9)", "1.36", "1.37"}, fields(lines[1]))
	assert.Equal(t, []string{"betagate", "Beta", "true", "true", "emulated-version", "server-a", "1.36", "1.37"}, fields(lines[2]), "NODES and DISAGREEING empty")

	out, _ = printFeaturesTo(t, featuresOptions{output: "json", nodeName: "server-a", nodes: nodes}, testPlan())
	var list featuresv1alpha1.FeatureList
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	assert.Equal(t, int32(4987), list.Items[0].Status.Nodes[0].Enabled)
	assert.Equal(t, int32(4990), list.Items[0].Status.Declared[0].Declaring, "the declared features' summary")
}
