package scoping_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// exampleTarget stands in for scoping.ProcessTarget(), which a binary uses:
// a kube gate with three alpha features, binary version 1.37.
func exampleTarget() scoping.Target {
	gate := featuregate.NewVersionedFeatureGate(version.MustParse("1.37"))
	alpha := featuregate.VersionedSpecs{{Version: version.MustParse("1.35"), PreRelease: featuregate.Alpha}}
	if err := gate.AddVersioned(map[featuregate.Feature]featuregate.VersionedSpecs{"Foo": alpha, "Bar": alpha, "Baz": alpha}); err != nil {
		panic(err)
	}
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(scoping.KubeComponent, newEffectiveVersion(), gate); err != nil {
		panic(err)
	}
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: newEffectiveVersion}
}

// The k3s#11853 scenario: three components with their own gates in one
// process. Each parses in its own scope; the barrier applies all three.
func ExampleBarrier() {
	target := exampleTarget()
	b, _ := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	for name, args := range map[string][]string{
		"kube-apiserver":          {"--feature-gates=Foo=true"},
		"kube-scheduler":          {"--feature-gates=Bar=true"},
		"kube-controller-manager": {"--feature-gates=Baz=true", "--emulated-version=1.36"},
	} {
		s, _ := b.NewScope(name)
		s.AddFlags() // a real component adds its upstream flags, bound to s.Registry()
		if err := s.Parse(args); err != nil {
			fmt.Println(err)
			return
		}
	}
	plan, err := b.Reconcile()
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Apply(plan); err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range []featuregate.Feature{"Foo", "Bar", "Baz"} {
		fmt.Printf("%s=%v\n", f, target.Gate.Enabled(f))
	}
	fmt.Println("emulating", target.Registry.EffectiveVersionFor(scoping.KubeComponent).EmulationVersion())
	// Output:
	// Foo=true
	// Bar=true
	// Baz=true
	// emulating 1.36
}

// Two components asking for different values of one feature: the barrier
// names both, with their flags, and nothing is applied.
func ExampleConflictError() {
	target := exampleTarget()
	b, _ := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
	for _, c := range []struct{ name, arg string }{
		{"kube-apiserver", "--feature-gates=Foo=true"},
		{"kube-scheduler", "--feature-gates=Foo=false"},
	} {
		s, _ := b.NewScope(c.name)
		s.AddFlags()
		_ = s.Parse([]string{c.arg})
	}
	_, err := b.Reconcile()
	fmt.Println(err)
	var conflict *scoping.Conflict
	if errors.As(err, &conflict) {
		fmt.Println(conflict.Components())
	}
	fmt.Println("Foo applied:", target.Gate.Enabled("Foo"))
	// Output:
	// components conflict on 1 process-wide setting:
	//   feature gate "Foo": kube-apiserver sets true (--feature-gates=Foo=true), kube-scheduler sets false (--feature-gates=Foo=false)
	// [kube-apiserver kube-scheduler]
	// Foo applied: false
}

// The plan as a table: who asked for what, with which flag. The status
// endpoint and a dry run print this.
func ExamplePlan_WriteTable() {
	b, _ := scoping.NewBarrier(exampleTarget(), scoping.WithLogger(logr.Discard()))
	for _, c := range []struct{ name, arg string }{{"kube-apiserver", "--feature-gates=Foo=true"}, {"kube-scheduler", "--feature-gates=AllAlpha=true"}} {
		s, _ := b.NewScope(c.name)
		s.AddFlags()
		_ = s.Parse([]string{c.arg})
	}
	plan, _ := b.Reconcile()
	_ = plan.WriteTable(os.Stdout, scoping.ChangedFeatures)
	// Output:
	// EMULATED: 1.37  MIN-COMPATIBILITY: 1.36  BINARY: 1.37
	//
	// NAME      STAGE  ENABLED  DEFAULT  SOURCE  SET-BY
	// AllAlpha  Alpha  true     false    flag    kube-scheduler --feature-gates=AllAlpha=true
	// Bar       Alpha  true     false    flag    kube-scheduler --feature-gates=AllAlpha=true
	// Baz       Alpha  true     false    flag    kube-scheduler --feature-gates=AllAlpha=true
	// Foo       Alpha  true     false    flag    kube-apiserver --feature-gates=Foo=true; kube-scheduler --feature-gates=AllAlpha=true
}
