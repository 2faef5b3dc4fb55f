package components

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// TestUpstreamStrings pins every message of upstream_strings.go: each must
// still be in the upstream file that produces it, read from the module
// cache at the version this test binary was built with; where it is
// cheap, the message is also provoked. A Kubernetes bump that rewords one fails here.
func TestUpstreamStrings(t *testing.T) {
	// A function of each module, linked into this test binary: its source
	// file says which version of the module was built (also under the
	// other minor's modfile).
	funcs := map[string]any{
		"k8s.io/kubernetes":                   schedapp.NewSchedulerCommand,
		"k8s.io/client-go":                    cache.NewInformerName,
		"k8s.io/component-base":               configz.New,
		"k8s.io/apiserver":                    healthz.InstallHandler,
		"github.com/prometheus/client_golang": prometheus.NewRegistry,
	}
	scopingtest.CheckUpstreamStrings(t, func(mod string) string {
		fn, ok := funcs[mod]
		require.True(t, ok, "no function of %s to find its sources by", mod)
		return scopingtest.ModuleDir(t, mod, fn)
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
