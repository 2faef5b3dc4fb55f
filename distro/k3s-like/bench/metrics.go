package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
)

// latencyMetric is the apiserver's request latency histogram.
const latencyMetric = "apiserver_request_duration_seconds"

// longRunning are the verbs whose requests last as long as the connection
// (watches, exec/attach/port-forward/proxy): not request latency.
var longRunning = map[string]bool{"WATCH": true, "WATCHLIST": true, "CONNECT": true}

// histogram is the cumulative bucket counts of latencyMetric summed over
// every series but the long-running verbs (upper bound in s → count), the
// requests by kind (verb, resource/subresource, component), and each
// kind's own cumulative buckets.
type histogram struct {
	buckets map[float64]float64
	kinds   map[string]float64
	byKind  map[string]map[float64]float64
}

func newHistogram() histogram {
	return histogram{buckets: map[float64]float64{}, kinds: map[string]float64{}, byKind: map[string]map[float64]float64{}}
}

// scrapeLatency reads the apiserver's own /metrics (Prometheus text) with
// the admin client and sums latencyMetric's buckets.
func scrapeLatency(ctx context.Context, c kubernetes.Interface) (histogram, error) {
	body, err := c.CoreV1().RESTClient().Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").DoRaw(ctx)
	if err != nil {
		return histogram{}, fmt.Errorf("apiserver /metrics: %w", err)
	}
	h, err := parseLatency(body)
	if err != nil {
		return histogram{}, fmt.Errorf("apiserver /metrics: %w", err)
	}
	return h, nil
}

// parseLatency sums latencyMetric's buckets by their upper bound, leaving
// out the long-running verbs.
func parseLatency(body []byte) (histogram, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return histogram{}, err
	}
	h := newHistogram()
	for _, m := range families[latencyMetric].GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		if longRunning[l["verb"]] {
			continue
		}
		kind := l["verb"] + " " + l["resource"]
		switch sub := l["subresource"]; {
		case sub != "" && l["resource"] == "": // a non-resource path
			kind = l["verb"] + " " + sub
		case sub != "":
			kind += "/" + sub
		}
		if comp := l["component"]; comp != "" && comp != "apiserver" {
			kind += " (" + comp + ")"
		}
		if h.byKind[kind] == nil {
			h.byKind[kind] = map[float64]float64{}
		}
		for _, b := range m.GetHistogram().GetBucket() { // +Inf among them
			n := float64(b.GetCumulativeCount()) + b.GetCumulativeCountFloat()
			h.buckets[b.GetUpperBound()] += n
			h.byKind[kind][b.GetUpperBound()] += n
			if math.IsInf(b.GetUpperBound(), 1) {
				h.kinds[kind] += n
			}
		}
	}
	if len(h.buckets) == 0 {
		return histogram{}, fmt.Errorf("no %s buckets", latencyMetric)
	}
	return h, nil
}

// featureResources are the feature discovery's resources (package
// components/apis/features/v1alpha1).
var featureResources = map[string]bool{
	featuresv1alpha1.Resource.Resource:                  true,
	featuresv1alpha1.NodeFeatureReportResource.Resource: true,
	featuresv1alpha1.FeatureProfileResource.Resource:    true,
}

// featureRequests counts the requests on featureResources, subresources
// included.
func (h histogram) featureRequests() float64 {
	var n float64
	for kind, c := range h.kinds {
		f := strings.Fields(kind) // VERB resource[/sub] [(component)]
		if len(f) >= 2 && featureResources[strings.SplitN(f[1], "/", 2)[0]] {
			n += c
		}
	}
	return n
}

// since is the histogram of the requests between before and h (both
// cumulative counters of the same process).
func (h histogram) since(before histogram) histogram {
	d := newHistogram()
	for le, v := range h.buckets {
		d.buckets[le] = v - before.buckets[le]
	}
	for k, v := range h.kinds {
		if n := v - before.kinds[k]; n > 0 {
			d.kinds[k] = n
			d.byKind[k] = map[float64]float64{}
			for le, c := range h.byKind[k] {
				d.byKind[k][le] = c - before.byKind[k][le]
			}
		}
	}
	return d
}

// only is the histogram of the kinds in keep alone: their buckets summed.
func (h histogram) only(keep map[string]bool) histogram {
	d := newHistogram()
	for k := range keep {
		b, ok := h.byKind[k]
		if !ok {
			continue
		}
		d.kinds[k] = h.kinds[k]
		d.byKind[k] = b
		for le, c := range b {
			d.buckets[le] += c
		}
	}
	return d
}

// requestMix is the kinds of requests of two sets of runs: both, the kinds
// each side made in at least one of its runs; onlyA and onlyB, those one
// side made and the other in none of its runs (sorted).
func requestMix(a, b []histogram) (both map[string]bool, onlyA, onlyB []string) {
	made := func(hs []histogram) map[string]bool {
		m := map[string]bool{}
		for _, h := range hs {
			for k, n := range h.kinds {
				if n > 0 {
					m[k] = true
				}
			}
		}
		return m
	}
	ma, mb := made(a), made(b)
	both = map[string]bool{}
	for k := range ma {
		if mb[k] {
			both[k] = true
		} else {
			onlyA = append(onlyA, k)
		}
	}
	for k := range mb {
		if !ma[k] {
			onlyB = append(onlyB, k)
		}
	}
	sort.Strings(onlyA)
	sort.Strings(onlyB)
	return both, onlyA, onlyB
}

// count is the number of requests the histogram holds.
func (h histogram) count() float64 { return h.buckets[math.Inf(1)] }

// quantile is Prometheus's histogram_quantile: the bucket the q-th request
// falls in, linearly interpolated inside it (from 0 for the first bucket);
// in the +Inf bucket, the largest finite bound. NaN without requests.
func (h histogram) quantile(q float64) float64 {
	les := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := h.count()
	if len(les) == 0 || total <= 0 {
		return math.NaN()
	}
	rank := q * total
	prevLE, prevCount := 0.0, 0.0
	for _, le := range les {
		n := h.buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return prevLE
			}
			if n == prevCount {
				return le
			}
			return prevLE + (le-prevLE)*(rank-prevCount)/(n-prevCount)
		}
		prevLE, prevCount = le, n
	}
	return prevLE
}

// above is the number of kind's requests in buckets above the one t falls
// in: slower than t, to the bucket's width.
func (h histogram) above(kind string, t float64) float64 {
	b := h.byKind[kind]
	le := math.Inf(1)
	for bound := range b {
		if bound >= t && bound < le {
			le = bound
		}
	}
	return b[math.Inf(1)] - b[le]
}
