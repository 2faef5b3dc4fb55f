package profshare_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/profshare"
)

// cpuProfile is a CPU profile of d with one sample of ns nanoseconds per
// component label ("" for none).
func cpuProfile(t *testing.T, d time.Duration, ns map[string]int64) []byte {
	t.Helper()
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		DurationNanos: int64(d),
		Function:      []*profile.Function{fn},
		Location:      []*profile.Location{loc},
	}
	for name, v := range ns {
		s := &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{1, v}}
		if name != "" {
			s.Label = map[string][]string{"component": {name}}
		}
		p.Sample = append(p.Sample, s)
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf)) // gzipped, as /debug/pprof serves it
	return buf.Bytes()
}

// TestShares: CPU adds up per label across profiles, unlabelled samples
// are Other, and a body that is no protobuf profile is an error.
func TestShares(t *testing.T) {
	var s profshare.Shares
	require.NoError(t, s.AddCPU(cpuProfile(t, time.Second, map[string]int64{"kube-apiserver": 300e6, "": 100e6})))
	require.NoError(t, s.AddCPU(cpuProfile(t, 2*time.Second, map[string]int64{"kube-apiserver": 200e6, "etcd": 50e6})))
	assert.Equal(t, 3*time.Second, s.Profiled)
	assert.Equal(t, map[string]time.Duration{"kube-apiserver": 500 * time.Millisecond, profshare.Other: 100 * time.Millisecond, "etcd": 50 * time.Millisecond}, s.CPU)
	assert.Equal(t, 650*time.Millisecond, s.TotalCPU())
	assert.ErrorContains(t, s.AddCPU([]byte("goroutine profile: total 3\n")), "the CPU profile is no pprof protobuf profile")
	assert.ErrorContains(t, s.AddGoroutines(cpuProfile(t, time.Second, nil)), "the goroutine profile has no goroutine/count samples (it has samples/count, cpu/nanoseconds)")
}
