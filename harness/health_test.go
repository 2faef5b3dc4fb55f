package harness_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// One component still starting: /readyz fails and names it (reason
// withheld), /readyz/NAME says why, ?exclude and ?verbose work as in
// kube-apiserver, /livez passes; once all are ready /readyz passes, and once
// the harness stopped it fails on the harness check alone.
func TestReadyzAndLivezWhileAComponentStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		handler := h.Handler() // before Add: the checks follow the components added later
		j := &journal{}
		api, sched := newFake("kube-apiserver", j), newFake("kube-scheduler", j)
		sched.readyAfter = 5 * time.Second // within ReadyTimeout
		require.NoError(t, h.Add(api, nil))
		require.NoError(t, h.Add(sched, nil, "kube-apiserver"))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.Equal(t, harness.Starting, state(h, "kube-scheduler"))

		for path, name := range map[string]string{"/readyz": "readyz", "/healthz": "healthz", "/readyz?verbose": "readyz"} {
			code, body := get(t, handler, path, "")
			assert.Equal(t, http.StatusServiceUnavailable, code, path)
			assert.Equal(t, "[+]kube-apiserver ok\n[-]kube-scheduler failed: reason withheld\n[-]harness failed: reason withheld\n"+name+" check failed\n", body, path)
		}
		code, body := get(t, handler, "/readyz/kube-scheduler", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "internal server error: kube-scheduler is starting\n", body)
		code, body = get(t, handler, "/readyz/harness", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "internal server error: the harness is in phase start, not run\n", body)
		code, body = get(t, handler, "/readyz/kube-apiserver", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		for _, path := range []string{"/readyz/kube-controller-manager", "/livez/harness", "/readyz/", "/readyz/kube-apiserver/x", "/livez/ping"} {
			code, _ = get(t, handler, path, "")
			assert.Equal(t, http.StatusNotFound, code, path)
		}

		code, body = get(t, handler, "/readyz?exclude=kube-scheduler", "")
		assert.Equal(t, http.StatusServiceUnavailable, code, "the harness is not in its run phase yet")
		assert.Contains(t, body, "[+]kube-scheduler excluded: ok\n")
		code, body = get(t, handler, "/readyz?exclude=kube-scheduler&exclude=harness", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		code, body = get(t, handler, "/readyz?exclude=kube-scheduler&exclude=harness&exclude=etcd&verbose", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "[+]kube-apiserver ok\n[+]kube-scheduler excluded: ok\n[+]harness excluded: ok\n"+
			"warn: some health checks cannot be excluded: no matches for \"etcd\"\nreadyz check passed\n", body)

		code, body = get(t, handler, "/livez?verbose", "")
		assert.Equal(t, http.StatusOK, code, "starting is alive")
		assert.Equal(t, "[+]kube-apiserver ok\n[+]kube-scheduler ok\nlivez check passed\n", body)

		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.True(t, h.Status().Ready())
		code, body = get(t, handler, "/readyz", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		code, body = get(t, handler, "/readyz?verbose", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "[+]kube-apiserver ok\n[+]kube-scheduler ok\n[+]harness ok\nreadyz check passed\n", body)
		code, _ = get(t, handler, "/healthz", "")
		assert.Equal(t, http.StatusOK, code)

		require.NoError(t, stop())
		code, body = get(t, handler, "/readyz", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "[-]kube-apiserver failed: reason withheld\n")
		code, body = get(t, handler, "/readyz/harness", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "internal server error: the harness is in phase done, not run\n", body)
		code, _ = get(t, handler, "/livez", "")
		assert.Equal(t, http.StatusOK, code, "stopped on request is not a failure")
	})
}

// A component that failed fails livez (and readyz), named, with its error
// on its own path; the others stay live.
func TestLivezFailsForAFailedComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		api, sched := newFake("kube-apiserver", j), newFake("kube-scheduler", j)
		sched.failAfter, sched.failErr = time.Second, errBoom
		require.NoError(t, h.Add(api, nil))
		require.NoError(t, h.Add(sched, nil, "kube-apiserver"))
		handler := h.Handler()
		_, done := runUntil(t, h)
		synctest.Wait()
		code, _ := get(t, handler, "/livez", "")
		assert.Equal(t, http.StatusOK, code, "running")

		require.ErrorIs(t, <-done, errBoom)
		require.Equal(t, harness.Failed, state(h, "kube-scheduler"))
		code, body := get(t, handler, "/livez", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "[+]kube-apiserver ok\n[-]kube-scheduler failed: reason withheld\nlivez check failed\n", body)
		code, body = get(t, handler, "/livez/kube-scheduler", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Regexp(t, `^internal server error: kube-scheduler failed: .*boom\n$`, body)
		code, _ = get(t, handler, "/livez/kube-apiserver", "")
		assert.Equal(t, http.StatusOK, code)
		code, _ = get(t, handler, "/livez?exclude=kube-scheduler", "")
		assert.Equal(t, http.StatusOK, code)
		code, body = get(t, handler, "/readyz", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Contains(t, body, "[-]kube-scheduler failed: reason withheld\n")
	})
}

// Component names are free text: one that is no valid http.ServeMux
// pattern still gets its check, and a harness whose names repeat (refused
// only when Run validates) does not break the handler.
func TestHealthChecksOfAnyComponentName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		require.NoError(t, h.Add(newFake("GET {odd} name", j), nil))
		handler := h.Handler()
		stop, _ := runUntil(t, h)
		synctest.Wait()
		code, body := get(t, handler, "/readyz/GET%20%7Bodd%7D%20name", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		code, body = get(t, handler, "/readyz?verbose&exclude=GET+{odd}+name", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "[+]GET {odd} name excluded: ok\n")
		require.NoError(t, stop())
	})

	h, _ := newHarness(t)
	j := &journal{}
	require.NoError(t, h.Add(newFake("a", j), nil))
	require.NoError(t, h.Add(newFake("a", j), nil))
	handler := h.Handler()
	code, body := get(t, handler, "/readyz?verbose", "")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "[-]a failed: reason withheld\n[-]a failed: reason withheld\n[-]harness failed: reason withheld\nreadyz check failed\n", body)
	code, _ = get(t, handler, "/livez", "")
	assert.Equal(t, http.StatusOK, code)
	code, body = get(t, handler, "/metrics", "")
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `kubeharness_component_state{component="a",state="pending"} 1`)
}

// A harness with no component is never ready, as Status.Ready; it is alive.
func TestReadyzWithoutComponents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		handler := h.Handler()
		stop, _ := runUntil(t, h)
		synctest.Wait()
		require.Equal(t, harness.PhaseRun, h.Status().Phase)
		code, body := get(t, handler, "/readyz/harness", "")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.Equal(t, "internal server error: the harness runs no component\n", body)
		code, body = get(t, handler, "/livez", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		require.NoError(t, stop())
	})
}
