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
