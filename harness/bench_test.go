package harness_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// BenchmarkHarness measures the harness's own overhead for a whole life
// cycle — scopes, parse, barrier, start in order with readiness, stop in
// reverse — with trivial components (the last one cancels the run once it
// starts). ns/component is the per-component figure.
func BenchmarkHarness(b *testing.B) {
	quiet := funcr.New(func(string, string) {}, funcr.Options{})
	for _, n := range []int{3, 32} {
		b.Run(fmt.Sprintf("components=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo", "Bar"))
				if err != nil {
					b.Fatal(err)
				}
				h := &harness.Harness{Target: &target, Logger: quiet}
				ctx, cancel := context.WithCancel(context.Background())
				for i := range n {
					var deps []string
					if i > 0 {
						deps = []string{fmt.Sprintf("c%d", (i-1)/2)} // a binary tree of dependencies
					}
					last := i == n-1
					c := &harness.Func{ComponentName: fmt.Sprintf("c%d", i),
						FlagsFunc: func(s *scoping.Scope) error { s.AddFlags(); return nil },
						RunFunc: func(ctx context.Context) error {
							if last {
								cancel()
							}
							<-ctx.Done()
							return nil
						}}
					if err := h.Add(c, []string{"--feature-gates=Foo=true"}, deps...); err != nil {
						b.Fatal(err)
					}
				}
				if err := h.Run(ctx); err != nil {
					b.Fatal(err)
				}
				cancel()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/component")
		})
	}
}
