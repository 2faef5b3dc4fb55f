package scoping_test

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// fuzzScope parses args in a fresh scope of a fresh hermetic target.
func fuzzScope(t *testing.T, args []string) (scoping.Target, *scoping.Barrier, *scoping.Scope, error) {
	target := newTarget(t, testFeatures())
	b, err := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.NewScope("fuzzed")
	if err != nil {
		t.Fatal(err)
	}
	addComponentFlags(s)
	return target, b, s, s.Parse(args)
}

// checkParseOutcome holds for any input: a failed parse is a *FlagError for
// the component and changes nothing process-wide; a successful one reconciles
// and applies, and the process gate then answers as the scope asked.
func checkParseOutcome(t *testing.T, target scoping.Target, b *scoping.Barrier, s *scoping.Scope, err error) {
	t.Helper()
	if err != nil {
		var fe *scoping.FlagError
		if !errors.As(err, &fe) || fe.Component != "fuzzed" {
			t.Fatalf("parse error is not a *FlagError for the component: %#v", err)
		}
		for name := range testFeatures() {
			if target.Gate.(featuregate.MutableVersionedFeatureGate).ExplicitlySet(name) {
				t.Fatalf("a failed parse set %s on the process gate", name)
			}
		}
		if v := target.Registry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion(); !v.EqualTo(version.MajorMinor(1, 37)) {
			t.Fatalf("a failed parse changed the process emulation version to %s", v)
		}
		return
	}
	plan, err := b.Reconcile()
	if err != nil {
		t.Fatalf("one valid scope cannot conflict with itself: %v", err)
	}
	if err := b.Apply(plan); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for name, r := range s.Requested().Features {
		if got := target.Gate.Enabled(featuregate.Feature(name)); (r.Value == "true") != got {
			t.Fatalf("%s: asked %s (%s), process gate says %v", name, r.Value, r.Flag, got)
		}
	}
	ev, sev := target.Registry.EffectiveVersionFor(scoping.KubeComponent), s.EffectiveVersion()
	if !ev.EmulationVersion().EqualTo(sev.EmulationVersion()) || !ev.MinCompatibilityVersion().EqualTo(sev.MinCompatibilityVersion()) {
		t.Fatalf("process version %s, scope version %s", ev, sev)
	}
	if errs := ev.Validate(); len(errs) > 0 {
		t.Fatalf("applied an invalid version: %v", errs)
	}
}

func FuzzFeatureGates(f *testing.F) {
	for _, seed := range []string{"AlphaA=true", "AlphaA=true,AlphaB=false", "kube:AlphaA=true", "AllAlpha=true", "LockedGA=false", "NeedsAlpha=true,AlphaA=true", ",,AlphaA=1", "wardle:X=true", "AlphaA=maybe", "=true"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		target, b, s, err := fuzzScope(t, []string{"--feature-gates=" + value})
		checkParseOutcome(t, target, b, s, err)
	})
}

func FuzzVersions(f *testing.F) {
	for _, seed := range [][2]string{{"1.36", "1.35"}, {"1.35", ""}, {"", "1.36"}, {"kube=1.34", "kube=1.34"}, {"1.36.1", ""}, {"1.38", ""}, {"v1.36", ""}, {"1.35", "1.36"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, emulated, minCompat string) {
		var args []string
		if emulated != "" {
			args = append(args, "--emulated-version="+emulated)
		}
		if minCompat != "" {
			args = append(args, "--min-compatibility-version="+minCompat)
		}
		target, b, s, err := fuzzScope(t, args)
		checkParseOutcome(t, target, b, s, err)
	})
}
