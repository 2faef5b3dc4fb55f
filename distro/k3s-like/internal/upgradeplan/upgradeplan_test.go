package upgradeplan

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	basever "k8s.io/component-base/version"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/features" // the kube gates

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/featurecheck"
	"github.com/kubeharness/kubeharness/scoping"
)

// syntheticGate is a binary 1.37 gate with one feature per case of
// TestGates' table.
func syntheticGate(t *testing.T) featuregate.MutableVersionedFeatureGate {
	t.Helper()
	g := featuregate.NewVersionedFeatureGate(version.MustParse("1.37"))
	v := version.MustParse
	require.NoError(t, g.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{
		"Promoted":   {{Version: v("1.35"), Default: false, PreRelease: featuregate.Alpha}, {Version: v("1.37"), Default: true, PreRelease: featuregate.Beta}},
		"New":        {{Version: v("1.37"), Default: true, PreRelease: featuregate.Beta}},
		"NewOff":     {{Version: v("1.37"), Default: false, PreRelease: featuregate.Alpha}},
		"Explicit":   {{Version: v("1.35"), Default: false, PreRelease: featuregate.Alpha}, {Version: v("1.37"), Default: true, PreRelease: featuregate.Beta}},
		"LockedAway": {{Version: v("1.30"), Default: true, PreRelease: featuregate.Beta}, {Version: v("1.37"), Default: true, PreRelease: featuregate.GA, LockToDefault: true}},
		"Stable":     {{Version: v("1.20"), Default: true, PreRelease: featuregate.GA}},
		"Demoted":    {{Version: v("1.30"), Default: true, PreRelease: featuregate.Beta}, {Version: v("1.37"), Default: false, PreRelease: featuregate.Deprecated}},
	}))
	return g
}

// planAt is the plan a server with gate at emulation version from and the
// explicit settings set would have.
func planAt(t *testing.T, gate featuregate.MutableVersionedFeatureGate, from string, set map[string]bool) *scoping.Plan {
	t.Helper()
	at, refused, err := gateAt(gate, set, version.MustParse(from))
	require.NoError(t, err)
	require.Empty(t, refused)
	p := &scoping.Plan{BinaryVersion: "1.37.0", EmulationVersion: from, Overrides: set}
	for name := range at.GetAll() {
		f := scoping.FeatureState{Name: string(name), Enabled: at.Enabled(name), Source: scoping.SourceDefault}
		if v, ok := set[string(name)]; ok {
			f.Source = scoping.SourceFlag
			f.Requests = []scoping.Request{{Component: "kube-scheduler", Value: fmt.Sprint(v), Flag: fmt.Sprintf("--feature-gates=%s=%v", name, v)}}
		}
		p.Features = append(p.Features, f)
	}
	return p
}

// TestGates over version tables: a default that flips with a promotion, a
// gate new at the target (on or off), an explicit setting (kept), one the
// target refuses (locked to its default there), a demotion, and AllAlpha.
func TestGates(t *testing.T) {
	gate := syntheticGate(t)
	changes, err := Gates(gate, planAt(t, gate, "1.36", map[string]bool{"Explicit": false, "LockedAway": false}), version.MustParse("1.37"))
	require.NoError(t, err)
	byName := map[string]GateChange{}
	for _, c := range changes {
		byName[c.Name] = c
	}
	assert.Equal(t, GateChange{Name: "Promoted", FromStage: "Alpha", ToStage: "Beta", From: false, To: true}, byName["Promoted"])
	assert.Equal(t, GateChange{Name: "New", FromStage: "", ToStage: "Beta", From: false, To: true}, byName["New"])
	assert.Equal(t, GateChange{Name: "Demoted", FromStage: "Beta", ToStage: "Deprecated", From: true, To: false}, byName["Demoted"])
	assert.NotContains(t, byName, "NewOff", "new at the target and off: no change")
	assert.NotContains(t, byName, "Stable")
	assert.NotContains(t, byName, "Explicit", "an explicit setting keeps its value")
	locked := byName["LockedAway"]
	assert.Equal(t, "kube-scheduler --feature-gates=LockedAway=false", locked.SetBy)
	assert.Contains(t, locked.Refused, "LockedAway", "the target refuses setting a gate locked to its default")
	assert.Equal(t, []string{"Demoted", "LockedAway", "New", "Promoted"}, names(changes), "sorted, nothing else")

	// AllAlpha at 1.36 turns Promoted and Explicit on; at 1.37 Promoted is
	// beta and on by default, Explicit too: nothing flips but New and Demoted.
	changes, err = Gates(gate, planAt(t, gate, "1.36", map[string]bool{"AllAlpha": true}), version.MustParse("1.37"))
	require.NoError(t, err)
	assert.Equal(t, []string{"Demoted", "New", "NewOff"}, names(changes), "AllAlpha at 1.37 turns the new alpha NewOff on too")

	// The same version: nothing changes; a version the gate cannot emulate is an error.
	changes, err = Gates(gate, planAt(t, gate, "1.36", nil), version.MustParse("1.36"))
	require.NoError(t, err)
	assert.Empty(t, changes)
	_, err = Gates(gate, &scoping.Plan{EmulationVersion: "x"}, version.MustParse("1.37"))
	assert.ErrorContains(t, err, `the server's emulation version "x"`)
}

func names(cs []GateChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func binaryVersions(t *testing.T) (prev, bin *version.Version) {
	t.Helper()
	bin = version.MustParse(basever.DefaultKubeBinaryVersion)
	return version.MajorMinor(bin.Major(), bin.Minor()-1), bin
}

func servedAt(t *testing.T, v *version.Version, rc cliflag.ConfigurationMap) APIs {
	t.Helper()
	g, _, err := gateAt(utilfeature.DefaultMutableFeatureGate, nil, v)
	require.NoError(t, err)
	a, err := Served(v, g, rc)
	require.NoError(t, err)
	return a
}

// TestServedFollowsTheLifecycle: with the real scheme of the minor built,
// stable APIs are served at both versions, and every resource served at
// the binary's version and not the previous one is there because its type
// was introduced at the binary's version or a gate guarding it turned on.
func TestServedFollowsTheLifecycle(t *testing.T) {
	prev, bin := binaryVersions(t)
	before, after := servedAt(t, prev, nil), servedAt(t, bin, nil)
	for _, r := range []string{"v1/pods", "v1/configmaps", "apps/v1/deployments", "rbac.authorization.k8s.io/v1/roles", "authentication.k8s.io/v1/tokenreviews"} {
		assert.Contains(t, before.Resources, r)
		assert.Contains(t, after.Resources, r)
	}
	assert.NotContains(t, after.Resources, "v1/bindings", "core's bindings is left out (topLevel)")
	assert.NotContains(t, after.Resources, "apps/v1/scales", "a subresource kind is not a resource")
	added, removed := Diff(before, after)
	t.Logf("%s -> %s: added %v, removed %v", prev, bin, added, removed)
	gPrev, _, _ := gateAt(utilfeature.DefaultMutableFeatureGate, nil, prev)
	gBin, _, _ := gateAt(utilfeature.DefaultMutableFeatureGate, nil, bin)
	for _, r := range added.Resources {
		gvk := kindOf(t, r)
		obj, err := legacyscheme.Scheme.New(gvk)
		require.NoError(t, err)
		major, minor := introduced(obj)
		gated := featurecheck.GatesFor(gvk)
		flipped := len(gated) > 0 && allOn(gBin, gated) && !allOn(gPrev, gated)
		assert.True(t, (major == int(bin.Major()) && minor == int(bin.Minor())) || flipped,
			"%s (%s, introduced %d.%d, gates %v) appears at %s", r, gvk, major, minor, gated, bin)
	}
	// What this binary's minor adds, as TestUpgradeRehearsal sees it.
	want := map[string][]string{"1.36": nil, "1.37": {"storagemigration.k8s.io/v1"}}
	if w, ok := want[basever.DefaultKubeBinaryVersion]; ok {
		assert.Equal(t, w, added.GroupVersions)
	}
}

// kindOf finds the kind of "group/version/resource" in the scheme.
func kindOf(t *testing.T, r string) schema.GroupVersionKind {
	t.Helper()
	i := strings.LastIndex(r, "/")
	gv, err := schema.ParseGroupVersion(r[:i])
	require.NoError(t, err)
	for kind := range legacyscheme.Scheme.KnownTypes(gv) {
		gvk := gv.WithKind(kind)
		if res := guess(gvk); res == r[i+1:] && topLevel(legacyscheme.Scheme, gvk) {
			return gvk
		}
	}
	t.Fatalf("no kind for %s", r)
	return schema.GroupVersionKind{}
}

func introduced(obj runtime.Object) (int, int) {
	if i, ok := obj.(interface{ APILifecycleIntroduced() (int, int) }); ok {
		return i.APILifecycleIntroduced()
	}
	return 0, 0
}

// TestServedRuntimeConfig: the server's --runtime-config counts, as
// kube-apiserver merges it; a bad value is an error.
func TestServedRuntimeConfig(t *testing.T) {
	_, bin := binaryVersions(t)
	off := servedAt(t, bin, cliflag.ConfigurationMap{"apps/v1": "false"})
	assert.NotContains(t, off.GroupVersions, "apps/v1")
	assert.False(t, slices.ContainsFunc(off.Resources, func(r string) bool { return strings.HasPrefix(r, "apps/v1/") }))
	assert.Contains(t, off.GroupVersions, "v1")
	g, _, err := gateAt(utilfeature.DefaultMutableFeatureGate, nil, bin)
	require.NoError(t, err)
	_, err = Served(bin, g, cliflag.ConfigurationMap{"apps/v1": "maybe"})
	assert.ErrorContains(t, err, "--runtime-config")
}

// TestBuild: the report of lifting the emulation from the previous minor,
// with the real gate: the gates and APIs that change, the manifests'
// objects judged at the target, and the model compared with a "live"
// discovery that has one resource more.
func TestBuild(t *testing.T) {
	prev, bin := binaryVersions(t)
	gate := utilfeature.DefaultMutableFeatureGate
	plan := planAt(t, gate, prev.String(), nil)
	live := servedAt(t, prev, nil)
	live.Resources = append(slices.Clone(live.Resources), "v1/extras")
	objs := []featurecheck.Object{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		{APIVersion: "example.com/v1", Kind: "Widget", Name: "w"},
	}
	r, err := Build(gate, plan, []string{"--v=2", "--runtime-config=apps/v1=false"}, bin, objs, &live)
	require.NoError(t, err)
	assert.Equal(t, prev.String(), r.From)
	assert.Equal(t, fmt.Sprintf("%d.%d", bin.Major(), bin.Minor()), r.To)
	assert.Contains(t, r.ModelDiffers, "+v1/extras")
	assert.Contains(t, r.ModelDiffers, "+apps/v1", "the live discovery has apps/v1; the model with apps/v1=false does not")
	assert.Equal(t, []Object{
		{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Known: true, Served: false},
		{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", Known: false},
	}, r.Objects, "apps/v1 is off by the server's --runtime-config")
	assert.True(t, r.Changes())
	var buf bytes.Buffer
	require.NoError(t, r.WriteTable(&buf))
	assert.Contains(t, buf.String(), "EMULATED: "+r.From+" -> "+r.To)
	assert.Contains(t, buf.String(), "STOPS                           apps/v1 Deployment web")
	assert.Contains(t, buf.String(), "UNKNOWN (not a built-in group)")
	assert.Contains(t, buf.String(), "warning: the model of what "+r.From+" serves differs")

	// Staying where it is changes nothing.
	r, err = Build(gate, plan, nil, prev, objs[:1], nil)
	require.NoError(t, err)
	assert.False(t, r.Changes(), "%+v", r)
	assert.Empty(t, r.ModelDiffers)
	_, err = Build(gate, plan, []string{"--runtime-config=apps/v1=maybe"}, bin, nil, nil)
	assert.ErrorContains(t, err, "--runtime-config")
	_, err = Build(gate, plan, nil, version.MustParse("1.99"), nil, nil)
	assert.ErrorContains(t, err, "--to-emulated-version=1.99: emulation version 1.99 is not between")
	_, err = Build(gate, plan, nil, version.MustParse("1.20"), nil, nil)
	assert.ErrorContains(t, err, "--to-emulated-version=1.20: emulation version 1.20 is not between")
	_, err = Build(gate, plan, nil, bin, []featurecheck.Object{{APIVersion: "a/b/c", Kind: "X"}}, nil)
	assert.ErrorContains(t, err, `apiVersion "a/b/c"`)
}
