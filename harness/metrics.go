package harness

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"k8s.io/component-base/metrics"

	"github.com/kubeharness/kubeharness/scoping"
)

// metricsHandler serves h's metrics (listed on Handler) from a registry of
// its own.
func metricsHandler(h *Harness) http.Handler {
	reg := metrics.NewKubeRegistry()
	reg.CustomMustRegister(newCollector(h))
	return metrics.HandlerFor(reg, metrics.HandlerOpts{})
}

// collector computes the kubeharness_* metrics from Status at each scrape.
type collector struct {
	metrics.BaseStableCollector
	h *Harness

	phase, phaseDuration, componentState, restarts, recoveries, conflicts, featureEnabled *metrics.Desc
}

func newCollector(h *Harness) *collector {
	desc := func(name, help string, labels ...string) *metrics.Desc {
		return metrics.NewDesc("kubeharness_"+name, help, labels, nil, metrics.ALPHA, "")
	}
	return &collector{
		h:              h,
		phase:          desc("phase", "The phase the harness's Run is in: 1 for that phase, 0 for the others.", "phase"),
		phaseDuration:  desc("phase_duration_seconds", "How long each phase of the harness's Run that has ended took.", "phase"),
		componentState: desc("component_state", "Each component's state: 1 for its state, 0 for the others.", "component", "state"),
		restarts:       desc("component_restarts_total", "The instances of each component that a restart replaced.", "component"),
		recoveries:     desc("component_recoveries_total", "The restarts of each component that Harness.Recover made after a failure.", "component"),
		conflicts:      desc("barrier_conflicts_total", "The conflicts between components of every barrier that failed, by kind.", "kind"),
		featureEnabled: desc("feature_enabled", "1 if the kube feature is enabled in the plan the barrier made, else 0. set_by is component=value for each component that set it, else its source.", "name", "stage", "set_by"),
	}
}

// DescribeWithStability sends every metric's description.
func (c *collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{c.phase, c.phaseDuration, c.componentState, c.restarts, c.recoveries, c.conflicts, c.featureEnabled} {
		ch <- d
	}
}

// CollectWithStability sends the metrics of one Status. A series that
// cannot be made (a label value that is not UTF-8) is left out, as is a
// second series with the same labels: the scrape never fails for them.
func (c *collector) CollectWithStability(ch chan<- metrics.Metric) {
	st := c.h.Status()
	type series struct {
		d      *metrics.Desc
		labels string
	}
	seen := map[series]bool{}
	send := func(d *metrics.Desc, t metrics.ValueType, v float64, labels ...string) {
		key := series{d, strings.Join(labels, "\x00")}
		if seen[key] {
			return
		}
		seen[key] = true
		if m, err := metrics.NewConstMetric(d, t, v, labels...); err == nil && m != nil {
			ch <- m
		}
	}
	for _, p := range []Phase{PhaseValidate, PhaseParse, PhaseBarrier, PhaseStart, PhaseRun, PhaseStop, PhaseDone} {
		send(c.phase, metrics.GaugeValue, boolValue(st.Phase == p), string(p))
	}
	for _, t := range slices.Backward(st.Phases) { // the last timing of a phase counts
		send(c.phaseDuration, metrics.GaugeValue, t.Duration.Seconds(), string(t.Phase))
	}
	for _, comp := range st.Components {
		for s := Pending; s <= Recovering; s++ {
			send(c.componentState, metrics.GaugeValue, boolValue(comp.State == s), comp.Name, s.String())
		}
		send(c.restarts, metrics.CounterValue, float64(comp.Restarts), comp.Name)
		send(c.recoveries, metrics.CounterValue, float64(comp.Recoveries), comp.Name)
	}
	var kinds []string
	for k := scoping.FeatureGateConflict; k <= scoping.CombinationConflict; k++ {
		kinds = append(kinds, k.String())
	}
	for _, k := range slices.Sorted(maps.Keys(st.Conflicts)) { // a kind added later
		kinds = append(kinds, k)
	}
	for _, k := range kinds {
		send(c.conflicts, metrics.CounterValue, float64(st.Conflicts[k]), k)
	}
	if st.Plan != nil {
		for _, f := range st.Plan.Features {
			send(c.featureEnabled, metrics.GaugeValue, boolValue(f.Enabled), f.Name, f.Stage, f.SetBy())
		}
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
