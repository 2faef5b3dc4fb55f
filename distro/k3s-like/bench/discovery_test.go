package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiscoveryShare(t *testing.T) {
	a := result{kind: "A", rssLoaded: 400 * 1024, anonLoaded: 300 * 1024}
	b := result{kind: "B", rssLoaded: 600 * 1024, anonLoaded: 400 * 1024,
		procRSSLoaded: map[string][2]int64{discoveryProcess: {100 * 1024, 100 * 1024}}}
	var sb strings.Builder
	renderDiscoveryShare(&sb, scaleRuns{a: []result{a}, b: []result{b}})
	assert.Contains(t, sb.String(), "RSS 100.00 MiB")
	assert.Contains(t, sb.String(), "RSS after the workload 0.80, RSS anon after the workload 1.00", "A/B against B less its fifth process")

	sb.Reset()
	b.procRSSLoaded = nil
	renderDiscoveryShare(&sb, scaleRuns{a: []result{a}, b: []result{b}})
	assert.Empty(t, sb.String(), "a B without the process: nothing to say")
}

func TestWritePlan(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, writePlan(dir, []byte(`{"components":[],"plan":{"features":[]}}`)))
	_, err := os.Stat(filepath.Join(dir, discoveryPlanFile))
	require.NoError(t, err)
	assert.ErrorContains(t, writePlan(dir, []byte(`{"components":[]}`)), "no plan")
	assert.ErrorContains(t, writePlan(dir, []byte(`not json`)), "--dry-run -o json")
}

func TestTargets(t *testing.T) {
	a := result{kind: "A", toReady: 85, rssLoaded: 80, anonLoaded: 101, cpuStart: 0, cpuLoaded: 90, cpuReady: 1}
	b := result{kind: "B", toReady: 100, rssLoaded: 100, anonLoaded: 100, cpuStart: 0, cpuLoaded: 100, cpuReady: 1}
	var sb strings.Builder
	renderTargets(&sb, scaleRuns{a: []result{a}, b: []result{b}})
	out := sb.String()
	assert.Contains(t, out, "time to ready ≤ 0.90×: **0.85× — met**")
	assert.Contains(t, out, "RSS after workload ≤ 1.00×: **0.80× — met**")
	assert.Contains(t, out, "RSS anon after workload ≤ 1.00×: **1.01× — missed**")
	assert.Contains(t, out, "CPU total (exec → all bound) ≤ 1.00×: **0.90× — met**")
	assert.Contains(t, out, "apiserver p99 (request kinds both make) ≤ 1.10×: **–× —", "no latency measured: no ratio")
}
