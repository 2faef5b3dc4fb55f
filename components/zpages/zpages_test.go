package zpages_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/components/zpages"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

// newHarness has two components with a flag each, on a target of its own.
func newHarness(t testing.TB) *harness.Harness {
	target, err := scopingtest.NewTarget(nil)
	require.NoError(t, err)
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	for _, name := range []string{"db", "api"} {
		require.NoError(t, h.Add(&harness.Func{
			ComponentName: name,
			FlagsFunc: func(s *scoping.Scope) error {
				s.FlagSet().String("profile", "default", "a setting")
				return nil
			},
			RunFunc: func(ctx context.Context) error { <-ctx.Done(); return nil },
		}, []string{"--profile=" + name}))
	}
	return h
}

func get(t *testing.T, url, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestPages(t *testing.T) {
	h := newHarness(t)
	mux := http.NewServeMux()
	zpages.Install(mux, h, "distro", []string{"/flagz", "/statusz"})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, _ := get(t, srv.URL+"/flagz", "")
	assert.Equal(t, http.StatusServiceUnavailable, code, "no flags parsed yet")
	code, _ = get(t, srv.URL+"/flagz/db", "")
	assert.Equal(t, http.StatusServiceUnavailable, code, "db's flags not parsed yet")
	code, _ = get(t, srv.URL+"/flagz/nope", "")
	assert.Equal(t, http.StatusNotFound, code, "no such component")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := harnesstest.StartReady(t, ctx, h, time.Minute)

	code, body := get(t, srv.URL+"/flagz", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Regexp(t, `(?s)db flagz.*profile(:|: |=| )db.*api flagz.*profile(:|: |=| )api`, body, "one section per component, in order (upstream picks the separator and its spacing at random)")
	code, body = get(t, srv.URL+"/flagz/api", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `"profile":"api"`)
	code, _ = get(t, srv.URL+"/flagz/nope", "")
	assert.Equal(t, http.StatusNotFound, code)
	code, body = get(t, srv.URL+"/statusz", "")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "distro statusz")
	assert.Contains(t, body, "/flagz /statusz")

	require.NoError(t, harnesstest.Stop(t, cancel, done, time.Minute))
}
