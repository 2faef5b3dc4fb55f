package race_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/scoping"
)

// component is one component's arguments, in the order it parses.
type component struct {
	name string
	args []string
}

// TestUpstream_ConflictingGate_LastParserWinsSilently: Foo=true in one
// component and Foo=false in another (k3s#11853; kubernetes#130079 assumes the
// components' flags "do not conflict with each other"). Both values land in
// the one shared featureGatesConfig map, Set() joins them into
// "Foo=true,Foo=false" (or the reverse) and the feature gate keeps the last:
// whichever component parsed last wins, whatever the value. No Set() returns
// an error and nothing is logged; the component that lost runs with the value
// it asked against.
func TestUpstream_ConflictingGate_LastParserWinsSilently(t *testing.T) {
	for _, tc := range []struct {
		name       string
		order      []component
		winner     string
		wantFoo    bool
		wantFlag   string
		firstAsked bool
	}{{
		name: "apiserver first: the scheduler's false wins",
		order: []component{
			{apiserver, []string{"--feature-gates=Foo=true"}},
			{scheduler, []string{"--feature-gates=Foo=false"}},
			{kcm, nil},
		},
		winner: scheduler, wantFoo: false, wantFlag: ":Foo=true,:Foo=false", firstAsked: true,
	}, {
		name: "scheduler first: the apiserver's true wins",
		order: []component{
			{scheduler, []string{"--feature-gates=Foo=false"}},
			{apiserver, []string{"--feature-gates=Foo=true"}},
			{kcm, nil},
		},
		winner: apiserver, wantFoo: true, wantFlag: ":Foo=false,:Foo=true", firstAsked: false,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureKlog(t)
			u := newUpstream(t)

			first := tc.order[0]
			_, err := u.run(first.name, first.args...)
			require.NoError(t, err)
			assert.Equal(t, tc.firstAsked, u.gate.Enabled(Foo), "%s sees what it asked for, at first", first.name)

			for _, c := range tc.order[1:] {
				fs, err := u.run(c.name, c.args...)
				require.NoError(t, err, "upstream %s's Set() returns no error", c.name)
				assert.Equal(t, tc.wantFlag, flagValue(fs, "feature-gates"), "%s's own flag holds both values", c.name)
			}
			assert.Equal(t, tc.wantFoo, u.gate.Enabled(Foo), "the last parser (%s) wins", tc.winner)
			assert.NotEqual(t, tc.firstAsked, u.gate.Enabled(Foo), "%s runs with the value it asked against", first.name)
			assert.Empty(t, logs(), "upstream logs nothing at the default verbosity")
		})
	}
}

// TestHarness_ConflictingGate_ReportedAsConflictError: the same arguments
// through scoping, in both orders: Reconcile returns a *scoping.ConflictError
// naming the feature, both components and the flag text each gave, the same
// whatever the order, and the process gate stays untouched.
func TestHarness_ConflictingGate_ReportedAsConflictError(t *testing.T) {
	want := &scoping.Conflict{
		Kind:    scoping.FeatureGateConflict,
		Setting: `feature gate "Foo"`,
		Requests: []scoping.Request{
			{Component: apiserver, Value: "true", Flag: "--feature-gates=Foo=true"},
			{Component: scheduler, Value: "false", Flag: "--feature-gates=Foo=false"},
		},
	}
	for name, order := range map[string][]component{
		"apiserver first": {
			{apiserver, []string{"--feature-gates=Foo=true"}},
			{scheduler, []string{"--feature-gates=Foo=false"}},
			{kcm, nil},
		},
		"scheduler first": {
			{scheduler, []string{"--feature-gates=Foo=false"}},
			{apiserver, []string{"--feature-gates=Foo=true"}},
			{kcm, nil},
		},
	} {
		t.Run(name, func(t *testing.T) {
			target := newTarget(t)
			b, err := scoping.NewBarrier(target, scoping.WithLogger(testr.New(t)))
			require.NoError(t, err)
			for _, c := range order {
				_, err := parseScope(b, c.name, c.args...)
				require.NoError(t, err, c.name)
			}

			plan, err := b.Reconcile()
			assert.Nil(t, plan)
			var ce *scoping.ConflictError
			require.ErrorAs(t, err, &ce)
			require.Len(t, ce.Conflicts, 1, err.Error())
			assert.Equal(t, want, ce.Conflicts[0])
			assert.Equal(t, []string{apiserver, scheduler}, ce.Conflicts[0].Components())
			for _, text := range []string{apiserver, scheduler, "--feature-gates=Foo=true", "--feature-gates=Foo=false"} {
				assert.Contains(t, err.Error(), text)
			}
			var one *scoping.Conflict
			assert.True(t, errors.As(err, &one), "each conflict is reachable with errors.As")
			assert.Equal(t, on(BetaOn), view(target.Gate, allFeatures...), "the process gate is untouched")
			assert.False(t, b.Applied())
		})
	}
}

// TestUpstream_ConflictingEmulatedVersion_LastParserWinsSilently: two
// different --emulated-version values. Each AddFlags binds a new pflag
// string-slice value to the registry's one emulationVersionConfig slice; the
// next component's parse replaces it, and its Set() moves the shared
// effective version and gate. The last parser wins; a later component that
// gives no --emulated-version inherits it (its own flag reports the other's
// value). KEP-4330 makes this worse than a gate conflict: the emulated version
// changes the default of every gate, so BetaOn (on by default since 1.36)
// goes off under the component that asked for 1.36. Set() returns no error;
// upstream's only signal is one info-level "Warning:" log line from the
// feature gate, and only for features somebody had already queried.
func TestUpstream_ConflictingEmulatedVersion_LastParserWinsSilently(t *testing.T) {
	for _, tc := range []struct {
		name             string
		first, second    string // --emulated-version of the apiserver, then the scheduler
		wantEmu, wantMin string
		wantBetaOn       bool
	}{
		{name: "1.36 then 1.35: 1.35 wins", first: "1.36", second: "1.35", wantEmu: "1.35", wantMin: "1.34", wantBetaOn: false},
		{name: "1.35 then 1.36: 1.36 wins", first: "1.35", second: "1.36", wantEmu: "1.36", wantMin: "1.35", wantBetaOn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureKlog(t)
			u := newUpstream(t)

			_, err := u.run(apiserver, "--emulated-version="+tc.first)
			require.NoError(t, err)
			assert.Equal(t, tc.first, u.version.EmulationVersion().String(), "%s sees what it asked for, at first", apiserver)
			betaOnBefore := u.gate.Enabled(BetaOn) // the running apiserver queries a gate

			_, err = u.run(scheduler, "--emulated-version="+tc.second)
			require.NoError(t, err, "upstream Set() returns no error")
			fsKCM, err := u.run(kcm)
			require.NoError(t, err)

			assert.Equal(t, tc.wantEmu, u.version.EmulationVersion().String(), "the last parser wins: registry's kube effective version")
			assert.Equal(t, tc.wantMin, u.version.MinCompatibilityVersion().String(), "min-compatibility follows the winner")
			assert.Equal(t, tc.wantEmu, u.gate.EmulationVersion().String(), "the kube gate emulates the winner")
			assert.Equal(t, "["+tc.wantEmu+"]", flagValue(fsKCM, "emulated-version"), "%s, which set nothing, reports the winner as its own flag", kcm)
			assert.Equal(t, !tc.wantBetaOn, betaOnBefore, "what the apiserver saw at %s", tc.first)
			assert.Equal(t, tc.wantBetaOn, u.gate.Enabled(BetaOn), "BetaOn's default changes under the apiserver")

			var warnings []string
			for _, l := range logs() {
				if strings.Contains(l, "will change already queried feature") {
					warnings = append(warnings, l)
				}
			}
			require.Len(t, warnings, 1, "logs: %q", logs())
			// component-base v0.36+ logs the feature as a key; v0.34 and
			// v0.35 format it into the message ("…feature:BetaOn from true to false").
			assert.Regexp(t, `"featureGate"="BetaOn"|feature:BetaOn from`, warnings[0])
			assert.Len(t, logs(), 1, "nothing else is logged at the default verbosity: %q", logs())
		})
	}
}

// TestHarness_ConflictingEmulatedVersion_ReportedAsConflictError: the same
// arguments through scoping: a *scoping.ConflictError naming
// --emulated-version, both components and their flag text; the process
// registry's kube version and the process gate stay at the binary's 1.37.
func TestHarness_ConflictingEmulatedVersion_ReportedAsConflictError(t *testing.T) {
	target := newTarget(t)
	b, err := scoping.NewBarrier(target, scoping.WithLogger(testr.New(t)))
	require.NoError(t, err)
	for _, c := range []component{
		{apiserver, []string{"--emulated-version=1.36"}},
		{scheduler, []string{"--emulated-version=1.35"}},
		{kcm, nil},
	} {
		_, err := parseScope(b, c.name, c.args...)
		require.NoError(t, err, c.name)
	}

	plan, err := b.Reconcile()
	assert.Nil(t, plan)
	var ce *scoping.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1, err.Error())
	assert.Equal(t, &scoping.Conflict{
		Kind:    scoping.EmulatedVersionConflict,
		Setting: "--emulated-version",
		Requests: []scoping.Request{
			{Component: apiserver, Value: "1.36", Flag: "--emulated-version=1.36"},
			{Component: scheduler, Value: "1.35", Flag: "--emulated-version=1.35"},
		},
	}, ce.Conflicts[0])
	for _, text := range []string{apiserver, scheduler, "--emulated-version=1.36", "--emulated-version=1.35"} {
		assert.Contains(t, err.Error(), text)
	}

	ev := target.Registry.EffectiveVersionFor(scoping.KubeComponent)
	assert.Equal(t, "1.37", ev.EmulationVersion().String(), "process registry's kube version untouched")
	assert.Equal(t, "1.37", target.Gate.EmulationVersion().String(), "process gate untouched")
	assert.Equal(t, on(BetaOn), view(target.Gate, allFeatures...))
}
