package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartComponentCPU: the hook sums the status endpoint's CPU profiles
// by component until stopped, the unlabelled samples under ""; a failing
// profile is an error, not partial figures.
func TestStartComponentCPU(t *testing.T) {
	fn := &profile.Function{ID: 1, Name: "f"}
	loc := &profile.Location{ID: 1, Line: []profile.Line{{Function: fn}}}
	p := &profile.Profile{
		SampleType:    []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		DurationNanos: int64(time.Second), Function: []*profile.Function{fn}, Location: []*profile.Location{loc},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{loc}, Value: []int64{1, 3e6}, Label: map[string][]string{"component": {"kube-apiserver"}}},
			{Location: []*profile.Location{loc}, Value: []int64{1, 1e6}},
		},
	}
	var buf bytes.Buffer
	require.NoError(t, p.Write(&buf))
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/debug/pprof/profile", r.URL.Path)
		_, _ = w.Write(buf.Bytes())
		select {
		case served <- struct{}{}:
		default:
		}
	}))
	defer srv.Close()
	stop := startComponentCPU(strings.TrimPrefix(srv.URL, "http://"))
	<-served
	got, unlabelled, work, err := stop()
	require.NoError(t, err)
	require.Contains(t, got, "kube-apiserver")
	assert.Equal(t, 3*got[""], got["kube-apiserver"], "3 ms per profile against 1 ms unlabelled")
	assert.Equal(t, got[""], sum(unlabelled), "the unlabelled split adds up to the unlabelled time")
	assert.Equal(t, sum(got), sum(work), "the split by kind of work adds up to every sample's time")

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "cpu profiling already in use", http.StatusInternalServerError)
	}))
	defer failing.Close()
	stop = startComponentCPU(strings.TrimPrefix(failing.URL, "http://"))
	time.Sleep(50 * time.Millisecond)
	_, _, _, err = stop()
	assert.ErrorContains(t, err, "cpu profiling already in use")
}
