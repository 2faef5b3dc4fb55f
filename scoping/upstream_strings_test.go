package scoping_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"

	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// TestUpstreamStrings pins every message of upstream_strings.go: each must
// still be in the upstream file that produces it, read from the module
// cache at the version this test binary was built with (so also under
// make test-minors' modfiles); where it is cheap, the message is also
// provoked (upstreamLoggingChanged is provoked by TestApplyLoggingSettings,
// which applies logging, once per process).
func TestUpstreamStrings(t *testing.T) {
	scopingtest.CheckUpstreamStrings(t, func(mod string) string {
		return scopingtest.ModuleDir(t, mod, basecompat.NewEffectiveVersionFromString)
	},
		scopingtest.UpstreamString{Name: "upstreamMinCompatibilityInvalid", Text: scoping.UpstreamMinCompatibilityInvalid, Module: "k8s.io/component-base", File: "compatibility/version.go", Literal: `"minCompatibilityVersion version %s is not between [%s, %s]"`},
		scopingtest.UpstreamString{Name: "upstreamLoggingChanged", Text: scoping.UpstreamLoggingChanged, Module: "k8s.io/component-base", File: "logs/api/v1/options.go", Literal: `"the logging configuration should not be changed after setting it once (- old setting, + new setting):\n%s"`},
	)

	t.Run("provoked", func(t *testing.T) {
		ev := basecompat.NewEffectiveVersionFromString("1.34", "", "")
		ev.SetEmulationVersion(version.MajorMinor(1, 33))
		ev.SetMinCompatibilityVersion(version.MajorMinor(1, 34))
		errs := ev.Validate()
		require.NotEmpty(t, errs, "min-compatibility above emulation")
		assert.True(t, strings.HasPrefix(errs[0].Error(), scoping.UpstreamMinCompatibilityInvalid), "%q begins with %q", errs[0], scoping.UpstreamMinCompatibilityInvalid)
	})
}
