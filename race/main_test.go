package race_test

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/scoping"
)

// TestMain checks that no test leaves a goroutine behind. The re-executed
// child of TestUpstream_ConcurrentParse_DataRace runs through here too: it
// joins every goroutine it starts, and goleak only looks when the run passed
// (the child fails, on purpose, with the race report).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The three components of a k3s-like server, in the order k3s starts them.
const (
	apiserver = "kube-apiserver"
	scheduler = "kube-scheduler"
	kcm       = "kube-controller-manager"
)

// Features of the synthetic kube gate. The binary is 1.37 and may emulate
// down to 1.34, as kube's rules say.
const (
	Alpha1 = "Alpha1" // alpha since 1.35, off: the apiserver's gate in the disjoint scenario
	Alpha2 = "Alpha2" // alpha since 1.35, off: the scheduler's
	Alpha3 = "Alpha3" // alpha since 1.35, off: the controller-manager's
	Foo    = "Foo"    // alpha since 1.35, off: the gate two components disagree on
	BetaOn = "BetaOn" // alpha 1.34, beta and on since 1.36: its default follows --emulated-version
	// NewIn137 is alpha since 1.37, off: a kubelet gate of the binary's own
	// minor, the kind k3s#11937's agents refused.
	NewIn137 = "NewIn137"
)

var allFeatures = []string{Alpha1, Alpha2, Alpha3, BetaOn, Foo}

func kubeFeatures() map[featuregate.Feature]featuregate.VersionedSpecs {
	v := version.MustParse
	alpha := featuregate.VersionedSpecs{{Version: v("1.35"), Default: false, PreRelease: featuregate.Alpha}}
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		Alpha1:   alpha,
		Alpha2:   alpha,
		Alpha3:   alpha,
		Foo:      alpha,
		NewIn137: {{Version: v("1.37"), Default: false, PreRelease: featuregate.Alpha}},
		BetaOn: {
			{Version: v("1.34"), Default: false, PreRelease: featuregate.Alpha},
			{Version: v("1.36"), Default: true, PreRelease: featuregate.Beta},
		},
	}
}

// newKubeGate is a fresh synthetic stand-in for the process-wide kube gate
// (utilfeature.DefaultMutableFeatureGate).
func newKubeGate(tb testing.TB) featuregate.MutableVersionedFeatureGate {
	tb.Helper()
	gate := featuregate.NewVersionedFeatureGate(version.MustParse("1.37"))
	require.NoError(tb, gate.AddVersioned(kubeFeatures()))
	return gate
}

func newEffectiveVersion() basecompat.MutableEffectiveVersion {
	return basecompat.NewEffectiveVersionFromString("1.37", "1.34", "1.34")
}

// upstream is the process-wide wiring the upstream commands share: one
// ComponentGlobalsRegistry (compatibility.DefaultComponentGlobalsRegistry in
// the real binaries) with "kube" registered to one gate and one effective
// version. Each test builds a fresh one, so tests stay hermetic.
type upstream struct {
	registry basecompat.ComponentGlobalsRegistry
	gate     featuregate.MutableVersionedFeatureGate
	version  basecompat.MutableEffectiveVersion
}

func newUpstream(tb testing.TB) *upstream {
	tb.Helper()
	u := &upstream{
		registry: basecompat.NewComponentGlobalsRegistry(),
		gate:     newKubeGate(tb),
		version:  newEffectiveVersion(),
	}
	require.NoError(tb, u.registry.Register(basecompat.DefaultKubeComponent, u.version, u.gate))
	return u
}

// command is one upstream command once built: its own flag set, bound to the
// shared registry with registry.AddFlags, as NewSchedulerCommand and the
// others do when they build the cobra command.
type command struct {
	registry basecompat.ComponentGlobalsRegistry
	fs       *pflag.FlagSet
}

func (u *upstream) newCommand(component string) *command {
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	u.registry.AddFlags(fs)
	return &command{registry: u.registry, fs: fs}
}

// execute parses the arguments into the command's flag set and calls
// registry.Set(), as cobra's Execute and the command's PersistentPreRunE do.
func (c *command) execute(args ...string) error {
	if err := c.fs.Parse(args); err != nil {
		return err
	}
	return c.registry.Set()
}

// run builds one component's command and executes it, and returns the
// command's flag set, to read back what its own flags say.
func (u *upstream) run(component string, args ...string) (*pflag.FlagSet, error) {
	c := u.newCommand(component)
	return c.fs, c.execute(args...)
}

// view reads the named features of a gate: what a component checking them sees.
func view(g featuregate.FeatureGate, names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		out[n] = g.Enabled(featuregate.Feature(n))
	}
	return out
}

// on builds a view in which exactly the given features of allFeatures are
// enabled.
func on(enabled ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range allFeatures {
		out[n] = false
	}
	for _, n := range enabled {
		out[n] = true
	}
	return out
}

// newTarget is the hermetic stand-in for scoping.ProcessTarget (as in
// scoping's helpers_test.go): its own synthetic gate and registry.
func newTarget(tb testing.TB) scoping.Target {
	tb.Helper()
	gate := newKubeGate(tb)
	reg := basecompat.NewComponentGlobalsRegistry()
	require.NoError(tb, reg.Register(scoping.KubeComponent, newEffectiveVersion(), gate))
	return scoping.Target{Gate: gate, Registry: reg, NewEffectiveVersion: newEffectiveVersion}
}

// parseScope creates the component's scope, adds the registry flags to its
// own flag set and parses its arguments.
func parseScope(b *scoping.Barrier, component string, args ...string) (*scoping.Scope, error) {
	s, err := b.NewScope(component)
	if err != nil {
		return nil, err
	}
	s.AddFlags()
	return s, s.Parse(args)
}

// captureKlog sends klog's output (and klog.Background(), which the feature
// gate logs to) at the default verbosity 0 to a buffer until the test ends,
// and returns a function reading the lines so far. klog is process-wide:
// tests in this package do not run in parallel.
func captureKlog(t *testing.T) func() []string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	klog.SetLogger(funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, strings.TrimSpace(prefix+" "+args))
	}, funcr.Options{Verbosity: 0}))
	t.Cleanup(klog.ClearLogger)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}

// discard is the barrier logger for loops that would otherwise log one
// "Barrier applied" line per iteration.
var discard = scoping.WithLogger(logr.Discard())

// flagValue is what a component's own flag reports, as upstream's
// cliflag.PrintFlags logs it at startup ("FLAG: --feature-gates=...").
func flagValue(fs *pflag.FlagSet, name string) string {
	return fs.Lookup(name).Value.String()
}

// sortedCounts renders a count map deterministically for logs.
func sortedCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
