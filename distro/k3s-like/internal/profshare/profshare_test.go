package profshare_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
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

// TestUnlabelled: an unlabelled sample is told apart by its root frame —
// the GC's mark workers, its sweeper and scavenger, the rest of the
// runtime (or no frame at all), else the entry function's package — and
// AddCPU adds Other's time up that way; a labelled sample is not in it.
func TestUnlabelled(t *testing.T) {
	for _, tc := range []struct {
		frames []string
		want   string
	}{
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, profshare.GCWorkers},
		{[]string{"runtime.sweepone", "runtime.bgsweep"}, profshare.GCBackground},
		{[]string{"runtime.scavengeOne", "runtime.bgscavenge"}, profshare.GCBackground},
		{[]string{"runtime.findRunnable", "runtime.schedule", "runtime.mstart"}, profshare.RuntimeOther},
		{nil, profshare.RuntimeOther},
		{[]string{"syscall.Syscall", "k8s.io/klog/v2.(*flushDaemon).run.func1"}, "goroutine in k8s.io/klog/v2"},
		{[]string{"net/http.(*conn).serve"}, "goroutine in net/http"},
		{[]string{"main.main"}, "goroutine in main"},
	} {
		assert.Equal(t, tc.want, profshare.Unlabelled(sample(tc.frames...)), "%v", tc.frames)
	}

	// Through AddCPU: Other's time by kind; a labelled sample stays out.
	gc, labelled := sample("runtime.gcBgMarkWorker"), sample("runtime.gcBgMarkWorker")
	labelled.Label = map[string][]string{"component": {"etcd"}}
	s := addProfile(t, gc, labelled, sample("net/http.(*conn).serve"))
	assert.Equal(t, map[string]time.Duration{profshare.GCWorkers: 10 * time.Millisecond, "goroutine in net/http": 10 * time.Millisecond}, s.Unlabelled)
	assert.Equal(t, 10*time.Millisecond, s.CPU["etcd"])
}

// TestWork: a sample's kind of work is decided by its innermost frame
// that names one, labelled or not, and AddCPU adds every sample up so.
func TestWork(t *testing.T) {
	for _, tc := range []struct {
		frames []string
		want   string
	}{
		{[]string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, profshare.WorkGC},
		// An assist inside an allocation inside encoding is the GC's.
		{[]string{"runtime.gcAssistAlloc", "runtime.mallocgc", "encoding/json.(*decodeState).object"}, profshare.WorkGC},
		// An allocation inside encoding, without an assist, is encoding's.
		{[]string{"runtime.mallocgc", "encoding/json.(*decodeState).object", "net/http.HandlerFunc.ServeHTTP"}, profshare.WorkEncoding},
		{[]string{"crypto/internal/fips140/aes/gcm.seal", "crypto/tls.(*Conn).Write", "net/http.(*http2Framer).WriteData"}, profshare.WorkTLS},
		{[]string{"internal/runtime/syscall.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "net.(*netFD).Write"}, profshare.WorkSocket},
		{[]string{"net/http.(*http2Framer).ReadFrame", "net/http.(*http2serverConn).readFrames"}, profshare.WorkHTTP2},
		{[]string{"golang.org/x/net/http2.(*Framer).ReadFrame"}, profshare.WorkHTTP2},
		{[]string{"net/http.(*conn).readRequest"}, profshare.WorkHTTP},
		// A handler's own work under net/http's dispatch is not HTTP's.
		{[]string{"k8s.io/apiserver/pkg/admission.(*reinvoker).Admit", "k8s.io/apiserver/pkg/endpoints/handlers.createHandler.func1",
			"net/http.HandlerFunc.ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*conn).serve"}, profshare.WorkOther},
		{[]string{"k8s.io/apiserver/pkg/endpoints/filters.WithAudit.func1", "net/http.HandlerFunc.ServeHTTP", "net/http.(*http2serverConn).runHandler"}, profshare.WorkOther},
		{[]string{"net/http.(*response).Write", "k8s.io/apiserver/pkg/endpoints/handlers/responsewriters.SerializeObject", "net/http.HandlerFunc.ServeHTTP"}, profshare.WorkHTTP},
		{[]string{"k8s.io/api/core/v1.(*Pod).MarshalToSizedBuffer", "k8s.io/apimachinery/pkg/runtime.(*Unknown).Marshal"}, profshare.WorkEncoding},
		{[]string{"k8s.io/api/core/v1.encodeVarintGenerated"}, profshare.WorkEncoding},
		{[]string{"k8s.io/api/core/v1.(*PodSpec).DeepCopyInto"}, profshare.WorkOther},
		{[]string{"go.etcd.io/etcd/api/v3/mvccpb.(*KeyValue).Unmarshal"}, profshare.WorkEncoding},
		{[]string{"k8s.io/kubernetes/pkg/scheduler.(*Scheduler).scheduleOne"}, profshare.WorkOther},
		{nil, profshare.WorkOther},
	} {
		assert.Equal(t, tc.want, profshare.Work(sample(tc.frames...)), "%v", tc.frames)
	}

	// Through AddCPU: every sample, labelled or not.
	tls, gc := sample("crypto/tls.(*Conn).Read"), sample("runtime.gcBgMarkWorker")
	tls.Label = map[string][]string{"component": {"kube-apiserver"}}
	s := addProfile(t, tls, gc)
	assert.Equal(t, map[string]time.Duration{profshare.WorkTLS: 10 * time.Millisecond, profshare.WorkGC: 10 * time.Millisecond}, s.Work)
}

// sample is a CPU sample of 10 ms whose stack is frames, innermost first.
func sample(frames ...string) *profile.Sample {
	s := &profile.Sample{Value: []int64{1, 10e6}}
	for i, f := range frames {
		s.Location = append(s.Location, &profile.Location{ID: uint64(i + 1), Line: []profile.Line{{Function: &profile.Function{ID: uint64(i + 1), Name: f}}}})
	}
	return s
}

// addProfile adds a CPU profile of 1 s holding samples to a new Shares.
func addProfile(t *testing.T, samples ...*profile.Sample) profshare.Shares {
	t.Helper()
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}, DurationNanos: int64(time.Second), Sample: samples}
	for _, smp := range samples {
		for _, l := range smp.Location {
			p.Location = append(p.Location, l)
			p.Function = append(p.Function, l.Line[0].Function)
		}
	}
	for i, l := range p.Location { // unique IDs across samples
		l.ID, l.Line[0].Function.ID = uint64(i+1), uint64(i+1)
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	var s profshare.Shares
	require.NoError(t, s.AddCPU(buf.Bytes()))
	return s
}

func TestFuncPackage(t *testing.T) {
	for fn, want := range map[string]string{
		"k8s.io/client-go/tools/cache.(*Reflector).ListAndWatch": "k8s.io/client-go/tools/cache",
		"runtime.mallocgc":                                 "runtime",
		"net/http.(*conn).serve":                           "net/http",
		"gopkg.in/yaml.v3.(*parser).parse":                 "gopkg.in/yaml.v3",
		"gopkg.in/inf%2ev0.(*Dec).Scale":                   "gopkg.in/inf%2ev0",
		"gopkg.in/yaml.v2.Unmarshal":                       "gopkg.in/yaml.v2",
		"gopkg.in/natefinch/lumberjack.v2.(*Logger).Write": "gopkg.in/natefinch/lumberjack.v2",
		"example.com/a.v2.F":                               "example.com/a", // only gopkg.in paths carry the version so
		"main.main":                                        "main",
		"noDot":                                            "noDot",
		"gopkg.in/yaml.v":                                  "gopkg.in/yaml",
	} {
		assert.Equal(t, want, profshare.FuncPackage(fn), fn)
	}
}
