package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// TestAuditLatency: the ResponseComplete events of requests received in
// the window, by kind, each its time from received to complete; watches,
// exec, other stages and requests outside the window left out; the p99
// resolved to the millisecond; a garbled line an error naming it.
func TestAuditLatency(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var lines []string
	event := func(stage auditv1.Stage, verb string, ref *auditv1.ObjectReference, received time.Duration, took time.Duration) {
		e := auditv1.Event{
			Stage: stage, Verb: verb, RequestURI: "/healthz", ObjectRef: ref,
			RequestReceivedTimestamp: metav1.NewMicroTime(t0.Add(received)),
			StageTimestamp:           metav1.NewMicroTime(t0.Add(received + took)),
		}
		b, err := json.Marshal(e)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	pods := &auditv1.ObjectReference{Resource: "pods"}
	binding := &auditv1.ObjectReference{Resource: "pods", Subresource: "binding"}
	// 100 creates of Pods at 1..100 ms, their RequestReceived stages too.
	for i := 1; i <= 100; i++ {
		event(auditv1.StageRequestReceived, "create", pods, time.Second, 0)
		event(auditv1.StageResponseComplete, "create", pods, time.Second, time.Duration(i)*time.Millisecond)
	}
	event(auditv1.StageResponseComplete, "create", binding, time.Second, 3*time.Millisecond)
	event(auditv1.StageResponseComplete, "get", nil, time.Second, 2*time.Millisecond) // /healthz
	event(auditv1.StageResponseComplete, "watch", pods, time.Second, time.Minute)
	event(auditv1.StageResponseComplete, "create", &auditv1.ObjectReference{Resource: "pods", Subresource: "exec"}, time.Second, time.Minute)
	event(auditv1.StageResponseComplete, "create", pods, 0, time.Minute)              // before the window
	event(auditv1.StageResponseComplete, "create", pods, 10*time.Second, time.Minute) // at its end
	path := filepath.Join(t.TempDir(), "audit.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	h, spans, err := auditLatency(path, t0.Add(500*time.Millisecond), t0.Add(10*time.Second))
	require.NoError(t, err)
	require.Len(t, spans, 102)
	assert.True(t, spans[0].from.Equal(t0.Add(time.Second)) && spans[0].to.Equal(t0.Add(time.Second+time.Millisecond)), "the first create: %+v", spans[0])
	assert.Equal(t, map[string]float64{"create pods": 100, "create pods/binding": 1, "get /healthz": 1}, h.kinds)
	assert.Equal(t, 102.0, h.count())
	pods99 := h.only(map[string]bool{"create pods": true}).quantile(0.99)
	assert.InDelta(t, 0.099, pods99, 0.0005, "the 99th of 1..100 ms")
	assert.Equal(t, 1.0, h.byKind["create pods"][0.001], "one request within 1 ms")
	assert.Equal(t, 1.0, h.above("create pods", pods99), "the 100 ms one is slower than the p99")
	assert.Equal(t, 99.0, h.above("create pods", 0.0005), "all but the one within 1 ms")
	assert.Equal(t, 0.0, h.above("create pods/binding", 0.0995))

	_, _, err = auditLatency(path, t0.Add(time.Hour), t0.Add(2*time.Hour))
	assert.ErrorContains(t, err, "no request completed")
	require.NoError(t, os.WriteFile(path, []byte(lines[0]+"\n{not json\n"), 0o600))
	_, _, err = auditLatency(path, t0, t0.Add(time.Hour))
	assert.ErrorContains(t, err, "audit.log:2:")
}

// auditHistogram is auditLatency's histogram of requests of the given
// kinds (verb and resource: "create pods") and latencies.
func auditHistogram(t *testing.T, lat map[string][]time.Duration) histogram {
	t.Helper()
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var lines []string
	for kind, ds := range lat {
		verb, resource, _ := strings.Cut(kind, " ")
		for _, d := range ds {
			b, err := json.Marshal(auditv1.Event{
				Stage: auditv1.StageResponseComplete, Verb: verb, ObjectRef: &auditv1.ObjectReference{Resource: resource},
				RequestReceivedTimestamp: metav1.NewMicroTime(t0), StageTimestamp: metav1.NewMicroTime(t0.Add(d)),
			})
			require.NoError(t, err)
			lines = append(lines, string(b))
		}
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	h, _, err := auditLatency(path, t0, t0.Add(time.Second))
	require.NoError(t, err)
	return h
}

// TestRenderAuditTail: per kind, how many of its requests were slower
// than their run's p99 over every kind, and its own p99, medians over
// each side's runs; most of the tail first, then by name.
func TestRenderAuditTail(t *testing.T) {
	ms := func(from, to, step int) []time.Duration {
		var out []time.Duration
		for i := from; i <= to; i += step {
			out = append(out, time.Duration(i)*time.Millisecond)
		}
		return out
	}
	// A: Pods at 1..100 ms, events at 150..159 ms: the p99 falls in the
	// events, one of which is slower. B: Pods at 2..200 ms, events at 10 ms.
	a := auditHistogram(t, map[string][]time.Duration{"create pods": ms(1, 100, 1), "create events": ms(150, 159, 1)})
	b := auditHistogram(t, map[string][]time.Duration{"create pods": ms(2, 200, 2), "create events": slices.Repeat([]time.Duration{10 * time.Millisecond}, 10)})
	s := scaleRuns{a: []result{{audit: a}, {audit: a}}, b: []result{{audit: b}, {audit: b}}}
	var sb strings.Builder
	renderAuditTail(&sb, s)
	assert.Contains(t, sb.String(), "| `create events` | 1 | 0 | 158.9 | 10.0 |\n| `create pods` | 0 | 1 | 99.0 | 198.0 |\n")
}
