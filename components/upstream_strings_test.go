package components

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics"
)

// TestUpstreamStrings pins every message of upstream_strings.go: each must
// still be in the upstream file that produces it, read from the module
// cache at the version go.mod requires; where it is cheap, the message is
// also provoked. A Kubernetes bump that rewords one fails here.
func TestUpstreamStrings(t *testing.T) {
	// literal is upstream's string literal, as it stands in file; it must
	// contain the constant.
	sources := []struct {
		name, text, module, file, literal string
	}{
		{"upstreamSchedulerStopped", upstreamSchedulerStopped, "k8s.io/kubernetes", "cmd/kube-scheduler/app/server.go", `"finished without leader elect"`},
		{"upstreamInformerNameTaken", upstreamInformerNameTaken, "k8s.io/client-go", "tools/cache/identity.go", `"informer name %q is already registered"`},
		{"upstreamKCMShutdownTimeout", upstreamKCMShutdownTimeout, "k8s.io/kubernetes", "cmd/kube-controller-manager/app/controllermanager.go", `errors.New("controller shutdown timeout reached")`},
		{"upstreamKCMInformerNameFailed", upstreamKCMInformerNameFailed, "k8s.io/kubernetes", "cmd/kube-controller-manager/app/controllermanager.go", `"failed to create informer name: %w"`},
		{"upstreamKCMAPIServerUnhealthy", upstreamKCMAPIServerUnhealthy, "k8s.io/kubernetes", "cmd/kube-controller-manager/app/controllermanager.go", `"failed to wait for apiserver being healthy: %w"`},
		{"upstreamConfigzTwice", upstreamConfigzTwice, "k8s.io/component-base", "configz/configz.go", `"register config %q twice"`},
		{"upstreamDuplicateMetrics", upstreamDuplicateMetrics, "github.com/prometheus/client_golang", "prometheus/registry.go", `"duplicate metrics collector registration attempted"`},
		{"upstreamHealthzPassed", upstreamHealthzPassed, "k8s.io/apiserver", "pkg/server/healthz/healthz.go", `"[+]%s ok\n"`},
		{"upstreamHealthzPassed (excluded)", upstreamHealthzPassed, "k8s.io/apiserver", "pkg/server/healthz/healthz.go", `"[+]%s excluded: ok\n"`},
		{"upstreamHealthzFailed", upstreamHealthzFailed, "k8s.io/apiserver", "pkg/server/healthz/healthz.go", `"[-]%s failed: reason withheld\n"`},
	}
	dirs := map[string]string{}
	for _, s := range sources {
		dirs[s.module] = ""
	}
	for mod := range dirs {
		dirs[mod] = moduleDir(t, mod)
	}
	for _, s := range sources {
		path := filepath.Join(dirs[s.module], s.file)
		src, err := os.ReadFile(path)
		if !assert.NoError(t, err, "%s: its upstream file", s.name) {
			continue
		}
		assert.Contains(t, s.literal, s.text, "%s: the constant is part of upstream's literal", s.name)
		assert.True(t, strings.Contains(string(src), s.literal), "%s: %s is no longer in %s", s.name, s.literal, path)
	}

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
