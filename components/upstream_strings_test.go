package components

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics"

	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// TestUpstreamStrings pins every message of upstream_strings.go: each must
// still be in the upstream file that produces it, read from the module
// cache at the version go.mod requires; where it is cheap, the message is
// also provoked. A Kubernetes bump that rewords one fails here.
func TestUpstreamStrings(t *testing.T) {
	dirs := map[string]string{}
	scopingtest.CheckUpstreamStrings(t, func(mod string) string {
		if dirs[mod] == "" {
			dirs[mod] = moduleDir(t, mod)
		}
		return dirs[mod]
	},
		scopingtest.UpstreamString{Name: "upstreamSchedulerStopped", Text: upstreamSchedulerStopped, Module: "k8s.io/kubernetes", File: "cmd/kube-scheduler/app/server.go", Literal: `"finished without leader elect"`},
		scopingtest.UpstreamString{Name: "upstreamInformerNameTaken", Text: upstreamInformerNameTaken, Module: "k8s.io/client-go", File: "tools/cache/identity.go", Literal: `"informer name %q is already registered"`},
		scopingtest.UpstreamString{Name: "upstreamKCMShutdownTimeout", Text: upstreamKCMShutdownTimeout, Module: "k8s.io/kubernetes", File: "cmd/kube-controller-manager/app/controllermanager.go", Literal: `errors.New("controller shutdown timeout reached")`},
		scopingtest.UpstreamString{Name: "upstreamKCMInformerNameFailed", Text: upstreamKCMInformerNameFailed, Module: "k8s.io/kubernetes", File: "cmd/kube-controller-manager/app/controllermanager.go", Literal: `"failed to create informer name: %w"`},
		scopingtest.UpstreamString{Name: "upstreamKCMAPIServerUnhealthy", Text: upstreamKCMAPIServerUnhealthy, Module: "k8s.io/kubernetes", File: "cmd/kube-controller-manager/app/controllermanager.go", Literal: `"failed to wait for apiserver being healthy: %w"`},
		scopingtest.UpstreamString{Name: "upstreamConfigzTwice", Text: upstreamConfigzTwice, Module: "k8s.io/component-base", File: "configz/configz.go", Literal: `"register config %q twice"`},
		scopingtest.UpstreamString{Name: "upstreamDuplicateMetrics", Text: upstreamDuplicateMetrics, Module: "github.com/prometheus/client_golang", File: "prometheus/registry.go", Literal: `"duplicate metrics collector registration attempted"`},
		scopingtest.UpstreamString{Name: "upstreamHealthzPassed", Text: upstreamHealthzPassed, Module: "k8s.io/apiserver", File: "pkg/server/healthz/healthz.go", Literal: `"[+]%s ok\n"`},
		scopingtest.UpstreamString{Name: "upstreamHealthzPassed (excluded)", Text: upstreamHealthzPassed, Module: "k8s.io/apiserver", File: "pkg/server/healthz/healthz.go", Literal: `"[+]%s excluded: ok\n"`},
		scopingtest.UpstreamString{Name: "upstreamHealthzFailed", Text: upstreamHealthzFailed, Module: "k8s.io/apiserver", File: "pkg/server/healthz/healthz.go", Literal: `"[-]%s failed: reason withheld\n"`},
	)

	t.Run("provoked", func(t *testing.T) {
		n, err := cache.NewInformerName("kubeharness-upstream-strings")
		require.NoError(t, err)
		defer n.Release()
		_, err = cache.NewInformerName("kubeharness-upstream-strings")
		assert.ErrorContains(t, err, upstreamInformerNameTaken)

		_, err = configz.New("kubeharness-upstream-strings")
		require.NoError(t, err)
		defer configz.Delete("kubeharness-upstream-strings")
		_, err = configz.New("kubeharness-upstream-strings")
		require.Error(t, err)
		assert.True(t, strings.HasPrefix(err.Error(), upstreamConfigzTwice), "%q begins with %q", err, upstreamConfigzTwice)

		reg := metrics.NewKubeRegistry()
		c := metrics.NewCounter(&metrics.CounterOpts{Name: "kubeharness_upstream_strings_total", Help: "test"})
		require.NoError(t, reg.Register(c))
		err = reg.Register(c)
		assert.ErrorContains(t, err, upstreamDuplicateMetrics)
	})
}

// moduleDir is where the go command keeps module mod at the version this
// module requires (its replacement, if go.mod replaces it).
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{if .Replace}}{{.Replace.Dir}}{{else}}{{.Dir}}{{end}}", mod).Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("go list -m %s: %v: %s", mod, err, ee.Stderr)
	}
	require.NoError(t, err, "go list -m %s (the go command is needed to find upstream's sources)", mod)
	dir := strings.TrimSpace(string(out))
	require.NotEmpty(t, dir, "%s is not in the module cache: go mod download %s", mod, mod)
	return dir
}

// TestListsCheck: a verbose /healthz lists the controllers' checks once
// they were built, passing or failing; the base checks do not count.
func TestListsCheck(t *testing.T) {
	known := map[string]bool{"namespace-controller": true, "deployment-controller": true}
	before := "[+]ping ok\n[+]log ok\nhealthz check passed\n"
	assert.False(t, listsCheck(before, known))
	assert.False(t, listsCheck("", known))
	assert.False(t, listsCheck("[+]namespace-controllers ok\n", known), "a prefix of a name is not the name")
	assert.True(t, listsCheck("[+]ping ok\n[+]log ok\n[+]namespace-controller ok\nhealthz check passed\n", known))
	assert.True(t, listsCheck("[+]ping ok\n[-]deployment-controller failed: reason withheld\nhealthz check failed\n", known))
}
