package scoping_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/scoping"
)

// TestConcurrentParseStress creates and parses 3 to 16 scopes concurrently,
// 1,000 times, then reconciles and applies. Under -race (make test) any
// shared write between scopes fails the test; the assertions check that
// every component's disjoint gate is applied each time.
func TestConcurrentParseStress(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 100
	}
	features := testFeatures()
	gates := []string{AlphaA, AlphaB, AlphaC}
	for i := range iterations {
		n := 3 + i%14
		b, err := scoping.NewBarrier(newTarget(t, features))
		require.NoError(t, err)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for c := range n {
			wg.Go(func() {
				s, err := b.NewScope(fmt.Sprintf("component-%d", c))
				if err != nil {
					errs[c] = err
					return
				}
				addComponentFlags(s)
				errs[c] = s.Parse([]string{fg(gates[c%3] + "=true"), "-v=2", "--emulated-version=1.36"})
			})
		}
		wg.Wait()
		for c, err := range errs {
			require.NoError(t, err, "iteration %d component %d", i, c)
		}
		plan, err := b.Reconcile()
		require.NoError(t, err, "iteration %d", i)
		require.Len(t, plan.Components, n)
		require.Equal(t, map[string]bool{AlphaA: true, AlphaB: true, AlphaC: true}, plan.Overrides, "iteration %d", i)
		require.NoError(t, b.Apply(plan))
	}
}
