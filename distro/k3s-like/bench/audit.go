package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// auditSpan is one request of the audit log: when the apiserver received
// it and when it completed.
type auditSpan struct{ from, to time.Time }

// auditStep is the bucket width of auditLatency's histogram, and
// auditMax the largest finite bound: latencyMetric's buckets are 50 ms
// wide around the p99 (0.05–0.1 s), too coarse to compare two p99s within
// 10 %.
const (
	auditStep = time.Millisecond
	auditMax  = 5 * time.Second
)

// auditLongRunning are the subresources whose requests stay open (as
// latencyMetric's CONNECT); watches are the verb "watch".
var auditLongRunning = map[string]bool{"exec": true, "attach": true, "portforward": true, "proxy": true}

// auditLatency is the requests the apiserver received in [from, to), from
// its audit log at path (both sides log every request at Metadata level:
// package cisfiles's policy): each ResponseComplete event's time from
// requestReceivedTimestamp to stageTimestamp, watches and the
// long-running subresources left out, by kind (verb, resource/subresource,
// as latencyMetric's, with the audit log's verbs), in cumulative buckets
// auditStep wide up to auditMax; and each of those requests' span.
func auditLatency(path string, from, to time.Time) (histogram, []auditSpan, error) {
	f, err := os.Open(path)
	if err != nil {
		return histogram{}, nil, err
	}
	defer f.Close()
	byKind := map[string][]float64{}
	var spans []auditSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return histogram{}, nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		received := e.RequestReceivedTimestamp.Time
		if e.Stage != auditv1.StageResponseComplete || received.Before(from) || !received.Before(to) || e.Verb == "watch" {
			continue
		}
		kind := e.Verb + " " + e.RequestURI
		if r := e.ObjectRef; r != nil {
			if auditLongRunning[r.Subresource] {
				continue
			}
			kind = e.Verb + " " + r.Resource
			if r.Subresource != "" {
				kind += "/" + r.Subresource
			}
		}
		byKind[kind] = append(byKind[kind], e.StageTimestamp.Sub(received).Seconds())
		spans = append(spans, auditSpan{received, e.StageTimestamp.Time})
	}
	if err := sc.Err(); err != nil {
		return histogram{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(byKind) == 0 {
		return histogram{}, nil, fmt.Errorf("%s: no request completed between %s and %s", path, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	les := make([]float64, int(auditMax/auditStep))
	for i := range les {
		les[i] = (time.Duration(i+1) * auditStep).Seconds()
	}
	h := newHistogram()
	for kind, lat := range byKind {
		sort.Float64s(lat)
		b := map[float64]float64{math.Inf(1): float64(len(lat))}
		for _, le := range les {
			b[le] = float64(sort.Search(len(lat), func(j int) bool { return lat[j] > le }))
		}
		h.byKind[kind], h.kinds[kind] = b, float64(len(lat))
		for le, n := range b {
			h.buckets[le] += n
		}
	}
	return h, spans, nil
}
