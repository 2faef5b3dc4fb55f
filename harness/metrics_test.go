package harness_test

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// scrape GETs /metrics and parses it as the Prometheus text format.
func scrape(t *testing.T, handler http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "/metrics", nil)
	require.NoError(t, err)
	rec := &recorder{header: http.Header{}}
	handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.code(), rec.body.String())
	require.True(t, strings.HasPrefix(rec.header.Get("Content-Type"), "text/plain"), rec.header.Get("Content-Type"))
	fams, err := testutil.TextToMetricFamilies(strings.NewReader(rec.body.String()))
	require.NoError(t, err)
	return fams
}

// series is one sample of a family: its labels and value.
type series struct {
	labels map[string]string
	value  float64
}

func samples(t *testing.T, fams map[string]*dto.MetricFamily, name string, typ dto.MetricType) []series {
	t.Helper()
	f := fams[name]
	require.NotNil(t, f, "no %s", name)
	require.Equal(t, typ, f.GetType(), name)
	assert.True(t, strings.HasPrefix(f.GetHelp(), "[ALPHA] "), f.GetHelp())
	var out []series
	for _, m := range f.GetMetric() {
		s := series{labels: map[string]string{}}
		for _, l := range m.GetLabel() {
			s.labels[l.GetName()] = l.GetValue()
		}
		switch typ {
		case dto.MetricType_COUNTER:
			s.value = m.GetCounter().GetValue()
		default:
			s.value = m.GetGauge().GetValue()
		}
		out = append(out, s)
	}
	return out
}

// valuesBy maps one label's value to the sample's value, over the samples
// whose other labels match where.
func valuesBy(ss []series, label string, where map[string]string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		match := true
		for k, v := range where {
			match = match && s.labels[k] == v
		}
		if match {
			out[s.labels[label]] = s.value
		}
	}
	return out
}

func noConflicts() map[string]float64 {
	return map[string]float64{"FeatureGate": 0, "EmulatedVersion": 0, "MinCompatibilityVersion": 0, "Logging": 0, "Combination": 0}
}

// a ← b ← c; b restarted: b and c (its dependent) count one restart each,
// a none; the states, the phase, the phase durations and the plan are as
// Status has them. Then two refused restarts count their conflicts, by
// kind, and restart nothing.
func TestMetricsAfterRestartAndConflict(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		a, b, c := newRenewable("a", j), newRenewable("b", j), newRenewable("c", j)
		require.NoError(t, h.Add(a, []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Add(b, []string{"--profile=one", "--feature-gates=Foo=true"}, "a"))
		require.NoError(t, h.Add(c, nil, "b"))
		handler := h.Handler()

		fams := scrape(t, handler)
		assert.Equal(t, map[string]float64{"a": 1, "b": 1, "c": 1}, valuesBy(samples(t, fams, "kubeharness_component_state", dto.MetricType_GAUGE), "component", map[string]string{"state": "pending"}))
		assert.NotContains(t, fams, "kubeharness_feature_enabled", "no plan yet")
		assert.NotContains(t, fams, "kubeharness_phase_duration_seconds", "no phase ended yet")

		stop, _ := runUntil(t, h)
		synctest.Wait()
		flags, ok := h.Flags("b")
		require.True(t, ok)
		assert.Equal(t, "one", flags["profile"])
		require.NoError(t, h.Restart(t.Context(), "b", []string{"--profile=two"}))
		flags, _ = h.Flags("b")
		assert.Equal(t, "two", flags["profile"], "the new instance's flags")

		fams = scrape(t, handler)
		restarts := samples(t, fams, "kubeharness_component_restarts_total", dto.MetricType_COUNTER)
		assert.Equal(t, map[string]float64{"a": 0, "b": 1, "c": 1}, valuesBy(restarts, "component", nil))
		states := samples(t, fams, "kubeharness_component_state", dto.MetricType_GAUGE)
		assert.Len(t, states, 3*10, "every state of every component")
		assert.Equal(t, map[string]float64{"a": 1, "b": 1, "c": 1}, valuesBy(states, "component", map[string]string{"state": "ready"}))
		assert.Equal(t, map[string]float64{"a": 0, "b": 0, "c": 0}, valuesBy(states, "component", map[string]string{"state": "stopped"}))
		assert.Equal(t, map[string]float64{"validate": 0, "parse": 0, "barrier": 0, "start": 0, "run": 1, "stop": 0, "done": 0},
			valuesBy(samples(t, fams, "kubeharness_phase", dto.MetricType_GAUGE), "phase", nil))
		durations := valuesBy(samples(t, fams, "kubeharness_phase_duration_seconds", dto.MetricType_GAUGE), "phase", nil)
		assert.ElementsMatch(t, []string{"validate", "parse", "barrier", "start"}, slices.Collect(maps.Keys(durations)))
		assert.Equal(t, noConflicts(), valuesBy(samples(t, fams, "kubeharness_barrier_conflicts_total", dto.MetricType_COUNTER), "kind", nil))

		features := samples(t, fams, "kubeharness_feature_enabled", dto.MetricType_GAUGE)
		byName := map[string]series{}
		for _, s := range features {
			byName[s.labels["name"]] = s
		}
		require.Len(t, byName, len(h.Status().Plan.Features), "one series per feature")
		assert.Equal(t, series{labels: map[string]string{"name": Foo, "stage": "Alpha", "set_by": "a=true,b=true"}, value: 1}, byName[Foo])
		assert.Equal(t, series{labels: map[string]string{"name": Baz, "stage": "Alpha", "set_by": "default"}, value: 0}, byName[Baz])

		var ce *scoping.ConflictError
		require.ErrorAs(t, h.Restart(t.Context(), "c", []string{"--feature-gates=Bar=true", "--emulated-version=1.36"}), &ce)
		require.ErrorAs(t, h.Restart(t.Context(), "a", []string{"--feature-gates=Foo=false"}), &ce)
		fams = scrape(t, handler)
		want := noConflicts()
		want["FeatureGate"], want["EmulatedVersion"] = 2, 1
		assert.Equal(t, want, valuesBy(samples(t, fams, "kubeharness_barrier_conflicts_total", dto.MetricType_COUNTER), "kind", nil))
		assert.Equal(t, map[string]float64{"a": 0, "b": 1, "c": 1}, valuesBy(samples(t, fams, "kubeharness_component_restarts_total", dto.MetricType_COUNTER), "component", nil), "a refused restart restarts nothing")
		assert.Equal(t, map[string]int{"FeatureGate": 2, "EmulatedVersion": 1}, h.Status().Conflicts)

		require.NoError(t, stop())
		fams = scrape(t, handler)
		assert.Equal(t, map[string]float64{"a": 1, "b": 1, "c": 1}, valuesBy(samples(t, fams, "kubeharness_component_state", dto.MetricType_GAUGE), "component", map[string]string{"state": "stopped"}))
		assert.Equal(t, float64(1), valuesBy(samples(t, fams, "kubeharness_phase", dto.MetricType_GAUGE), "phase", nil)["done"])
		durations = valuesBy(samples(t, fams, "kubeharness_phase_duration_seconds", dto.MetricType_GAUGE), "phase", nil)
		assert.ElementsMatch(t, []string{"validate", "parse", "barrier", "start", "run", "stop"}, slices.Collect(maps.Keys(durations)))
	})
}

// A barrier that fails at Run counts its conflicts; nothing ran, there is
// no plan, so no feature series.
func TestMetricsAfterBarrierConflict(t *testing.T) {
	h, _ := newHarness(t)
	j := &journal{}
	require.NoError(t, h.Add(newFake("kube-apiserver", j), []string{"--feature-gates=Foo=true,Bar=true", "--emulated-version=1.36"}))
	require.NoError(t, h.Add(newFake("kube-scheduler", j), []string{"--feature-gates=Foo=false,Bar=false", "--emulated-version=1.37"}, "kube-apiserver"))
	handler := h.Handler()
	err := h.Run(t.Context())
	var ce *scoping.ConflictError
	require.ErrorAs(t, err, &ce)

	fams := scrape(t, handler)
	want := noConflicts()
	for _, c := range ce.Conflicts {
		want[c.Kind.String()]++
	}
	assert.Equal(t, float64(2), want["FeatureGate"], err.Error())
	assert.Equal(t, float64(1), want["EmulatedVersion"], err.Error())
	assert.Equal(t, want, valuesBy(samples(t, fams, "kubeharness_barrier_conflicts_total", dto.MetricType_COUNTER), "kind", nil))
	assert.NotContains(t, fams, "kubeharness_feature_enabled")
	assert.Equal(t, map[string]float64{"kube-apiserver": 1, "kube-scheduler": 1}, valuesBy(samples(t, fams, "kubeharness_component_state", dto.MetricType_GAUGE), "component", map[string]string{"state": "stopped"}))
	assert.Equal(t, float64(1), valuesBy(samples(t, fams, "kubeharness_phase", dto.MetricType_GAUGE), "phase", nil)["done"])
	durations := valuesBy(samples(t, fams, "kubeharness_phase_duration_seconds", dto.MetricType_GAUGE), "phase", nil)
	assert.ElementsMatch(t, []string{"validate", "parse", "barrier", "stop"}, slices.Collect(maps.Keys(durations)))

	code, body := get(t, handler, "/metrics", "")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "# HELP kubeharness_barrier_conflicts_total [ALPHA] The conflicts between components of every barrier that failed, by kind.\n# TYPE kubeharness_barrier_conflicts_total counter\n")
	assert.Contains(t, body, `kubeharness_barrier_conflicts_total{kind="FeatureGate"} 2`+"\n")
	assert.NotContains(t, body, "go_goroutines", "the handler's own registry, not the process's")
}

// Flags are every flag of the scope, set or default, with secret values
// redacted by RedactArgs's rule and upstream's "classified" annotation.
func TestFlagsAreEffectiveAndRedacted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		c := &harness.Func{
			ComponentName: "x",
			FlagsFunc: func(s *scoping.Scope) error {
				fs := s.FlagSet()
				fs.String("token", "", "a secret")
				fs.String("token-auth-file", "", "names a file")
				fs.Bool("enable-bootstrap-token-auth", false, "a switch")
				fs.String("password", "", "a secret not given")
				fs.String("level", "info", "not a secret")
				fs.String("key-data", "", "marked by upstream")
				if err := fs.SetAnnotation("key-data", "classified", []string{"true"}); err != nil {
					return err
				}
				s.AddFlags()
				return nil
			},
			RunFunc: func(ctx context.Context) error { <-ctx.Done(); return nil },
		}
		require.NoError(t, h.Add(c, []string{"--token=s3cret", "--token-auth-file=/etc/tokens.csv", "--enable-bootstrap-token-auth", "--key-data", "k3y"}))
		_, ok := h.Flags("x")
		assert.False(t, ok, "not parsed yet")
		stop, _ := runUntil(t, h)
		synctest.Wait()

		flags, ok := h.Flags("x")
		require.True(t, ok)
		for name, want := range map[string]string{
			"token": harness.Redacted, "token-auth-file": "/etc/tokens.csv", "enable-bootstrap-token-auth": "true",
			"password": "", "level": "info", "key-data": harness.Redacted,
		} {
			assert.Equal(t, want, flags[name], name)
		}
		assert.Contains(t, flags, "feature-gates", "the registry's flags too")
		for name, v := range flags {
			assert.NotContains(t, v, "s3cret", name)
			assert.NotContains(t, v, "k3y", name)
		}
		flags["level"] = "changed"
		again, _ := h.Flags("x")
		assert.Equal(t, "info", again["level"], "the caller's copy")
		_, ok = h.Flags("y")
		assert.False(t, ok)
		require.NoError(t, stop())
	})
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *recorder) WriteHeader(code int) { r.status = code }
func (r *recorder) code() int            { return r.status }

// panicky is a flag value whose String panics once set.
type panicky struct{ set bool }

func (p *panicky) String() string {
	if p.set {
		panic("nil options")
	}
	return ""
}
func (p *panicky) Set(string) error { p.set = true; return nil }
func (p *panicky) Type() string     { return "panicky" }

// A flag whose String panics is reported, not a crash of the parse.
func TestFlagsSurviveAPanickingValue(t *testing.T) {
	h, _ := newHarness(t)
	c := &harness.Func{
		ComponentName: "x",
		FlagsFunc: func(s *scoping.Scope) error {
			s.FlagSet().Var(&panicky{}, "odd", "its String panics once set")
			return nil
		},
		RunFunc: func(ctx context.Context) error { <-ctx.Done(); return nil },
	}
	require.NoError(t, h.Add(c, []string{"--odd=1"}))
	_, err := h.DryRun(t.Context())
	require.NoError(t, err)
	flags, ok := h.Flags("x")
	require.True(t, ok)
	assert.Equal(t, "<String panicked: nil options>", flags["odd"])
}
