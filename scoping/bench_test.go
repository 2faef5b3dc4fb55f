package scoping_test

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	"github.com/kubeharness/kubeharness/scoping"
)

// syntheticFeatures is a gate shaped like kube's: n features, each with one to
// three versioned specs (alpha → beta → GA, some locked), as the real kube
// gate has about 600.
func syntheticFeatures(n int) map[featuregate.Feature]featuregate.VersionedSpecs {
	v := version.MustParse
	out := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for i := range n {
		name := featuregate.Feature(fmt.Sprintf("Feature%03d", i))
		switch i % 3 {
		case 0:
			out[name] = featuregate.VersionedSpecs{{Version: v("1.35"), PreRelease: featuregate.Alpha}}
		case 1:
			out[name] = featuregate.VersionedSpecs{
				{Version: v("1.33"), PreRelease: featuregate.Alpha},
				{Version: v("1.35"), Default: true, PreRelease: featuregate.Beta},
			}
		default:
			out[name] = featuregate.VersionedSpecs{
				{Version: v("1.31"), PreRelease: featuregate.Alpha},
				{Version: v("1.33"), Default: true, PreRelease: featuregate.Beta},
				{Version: v("1.36"), Default: true, PreRelease: featuregate.GA, LockToDefault: i%2 == 0},
			}
		}
	}
	return out
}

// componentArgs: component c sets three alpha features of its own and the
// emulated version every component agrees on.
func componentArgs(c int) []string {
	f := func(k int) string { return fmt.Sprintf("Feature%03d=true", (3*(3*c+k))%600) }
	return []string{"--feature-gates=" + f(0) + "," + f(1) + "," + f(2), "--emulated-version=1.36"}
}

// processState is a fresh copy of the process gate and registry, the same
// for both ways: each iteration starts from an untouched process.
func processState(b *testing.B, base featuregate.MutableVersionedFeatureGate) scoping.Target {
	gate := base.DeepCopy()
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(scoping.KubeComponent, newEffectiveVersion(), gate); err != nil {
		b.Fatal(err)
	}
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: newEffectiveVersion}
}

// BenchmarkBarrier compares, per component, the scoped way (own scope per
// component, reconcile, apply once) with upstream's way (one shared registry,
// a flag set per component bound with AddFlags, parse, Set). The ns/component
// metric is the figure to compare; `make bench` prints both side by side.
func BenchmarkBarrier(b *testing.B) {
	features := syntheticFeatures(600)
	for _, n := range []int{1, 3, 16, 64} {
		b.Run(fmt.Sprintf("scoped/components=%d", n), func(b *testing.B) {
			base := newTarget(b, features).Gate
			b.ReportAllocs()
			for b.Loop() {
				target := processState(b, base)
				bar, err := scoping.NewBarrier(target, scoping.WithLogger(logr.Discard()))
				if err != nil {
					b.Fatal(err)
				}
				for c := range n {
					s, err := bar.NewScope(fmt.Sprintf("c%d", c))
					if err != nil {
						b.Fatal(err)
					}
					s.AddFlags()
					if err := s.Parse(componentArgs(c)); err != nil {
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
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/component")
		})
		b.Run(fmt.Sprintf("shared/components=%d", n), func(b *testing.B) {
			base := newTarget(b, features).Gate
			b.ReportAllocs()
			for b.Loop() {
				reg := processState(b, base).Registry
				for c := range n {
					fs := pflag.NewFlagSet(fmt.Sprintf("c%d", c), pflag.ContinueOnError)
					reg.AddFlags(fs)
					if err := fs.Parse(componentArgs(c)); err != nil {
						b.Fatal(err)
					}
					if err := reg.Set(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/component")
		})
	}
}
