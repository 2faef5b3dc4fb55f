package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latencySeries is one verb/resource's cumulative latencyMetric buckets (le 0.1,
// 1, +Inf) as the apiserver prints them.
func latencySeries(verb, resource, sub string, le01, le1, inf int) string {
	var b strings.Builder
	for _, x := range []struct {
		le string
		n  int
	}{{"0.1", le01}, {"1", le1}, {"+Inf", inf}} {
		fmt.Fprintf(&b, "%s_bucket{component=\"apiserver\",dry_run=\"\",group=\"\",resource=%q,scope=\"cluster\",subresource=%q,verb=%q,version=\"v1\",le=%q} %d\n", latencyMetric, resource, sub, verb, x.le, x.n)
	}
	return b.String()
}

// window is the histogram between two expositions of latencySeries.
func window(t *testing.T, before, after string) histogram {
	t.Helper()
	typ := "# TYPE " + latencyMetric + " histogram\n"
	b, err := parseLatency([]byte(typ + before))
	require.NoError(t, err)
	a, err := parseLatency([]byte(typ + after))
	require.NoError(t, err)
	return a.since(b)
}

// TestSameKindsP99: the p99 of the kinds both sides make leaves out, on
// both sides, what only one side does, however slow, and keeps what both do.
func TestSameKindsP99(t *testing.T) {
	empty := latencySeries("LIST", "pods", "", 0, 0, 0)
	// A: 100 fast LISTs of pods, and 50 slow APPLYs of features (A only).
	// B: 100 fast LISTs of pods, 1 of them slow, and 50 slow GETs of namespaces (B only).
	a := window(t, empty, latencySeries("LIST", "pods", "", 100, 100, 100)+latencySeries("APPLY", "features", "", 0, 50, 50))
	b := window(t, empty, latencySeries("LIST", "pods", "", 99, 100, 100)+latencySeries("GET", "namespaces", "", 0, 50, 50)+latencySeries("WATCH", "pods", "", 0, 0, 9))

	both, onlyA, onlyB := requestMix([]histogram{a}, []histogram{b})
	assert.Equal(t, map[string]bool{"LIST pods": true}, both)
	assert.Equal(t, []string{"APPLY features"}, onlyA)
	assert.Equal(t, []string{"GET namespaces"}, onlyB, "watches are not in the mix")

	// Over every kind, each side's p99 is its own slow kind's.
	assert.Greater(t, a.quantile(0.99), 0.5)
	assert.Greater(t, b.quantile(0.99), 0.5)
	// Over the same kinds: A's LISTs all under 0.1 s, B's 99th in (0.1, 1].
	sa, sb := a.only(both), b.only(both)
	assert.Equal(t, 100.0, sa.count())
	assert.Equal(t, 100.0, sb.count())
	assert.InDelta(t, 0.099, sa.quantile(0.99), 1e-9)
	assert.InDelta(t, 0.1, sb.quantile(0.99), 1e-9)
	assert.True(t, math.IsNaN(a.only(map[string]bool{"GET namespaces": true}).quantile(0.99)), "a kind A did not make: no requests")

	// A kind one side made in only one of its runs is in both.
	a2 := window(t, empty, latencySeries("LIST", "pods", "", 10, 10, 10)+latencySeries("GET", "namespaces", "", 1, 1, 1))
	both, onlyA, onlyB = requestMix([]histogram{a, a2}, []histogram{b})
	assert.Equal(t, map[string]bool{"LIST pods": true, "GET namespaces": true}, both)
	assert.Equal(t, []string{"APPLY features"}, onlyA)
	assert.Empty(t, onlyB)
}

// TestReportRequestMix: each scale's section lists the mix side by side,
// says what the same-kinds p99 leaves out, and its figure is in the tables.
func TestReportRequestMix(t *testing.T) {
	empty := latencySeries("LIST", "pods", "", 0, 0, 0)
	rs := fakeRuns()
	for i := range rs {
		if rs[i].kind == "A" {
			rs[i].latency = window(t, empty, latencySeries("LIST", "pods", "", 100, 100, 100)+latencySeries("APPLY", "features", "", 0, 254, 254))
		} else {
			rs[i].latency = window(t, empty, latencySeries("LIST", "pods", "", 50, 100, 100)+latencySeries("GET", "namespaces", "", 29, 29, 29))
		}
	}
	out, err := render(config{pairs: 2}, rs, nil, time.Minute, "0.1 0.2 0.3", "`abc`")
	require.NoError(t, err)
	assert.Contains(t, out, "| `APPLY features` | 254 | 0 | A only |")
	assert.Contains(t, out, "| `GET namespaces` | 0 | 29 | B only |")
	assert.Contains(t, out, "| `LIST pods` | 100 | 100 |  |")
	assert.Contains(t, out, "it leaves out 1 kinds only A made (254 requests, median), 1 only B made (29)")
	// A's LISTs under 0.1 s (p99 99 ms), B's half in (0.1, 1] (p99 0.982 s).
	assert.Contains(t, out, "| "+p99Same+" | 99.00 ms (99.00–99.00) | 982.00 ms (982.00–982.00) | 0.10 |")
	assert.Contains(t, out, "| "+p99Same+" | 0.10 | 0.10 |", "the summary by scale")
	// Over every request A's slow APPLYs make its p99 about B's.
	assert.Contains(t, out, "| "+p99All+" | 1.01 | 1.01 |")
}

// featureRequests counts every verb on the feature discovery's resources,
// subresources included, and nothing else.
func TestFeatureRequests(t *testing.T) {
	empty := latencySeries("LIST", "pods", "", 0, 0, 0)
	h := window(t, empty, latencySeries("APPLY", "features", "", 0, 254, 254)+
		latencySeries("APPLY", "features", "status", 0, 254, 254)+
		latencySeries("GET", "nodefeaturereports", "", 3, 3, 3)+
		latencySeries("LIST", "pods", "", 7, 7, 7)+
		latencySeries("GET", "featuregates", "", 5, 5, 5))
	assert.Equal(t, 511.0, h.featureRequests())
	assert.Equal(t, 0.0, window(t, empty, empty).featureRequests())
}
