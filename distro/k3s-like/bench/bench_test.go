package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
)

func TestParseScales(t *testing.T) {
	got, err := parseScales("150, 1500,5000,20,1000")
	if err != nil {
		t.Fatal(err)
	}
	want := []scale{
		{nodes: 10, deployments: 50, replicas: 3},
		{nodes: 50, deployments: 150, replicas: 10},
		{nodes: 100, deployments: 250, replicas: 20},
		{nodes: 3, deployments: 7, replicas: 3},
		{nodes: 20, deployments: 100, replicas: 10},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("scale %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"", "x", "0", "-5", ","} {
		if _, err := parseScales(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

const metricsBefore = `# HELP apiserver_request_duration_seconds [STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.
# TYPE apiserver_request_duration_seconds histogram
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1",le="0.1"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1",le="1"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1",le="+Inf"} 10
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1",le="0.1"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1",le="1"} 0
apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="WATCH",version="v1",le="+Inf"} 50
apiserver_request_duration_seconds_sum{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 0.5
apiserver_request_duration_seconds_count{component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 10
apiserver_request_total{code="200"} 99
`

func TestLatencyQuantile(t *testing.T) {
	before, err := parseLatency([]byte(metricsBefore))
	if err != nil {
		t.Fatal(err)
	}
	// 100 more requests: 50 under 0.1 s, 40 in (0.1, 1], 10 above 1 s;
	// and many watches, which must not count.
	after := strings.NewReplacer(`le="0.1"} 10`, `le="0.1"} 60`, `le="1"} 10`, `le="1"} 100`, `le="+Inf"} 10`, `le="+Inf"} 110`, `le="+Inf"} 50`, `le="+Inf"} 5000`).Replace(metricsBefore)
	a, err := parseLatency([]byte(after))
	if err != nil {
		t.Fatal(err)
	}
	d := a.since(before)
	if d.count() != 100 {
		t.Fatalf("count %v, want 100", d.count())
	}
	if got := d.kinds["LIST pods"]; got != 100 {
		t.Errorf("LIST pods: %v, want 100", got)
	}
	if got := d.quantile(0.5); got != 0.1 {
		t.Errorf("p50 %v, want 0.1", got)
	}
	// 0.7 × 100 = the 20th of the 40 in (0.1, 1]: 0.1 + 0.9 × 20/40.
	if got := d.quantile(0.7); math.Abs(got-0.55) > 1e-9 {
		t.Errorf("p70 %v, want 0.55", got)
	}
	// In the +Inf bucket: the largest finite bound.
	if got := d.quantile(0.99); got != 1 {
		t.Errorf("p99 %v, want 1", got)
	}
	if got := (histogram{}).quantile(0.99); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN", got)
	}
	if _, err := parseLatency([]byte("other_metric 1\n")); err == nil {
		t.Error("no buckets: no error")
	}
	if _, err := parseLatency([]byte(strings.Replace(metricsBefore, `le="1"} 10`, `le="one"} 10`, 1))); err == nil {
		t.Error("a malformed bound: no error")
	}
}

// fakeRuns are two pairs at two scales.
func fakeRuns() []result {
	var rs []result
	for _, s := range []scale{presets[150], presets[1500]} {
		for pair := 1; pair <= 2; pair++ {
			for _, kind := range []string{"A", "B"} {
				f := 1.0
				if kind == "B" {
					f = 1.4
				}
				f *= float64(s.pods()) / 150
				rs = append(rs, result{
					kind: kind, scale: s, pair: pair,
					toReady: 3 * time.Second, workload: time.Duration(f) * time.Second, stop: time.Second,
					rssReady: int64(300 * 1024 * f), anonReady: int64(200 * 1024 * f),
					rssLoaded: int64(400 * 1024 * f), anonLoaded: int64(300 * 1024 * f),
					cpuReady: 3 * time.Second, cpuStart: 3 * time.Second, cpuLoaded: time.Duration(5*f+float64(pair)) * time.Second,
					procCPUStart:  map[string]time.Duration{"etcd": time.Second},
					procCPULoaded: map[string]time.Duration{"etcd": 2 * time.Second},
					harnessPhases: 10 * time.Millisecond,
				})
			}
		}
	}
	return rs
}

func TestReportAndCharts(t *testing.T) {
	dir := t.TempDir()
	rs := fakeRuns()
	charts, err := drawCharts(dir, rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range charts {
		b, err := os.ReadFile(filepath.Join(dir, ch))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "<svg") {
			t.Errorf("%s is not an SVG", ch)
		}
	}
	report, err := render(config{pairs: 2}, rs, charts, time.Minute, "0.1 0.2 0.3", "`abc`")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## 150 Pods (10 Nodes, 50 Deployments × 3)", "## 1500 Pods (50 Nodes, 150 Deployments × 10)", "![rss](rss.svg)", "| **median** |", "| etcd | 1.00 s |"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(report, "A by component") {
		t.Error("a per-component column without data from the hook")
	}
	// A profiled run of A gives the per-component column and the
	// unlabelled split; it is in no pair and in none of A's medians.
	prof := rs[0]
	prof.profiled, prof.toReady = true, time.Hour
	prof.componentCPU = map[string]time.Duration{"kube-apiserver": time.Second, "": time.Second / 2}
	prof.unlabelledCPU = map[string]time.Duration{"runtime: GC mark workers": time.Second / 2}
	prof.workCPU = map[string]time.Duration{profshare.WorkTLS: 150 * time.Millisecond, profshare.WorkSocket: 150 * time.Millisecond, profshare.WorkGC: time.Second / 2, profshare.WorkOther: 700 * time.Millisecond}
	withProf, _ := render(config{pairs: 2}, append(slices.Clone(rs), prof), charts, time.Minute, "0.1 0.2 0.3", "`abc`")
	for _, want := range []string{"A by component", "(unlabelled)", "| runtime: GC mark workers | 0.50 s | 33.3% |", "taken in 1 more run(s) of A",
		"| TLS and crypto | 0.15 s | 10.0% |", "| HTTP/2 framing | 0.00 s | 0.0% |", "| **transport (the first four)** | **0.30 s** | **20.0%** |"} {
		if !strings.Contains(withProf, want) {
			t.Errorf("the report with a profiled run lacks %q", want)
		}
	}
	if strings.Contains(withProf, "3600") || strings.Contains(withProf, "| 3 |") {
		t.Error("the profiled run is in A's figures or the pairs")
	}
}

func TestAEnv(t *testing.T) {
	var c config
	require.NoError(t, c.aEnv.Set("GOGC=70"))
	require.NoError(t, c.aEnv.Set("GOMEMLIMIT=1GiB"))
	for _, bad := range []string{"GOGC", "=70", ""} {
		assert.Error(t, c.aEnv.Set(bad), "%q", bad)
	}
	assert.Equal(t, "GOGC=70 GOMEMLIMIT=1GiB", c.aEnv.String())
	a, b := c.envA(), c.env()
	assert.Equal(t, []string{"GOGC=70", "GOMEMLIMIT=1GiB"}, a[len(a)-2:], "A gets them last (they win)")
	assert.NotContains(t, b, "GOGC=70", "B does not")
}
