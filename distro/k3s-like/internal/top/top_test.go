package top

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
	"github.com/kubeharness/kubeharness/harness"
)

// topSample is one sample of a synthetic profile: its value (CPU
// nanoseconds, or goroutines) and its labels (nil: none).
type topSample struct {
	value  int64
	labels map[string][]string
}

func ofComponent(component string, value int64) topSample {
	return topSample{value: value, labels: map[string][]string{harness.ProfileLabel: {component}}}
}

// syntheticProfile is a profile as /debug/pprof serves it (gzipped
// protobuf) with one stack and these samples: a CPU profile (samples/count
// and cpu/nanoseconds, as runtime/pprof writes them) when cpu, else a
// goroutine profile (goroutine/count).
func syntheticProfile(t *testing.T, cpu bool, duration time.Duration, samples ...topSample) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "k8s.io/apiserver/pkg/server.(*APIServerHandler).ServeHTTP", SystemName: "k8s.io/apiserver/pkg/server.(*APIServerHandler).ServeHTTP", Filename: "handler.go"}
	loc := &profile.Location{ID: 1, Address: 0x1000, Line: []profile.Line{{Function: fn, Line: 42}}}
	p := &profile.Profile{
		Function:      []*profile.Function{fn},
		Location:      []*profile.Location{loc},
		TimeNanos:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano(),
		DurationNanos: int64(duration),
	}
	const period = int64(10 * time.Millisecond)
	if cpu {
		p.SampleType = []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}
		p.PeriodType, p.Period = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, period
	} else {
		p.SampleType = []*profile.ValueType{{Type: "goroutine", Unit: "count"}}
		p.PeriodType, p.Period = &profile.ValueType{Type: "goroutine", Unit: "count"}, 1
	}
	for _, s := range samples {
		value := []int64{s.value}
		if cpu {
			value = []int64{s.value / period, s.value}
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: value, Label: s.labels})
	}
	require.NoError(t, p.CheckValid())
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	return buf.Bytes()
}

const sec = int64(time.Second)

func gzipped(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	_, err := gz.Write(b)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestTopReportAddsUpByComponent(t *testing.T) {
	// Two pieces of one CPU profile, samples with and without a component
	// label, one with an empty one and one with other labels only; a
	// component that used no CPU but has goroutines.
	cpu := [][]byte{
		syntheticProfile(t, true, 5*time.Second,
			ofComponent("kube-apiserver", 2*sec),
			ofComponent("kube-scheduler", sec/2),
			topSample{value: sec / 4},
			ofComponent("kube-apiserver", sec),
		),
		syntheticProfile(t, true, 3*time.Second,
			ofComponent("kube-apiserver", sec),
			ofComponent("etcd", sec/2),
			ofComponent("", sec/8),
			topSample{value: sec / 8, labels: map[string][]string{"other": {"x"}}},
		),
	}
	goroutines := syntheticProfile(t, false, 0,
		ofComponent("kube-apiserver", 500),
		ofComponent("kube-scheduler", 80),
		ofComponent("kube-controller-manager", 300),
		ofComponent("etcd", 120),
		ofComponent("kube-apiserver", 20),
		topSample{value: 30},
	)
	report, err := newTopReport(cpu, goroutines)
	require.NoError(t, err)
	assert.Equal(t, 8.0, report.DurationSeconds)
	assert.Equal(t, 5.5, report.CPUSeconds)
	assert.Equal(t, int64(1050), report.Goroutines)
	assert.Equal(t, []topRow{
		{Component: "kube-apiserver", CPUPercent: 100 * 4 / 5.5, CPUSeconds: 4, Goroutines: 520},
		{Component: "etcd", CPUPercent: 100 * 0.5 / 5.5, CPUSeconds: 0.5, Goroutines: 120},
		{Component: "kube-scheduler", CPUPercent: 100 * 0.5 / 5.5, CPUSeconds: 0.5, Goroutines: 80},
		{Component: "(other)", CPUPercent: 100 * 0.5 / 5.5, CPUSeconds: 0.5, Goroutines: 30},
		{Component: "kube-controller-manager", CPUPercent: 0, CPUSeconds: 0, Goroutines: 300},
	}, report.Components, "by CPU, then goroutines, then name")

	var table bytes.Buffer
	require.NoError(t, (&topOptions{output: "table"}).print(&table, report))
	assert.Equal(t, `COMPONENT                 CPU%    CPU-SECONDS   GOROUTINES
kube-apiserver            72.7%   4.00          520
etcd                      9.1%    0.50          120
kube-scheduler            9.1%    0.50          80
(other)                   9.1%    0.50          30
kube-controller-manager   0.0%    0.00          300
`, table.String())

	var out bytes.Buffer
	require.NoError(t, (&topOptions{output: "json"}).print(&out, report))
	var back topReport
	require.NoError(t, json.Unmarshal(out.Bytes(), &back))
	assert.Equal(t, *report, back)
	assert.Contains(t, out.String(), `"cpuPercent": 72.72727272727273`)
}

func TestTopReportIdle(t *testing.T) {
	// A server that used no CPU in the profile: no samples, no division by
	// zero.
	report, err := newTopReport([][]byte{syntheticProfile(t, true, time.Second)}, syntheticProfile(t, false, 0, ofComponent("kube-apiserver", 7)))
	require.NoError(t, err)
	assert.Equal(t, []topRow{{Component: "kube-apiserver", Goroutines: 7}}, report.Components)
	assert.Zero(t, report.CPUSeconds)
}

func TestTopReportMalformed(t *testing.T) {
	cpu := syntheticProfile(t, true, time.Second, ofComponent("kube-apiserver", sec))
	goroutines := syntheticProfile(t, false, 0, ofComponent("kube-apiserver", 1))
	tests := []struct {
		name       string
		cpu        [][]byte
		goroutines []byte
		want       string
	}{
		{"CPU profile not a profile", [][]byte{[]byte("<html>404 page not found</html>")}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"CPU profile truncated", [][]byte{cpu[:len(cpu)/2]}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"CPU profile empty", [][]byte{nil}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"second piece not a profile", [][]byte{cpu, []byte("garbage")}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"goroutine profile as text", [][]byte{cpu}, []byte("goroutine profile: total 1\n1 @ 0x1000\n# labels: {\"component\":\"kube-apiserver\"}\n#\t0x1000\tmain.f+0x10\t/f.go:1\n\n"), "the goroutine profile is no pprof protobuf profile"},
		{"gzip of garbage", [][]byte{gzipped(t, []byte("not a protobuf"))}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"gzip truncated", [][]byte{cpu[:10]}, goroutines, "the CPU profile is no pprof protobuf profile"},
		{"a goroutine profile for the CPU's", [][]byte{goroutines}, goroutines, "the CPU profile has no cpu/nanoseconds samples (it has goroutine/count)"},
		{"a CPU profile for the goroutines'", [][]byte{cpu}, cpu, "the goroutine profile has no goroutine/count samples (it has samples/count, cpu/nanoseconds)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newTopReport(tc.cpu, tc.goroutines)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestTopOptionsValidate(t *testing.T) {
	assert.NoError(t, (&topOptions{seconds: 1, output: "table"}).validate())
	assert.EqualError(t, (&topOptions{seconds: 0, output: "table"}).validate(), "--seconds=0: want a whole number of seconds, 1 or more")
	assert.EqualError(t, (&topOptions{seconds: 5, output: "yaml"}).validate(), "-o yaml: unknown output format; use one of table, json")
}

// TestTopTakesProfilesInPieces: a profile longer than topChunk is asked for
// in pieces (the status client's requests time out), their samples added
// up; then the goroutines.
func TestTopTakesProfilesInPieces(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/profile", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, "profile?seconds="+r.URL.Query().Get("seconds"))
		mu.Unlock()
		_, _ = w.Write(syntheticProfile(t, true, time.Second, ofComponent("kube-scheduler", sec)))
	})
	mux.HandleFunc("GET /debug/pprof/goroutine", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, "goroutine?debug="+r.URL.Query().Get("debug"))
		mu.Unlock()
		_, _ = w.Write(syntheticProfile(t, false, 0, ofComponent("kube-scheduler", 3)))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := &status.Client{Addr: strings.TrimPrefix(srv.URL, "http://"), TLSMode: status.TLSAuto}

	report, err := (&topOptions{seconds: 12, output: "table"}).take(client)
	require.NoError(t, err)
	assert.Equal(t, []string{"profile?seconds=5", "profile?seconds=5", "profile?seconds=2", "goroutine?debug=0"}, asked)
	assert.Equal(t, []topRow{{Component: "kube-scheduler", CPUPercent: 100, CPUSeconds: 3, Goroutines: 3}}, report.Components)
	assert.Equal(t, 3.0, report.DurationSeconds, "each piece says how long it was")

	// The server's error, as the status client reports it.
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Could not enable CPU profiling: cpu profiling already in use", http.StatusInternalServerError)
	}))
	defer busy.Close()
	client.Addr = strings.TrimPrefix(busy.URL, "http://")
	_, err = (&topOptions{seconds: 1, output: "table"}).take(client)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the CPU profile: ")
	assert.Contains(t, err.Error(), "cpu profiling already in use")
}

// TestTopNeedsPprof: against a server without --enable-pprof, top says to
// start it with the flag.
func TestTopNeedsPprof(t *testing.T) {
	srv := httptest.NewServer(status.Endpoint{Harness: &harness.Harness{}}.Handler())
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	_, err := (&topOptions{seconds: 1, output: "table"}).take(&status.Client{Addr: addr, TLSMode: status.TLSAuto})
	assert.EqualError(t, err, "the server at --status-address "+addr+" serves no profiles: start it with --enable-pprof")
}
