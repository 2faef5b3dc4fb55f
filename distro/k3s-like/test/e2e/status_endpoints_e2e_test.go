package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/metrics/testutil"

	"github.com/kubeharness/kubeharness/harness"
)

// statusBody GETs path from the status endpoint with an Accept header
// (none when empty) and returns the code and body.
func (s *server) statusBody(path, accept string) (int, string) {
	s.t.Helper()
	return s.statusRequest(path, http.Header{"Accept": {accept}})
}

// statusRequest GETs path from the plain-HTTP status endpoint with header
// (Host: the request's Host) and returns the code and body.
func (s *server) statusRequest(path string, header http.Header) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+s.statusAddress()+path, nil)
	require.NoError(s.t, err)
	for k, v := range header {
		switch {
		case k == "Host":
			req.Host = v[0]
		case v[0] != "":
			req.Header[k] = v
		}
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, string(b)
}

// The status endpoint of a real server: a readyz check per component (and
// 404 for another name), livez, the kubeharness_* metrics with the feature
// plan, every component's effective flags with a secret value redacted,
// and statusz. On loopback it is plain HTTP for a Host of loopback only
// (DNS rebinding), and without --enable-pprof it serves no profiles
// (`k3s-like top` says to start the server with it).
func TestStatusEndpoints(t *testing.T) {
	s := newServer(t, t.TempDir())
	// A value that RedactArgs hides: the flag's name says token.
	const secret = "49h13m"
	s.start("--kube-apiserver-arg=service-account-max-token-expiration=" + secret)
	s.waitReady(90 * time.Second)

	code, body := s.statusBody("/components", "")
	require.Equal(t, http.StatusOK, code, body)
	var comps struct {
		Components []struct{ Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &comps))
	var names []string
	for _, c := range comps.Components {
		names = append(names, c.Name)
	}
	require.Subset(t, names, []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"})

	t.Run("readyz and livez", func(t *testing.T) {
		code, body := s.statusBody("/readyz/kube-scheduler", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		code, _ = s.statusBody("/readyz/no-such-component", "")
		assert.Equal(t, http.StatusNotFound, code)
		code, body = s.statusBody("/readyz?verbose", "")
		assert.Equal(t, http.StatusOK, code, body)
		for _, n := range append(names, "harness") {
			assert.Contains(t, body, "[+]"+n+" ok\n")
		}
		assert.True(t, strings.HasSuffix(body, "readyz check passed\n"), body)
		code, body = s.statusBody("/readyz?exclude=kube-scheduler&verbose", "")
		assert.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, "[+]kube-scheduler excluded: ok\n")
		code, body = s.statusBody("/livez", "")
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "ok", body)
		code, _ = s.statusBody("/livez/kube-controller-manager", "")
		assert.Equal(t, http.StatusOK, code)
	})

	t.Run("metrics", func(t *testing.T) {
		code, body := s.statusBody("/metrics", "")
		require.Equal(t, http.StatusOK, code)
		fams, err := testutil.TextToMetricFamilies(strings.NewReader(body))
		require.NoError(t, err, "the Prometheus text format")
		ready := map[string]float64{}
		for _, m := range fams["kubeharness_component_state"].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["state"] == "ready" {
				ready[labels["component"]] = m.GetGauge().GetValue()
			}
		}
		for _, n := range names {
			assert.Equal(t, float64(1), ready[n], n)
		}
		features := fams["kubeharness_feature_enabled"].GetMetric()
		assert.Greater(t, len(features), 50, "a series per kube feature")
		assert.Contains(t, body, `kubeharness_phase{phase="run"} 1`+"\n")
		assert.Contains(t, body, `kubeharness_component_restarts_total{component="kube-scheduler"} 0`+"\n")
		assert.Contains(t, body, `kubeharness_barrier_conflicts_total{kind="FeatureGate"} 0`+"\n")
		assert.Regexp(t, `kubeharness_phase_duration_seconds\{phase="start"\} \S+\n`, body)
		assert.Regexp(t, `kubeharness_feature_enabled\{name="\w+",set_by="default",stage="(Alpha|Beta|GA|Deprecated)"\} [01]\n`, body)
	})

	// One collector for every component: GOGC 70 once ready (200 while
	// starting), which the apiserver's /metrics shows (client_golang's Go
	// collector, in upstream's registry: the whole process).
	t.Run("collector goal once ready", func(t *testing.T) {
		var last string
		if !assert.Eventually(t, func() bool {
			b, err := s.client().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
			if err != nil {
				return false
			}
			last = regexp.MustCompile(`(?m)^go_gc_gogc_percent .*$`).FindString(string(b))
			return last == "go_gc_gogc_percent 70"
		}, 10*time.Second, 100*time.Millisecond) {
			t.Errorf("the apiserver's /metrics said %q", last)
		}
	})

	t.Run("flagz", func(t *testing.T) {
		code, body := s.statusBody("/flagz", "")
		require.Equal(t, http.StatusOK, code, body)
		for _, n := range names {
			assert.Contains(t, body, "\n"+n+" flagz\n", "a section per component")
		}
		assert.Regexp(t, `\nservice-account-max-token-expiration(:|: |=| )`+harness.Redacted+`\n`, body)
		assert.NotContains(t, body, secret)
		assert.Regexp(t, `\nsecure-port(:|: |=| )`+strconv.Itoa(s.ports["scheduler"])+`\n`, body, "the scheduler's port as given")
		assert.Regexp(t, `\nleader-elect(:|: |=| )(true|false)\n`, body, "defaults too")

		code, body = s.statusBody("/flagz/kube-apiserver", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io")
		require.Equal(t, http.StatusOK, code, body)
		var fz struct {
			Kind     string
			Metadata struct{ Name string }
			Flags    map[string]string
		}
		require.NoError(t, json.Unmarshal([]byte(body), &fz))
		assert.Equal(t, "Flagz", fz.Kind)
		assert.Equal(t, "kube-apiserver", fz.Metadata.Name)
		assert.Equal(t, harness.Redacted, fz.Flags["service-account-max-token-expiration"])
		assert.Equal(t, strconv.Itoa(s.ports["https"]), fz.Flags["secure-port"])
		code, _ = s.statusBody("/flagz/no-such-component", "")
		assert.Equal(t, http.StatusNotFound, code)
	})

	t.Run("loopback Host only", func(t *testing.T) {
		port := strconv.Itoa(s.ports["status"])
		for _, host := range []string{"evil.example:" + port, "evil.example", "10.0.0.5:" + port} {
			code, body := s.statusRequest("/flagz", http.Header{"Host": {host}})
			assert.Equal(t, http.StatusForbidden, code, host)
			assert.Contains(t, body, "answers only a Host of loopback", host)
			assert.NotContains(t, body, "kube-apiserver", host)
		}
		for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
			code, body := s.statusRequest("/flagz", http.Header{"Host": {host}})
			assert.Equal(t, http.StatusOK, code, "%s: %s", host, body)
		}
		code, _ := s.statusRequest("/flagz", http.Header{"Sec-Fetch-Site": {"cross-site"}})
		assert.Equal(t, http.StatusForbidden, code, "a browser's request for another site")
	})

	t.Run("pprof off by default", func(t *testing.T) {
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile?seconds=1", "/debug/pprof/goroutine?debug=1"} {
			code, body := s.statusBody(path, "")
			assert.Equal(t, http.StatusNotFound, code, path)
			assert.Contains(t, body, "start it with --enable-pprof", path)
		}
		out, err := exec.Command(binary, "top", "--seconds=1", "--status-address="+s.statusAddress()).CombinedOutput()
		assert.Error(t, err)
		assert.Contains(t, string(out), "serves no profiles: start it with --enable-pprof")
	})

	t.Run("statusz", func(t *testing.T) {
		code, body := s.statusBody("/statusz", "")
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, "k3s-like statusz\n")
		assert.Contains(t, body, "/flagz /healthz")
		code, body = s.statusBody("/statusz", "application/json;as=Statusz;v=v1beta1;g=config.k8s.io")
		require.Equal(t, http.StatusOK, code, body)
		var sz struct {
			Kind             string
			BinaryVersion    string
			EmulationVersion string
			Paths            []string
		}
		require.NoError(t, json.Unmarshal([]byte(body), &sz))
		assert.Equal(t, "Statusz", sz.Kind)
		assert.NotEmpty(t, sz.BinaryVersion)
		assert.NotEmpty(t, sz.EmulationVersion)
		assert.Contains(t, sz.Paths, "/readyz")
	})
}
