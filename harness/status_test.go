package harness_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

func get(t *testing.T, h http.Handler, path, accept string) (int, string) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestStatusHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		require.NoError(t, h.Add(newFake("kube-apiserver", j), []string{"--feature-gates=Foo=true"}))
		require.NoError(t, h.Add(newFake("kube-scheduler", j), []string{"--feature-gates=Bar=true"}, "kube-apiserver"))
		handler := h.Handler()

		code, body := get(t, handler, "/healthz", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "[-]kube-apiserver failed")
		code, _ = get(t, handler, "/features", "")
		assert.Equal(t, http.StatusServiceUnavailable, code, "no plan before the barrier")

		stop, _ := runUntil(t, h)
		synctest.Wait()

		code, body = get(t, handler, "/healthz", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)

		code, body = get(t, handler, "/components", "")
		require.Equal(t, http.StatusOK, code)
		var comps struct {
			Phase      harness.Phase
			Components []harness.ComponentStatus
			Phases     []harness.PhaseTiming
		}
		require.NoError(t, json.Unmarshal([]byte(body), &comps))
		assert.Equal(t, harness.PhaseRun, comps.Phase)
		require.Len(t, comps.Components, 2)
		assert.Equal(t, "kube-scheduler", comps.Components[1].Name)
		assert.Contains(t, body, `"state": "ready"`)
		assert.Equal(t, []string{"kube-apiserver"}, comps.Components[1].Dependencies)
		assert.Equal(t, []string{"--feature-gates=Bar=true"}, comps.Components[1].Args)
		var phases []harness.Phase
		for _, p := range comps.Phases {
			phases = append(phases, p.Phase)
		}
		assert.Equal(t, []harness.Phase{harness.PhaseValidate, harness.PhaseParse, harness.PhaseBarrier, harness.PhaseStart}, phases)

		code, body = get(t, handler, "/components", "text/plain")
		require.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "COMPONENT")
		assert.Regexp(t, `kube-scheduler\s+ready\s+\S+\s+kube-apiserver`, body)

		code, body = get(t, handler, "/features", "")
		require.Equal(t, http.StatusOK, code)
		var plan scoping.Plan
		require.NoError(t, json.Unmarshal([]byte(body), &plan))
		byName := map[string]scoping.FeatureState{}
		for _, f := range plan.Features {
			byName[f.Name] = f
		}
		assert.True(t, byName[Foo].Enabled)
		assert.Equal(t, scoping.SourceFlag, byName[Foo].Source)
		assert.Equal(t, []scoping.Request{{Component: "kube-apiserver", Value: "true", Flag: "--feature-gates=Foo=true"}}, byName[Foo].Requests)
		assert.False(t, byName[Baz].Enabled)
		assert.Equal(t, scoping.SourceDefault, byName[Baz].Source)

		code, body = get(t, handler, "/features?format=text", "")
		require.Equal(t, http.StatusOK, code)
		lines := strings.Split(body, "\n")
		assert.Contains(t, body, "NAME")
		var barLine string
		for _, l := range lines {
			if strings.HasPrefix(l, "Bar ") {
				barLine = l
			}
		}
		assert.Regexp(t, `^Bar\s+Alpha\s+true\s+false\s+flag\s+kube-scheduler --feature-gates=Bar=true$`, barLine)

		require.NoError(t, stop())
		code, body = get(t, handler, "/healthz/kube-apiserver", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "kube-apiserver is stopped")
	})
}

func TestAfterBarrierHook(t *testing.T) {
	t.Run("runs once, before any component", func(t *testing.T) {
		h, target := newHarness(t)
		j := &journal{}
		var sawFoo []bool
		h.AfterBarrier = []harness.BarrierHook{func(p *scoping.Plan) error {
			j.add("after barrier")
			sawFoo = append(sawFoo, target.Gate.Enabled(Foo))
			return nil
		}, func(p *scoping.Plan) error {
			j.add("second hook")
			return nil
		}}
		require.NoError(t, h.Add(newFake("a", j), []string{"--feature-gates=Foo=true"}))
		ctx, cancel := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() { errc <- h.Run(ctx) }()
		require.Eventually(t, func() bool { return len(j.list()) == 4 }, 10*time.Second, time.Millisecond, "after barrier, second hook, run a, ready a")
		cancel()
		require.NoError(t, <-errc)
		assert.Equal(t, []string{"after barrier", "second hook", "run a", "ready a", "stop a"}, j.list(), "hooks in order, once each")
		assert.Equal(t, []bool{true}, sawFoo, "the gate is applied when the hook runs")
	})
	t.Run("an error stops the run before anything starts", func(t *testing.T) {
		h, _ := newHarness(t)
		a := newFake("a", &journal{})
		var later bool
		h.AfterBarrier = []harness.BarrierHook{
			func(*scoping.Plan) error { return errBoom },
			func(*scoping.Plan) error { later = true; return nil },
		}
		require.NoError(t, h.Add(a, nil))
		err := h.Run(t.Context())
		assert.ErrorIs(t, err, errBoom)
		assert.False(t, a.runCalled.Load())
		assert.False(t, later, "hooks after a failed one do not run")
	})
}

// TestPhaseTimingHooks: the barrier's timing says how much of it the
// AfterBarrier hooks took, in /components' JSON and text; no other phase
// has hooks.
func TestPhaseTimingHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		h.AfterBarrier = []harness.BarrierHook{
			func(*scoping.Plan) error { time.Sleep(30 * time.Millisecond); return nil },
			func(*scoping.Plan) error { time.Sleep(5 * time.Millisecond); return nil },
		}
		require.NoError(t, h.Add(newFake("a", &journal{}), nil))
		stop, _ := runUntil(t, h)
		time.Sleep(time.Second) // past the hooks' sleeps
		synctest.Wait()
		require.Equal(t, harness.PhaseRun, h.Status().Phase)
		byPhase := map[harness.Phase]harness.PhaseTiming{}
		for _, p := range h.Status().Phases {
			byPhase[p.Phase] = p
		}
		require.Contains(t, byPhase, harness.PhaseBarrier)
		assert.Equal(t, 35*time.Millisecond, byPhase[harness.PhaseBarrier].Hooks)
		assert.Equal(t, 35*time.Millisecond, byPhase[harness.PhaseBarrier].Duration, "the fake clock moves only in the hooks")
		for _, p := range []harness.Phase{harness.PhaseValidate, harness.PhaseParse, harness.PhaseStart} {
			assert.Zero(t, byPhase[p].Hooks, p)
		}
		_, body := get(t, h.Handler(), "/components", "")
		assert.Contains(t, body, `"hooks": 35000000`)
		_, body = get(t, h.Handler(), "/components", "text/plain")
		assert.Regexp(t, `barrier\s+35ms\s+35ms`, body)
		require.NoError(t, stop())
	})
}
