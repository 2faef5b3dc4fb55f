package status

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
)

// TestStatusHandlerServesPprof: the status endpoint's /debug/pprof routes
// with --enable-pprof, and no command line.
func TestStatusHandlerServesPprof(t *testing.T) {
	srv := httptest.NewServer(Endpoint{EnablePprof: true, Harness: &harness.Harness{}}.Handler())
	defer srv.Close()
	do := func(method, path string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("0x1000"))
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/allocs", "/debug/pprof/goroutine?debug=1", "/debug/pprof/threadcreate", "/debug/pprof/symbol", "/debug/pprof/trace?seconds=0.05"} {
		code, _ := do(http.MethodGet, path)
		assert.Equal(t, http.StatusOK, code, path)
	}
	code, _ := do(http.MethodPost, "/debug/pprof/symbol")
	assert.Equal(t, http.StatusOK, code, "POST /debug/pprof/symbol, as go tool pprof asks")
	code, body := do(http.MethodGet, "/debug/pprof/cmdline")
	assert.Equal(t, http.StatusNotFound, code)
	assert.NotContains(t, body, "test", "no argument of the process")
	code, _ = do(http.MethodGet, "/debug/pprof/no-such-profile")
	assert.Equal(t, http.StatusNotFound, code)
	code, body = do(http.MethodGet, "/debug/pprof/goroutine?debug=2")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine ")
	code, body = do(http.MethodGet, "/components")
	assert.Equal(t, http.StatusOK, code, "the harness's paths are still there: %s", body)
}

// TestStatusHandlerReadOnly: no path of the status endpoint takes a
// method that writes: POST, PUT, PATCH and DELETE are 405 (or 404 where
// nothing is served), never a 2xx, on every route, with --enable-pprof
// too; the one exception is pprof's symbol lookup, POST
// /debug/pprof/symbol, which only reads.
func TestStatusHandlerReadOnly(t *testing.T) {
	srv := httptest.NewServer(Endpoint{EnablePprof: true, Harness: &harness.Harness{}}.Handler())
	defer srv.Close()
	paths := []string{"/components", "/features", "/features/nodes", "/leader-election", "/livez", "/readyz", "/healthz",
		"/metrics", "/flagz", "/statusz", "/debug/pprof/", "/debug/pprof/profile", "/debug/pprof/trace", "/debug/pprof/cmdline",
		"/debug/pprof/heap", "/livez/kube-apiserver"}
	for _, path := range paths {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			req, err := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
			require.NoError(t, err)
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Contains(t, []int{http.StatusMethodNotAllowed, http.StatusNotFound}, resp.StatusCode, "%s %s", method, path)
		}
	}
	resp, err := srv.Client().Get(srv.URL + "/components")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "GET is served")
}
