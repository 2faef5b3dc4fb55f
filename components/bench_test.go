package components_test

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	kasopts "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmopts "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedopts "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/scoping"
)

// benchArgs: each component sets its own alpha gate, as in the three-gate
// test.
var benchArgs = map[string][]string{
	components.APIServerName:         {"--feature-gates=" + apiserverGate + "=true"},
	components.SchedulerName:         {"--feature-gates=" + schedulerGate + "=true"},
	components.ControllerManagerName: {"--feature-gates=" + controllerGate + "=true"},
}

// freshProcess is a fresh copy of the real process gate — every feature of
// k8s.io/kubernetes/pkg/features and the generic apiserver, client-go and
// logging features, registered by the packages the adapters import — in a
// fresh registry: each iteration starts from an untouched process, the same
// for both ways.
func freshProcess(b *testing.B, base featuregate.MutableVersionedFeatureGate) scoping.Target {
	gate := base.DeepCopy()
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(scoping.KubeComponent, apiservercompat.DefaultBuildEffectiveVersion(), gate); err != nil {
		b.Fatal(err)
	}
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: apiservercompat.DefaultBuildEffectiveVersion}
}

// BenchmarkBarrier compares, at three components with the real kube gate,
// the scoped way (a scope per component through the real adapters'
// AddFlags, Parse, then Reconcile and Apply once) with upstream's way (one
// shared registry; each component's upstream options bound to it, its flags
// parsed, Set()). Both build the same upstream options, so the difference
// is what scoping costs. ns/component is the figure to compare.
func BenchmarkBarrier(b *testing.B) {
	base := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	b.Logf("the kube gate has %d features (%d at the binary version)", len(base.GetAllVersioned()), len(base.GetAll()))
	const n = 3
	b.Run("scoped/components=3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bar, err := scoping.NewBarrier(freshProcess(b, base), scoping.WithLogger(logr.Discard()))
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range allAdapters() {
				s, err := bar.NewScope(c.Name())
				if err != nil {
					b.Fatal(err)
				}
				if err := c.AddFlags(s); err != nil {
					b.Fatal(err)
				}
				if err := s.Parse(benchArgs[c.Name()]); err != nil {
					b.Fatal(err)
				}
			}
			plan, err := bar.Reconcile()
			if err != nil {
				b.Fatal(err)
			}
			if err := bar.Apply(plan); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/component")
	})
	b.Run("shared/components=3", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			reg := freshProcess(b, base).Registry
			parse := func(name string, nfs cliflag.NamedFlagSets) {
				fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
				for _, f := range nfs.FlagSets {
					fs.AddFlagSet(f)
				}
				if err := fs.Parse(benchArgs[name]); err != nil {
					b.Fatal(err)
				}
				if err := reg.Set(); err != nil {
					b.Fatal(err)
				}
			}
			api := kasopts.NewServerRunOptions()
			api.GenericServerRunOptions.ComponentGlobalsRegistry = reg
			parse(components.APIServerName, api.Flags())

			sched := schedopts.NewOptionsWithComponentGlobalsRegistry(reg)
			parse(components.SchedulerName, *sched.Flags)

			kcm, err := kcmopts.NewKubeControllerManagerOptions()
			if err != nil {
				b.Fatal(err)
			}
			kcm.ComponentGlobalsRegistry = reg
			parse(components.ControllerManagerName, kcm.Flags(kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/component")
	})
}
