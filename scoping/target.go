package scoping

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// KubeComponent is the registry component every kube feature and the kube
// emulated version live under ("kube"). Only it is reconciled across scopes;
// a distro's own registry components are private to the scope that registers them.
const KubeComponent = basecompat.DefaultKubeComponent

// Target is the process-wide state that scopes copy and that the barrier
// applies to, once. ProcessTarget returns the real one; tests and benchmarks
// build their own.
type Target struct {
	// Gate is the process-wide kube feature gate; it must be the gate
	// Registry has registered for KubeComponent.
	Gate featuregate.MutableVersionedFeatureGate
	// Registry is the process-wide registry whose KubeComponent effective
	// version the barrier sets (the apiserver reads it for storage encoding).
	Registry basecompat.ComponentGlobalsRegistry
	// NewEffectiveVersion makes a fresh kube effective version with the
	// binary's version and floors; each scope gets one.
	NewEffectiveVersion func() basecompat.MutableEffectiveVersion
	// ApplyLogging, if set, applies the reconciled logging settings once at
	// the barrier. Nil means logging settings are reconciled but not applied.
	ApplyLogging func(LoggingSettings) error
}

// ProcessTarget is the process-wide state upstream components read:
// utilfeature.DefaultMutableFeatureGate, compatibility.DefaultComponentGlobalsRegistry
// and, for logging, component-base's logsapi (applied once per process).
//
// A binary that applies component-base logging itself (logsapi.ValidateAndApply
// from its own flags or config) sets ApplyLogging to nil: the barrier then
// reconciles the components' -v, --vmodule and --logging-format but applies
// none of them, and says so in Plan.Warnings when some component set one.
func ProcessTarget() Target {
	return Target{
		Gate:                utilfeature.DefaultMutableFeatureGate,
		Registry:            apiservercompat.DefaultComponentGlobalsRegistry,
		NewEffectiveVersion: apiservercompat.DefaultBuildEffectiveVersion,
		ApplyLogging: func(s LoggingSettings) error {
			return ApplyLoggingSettings(s, utilfeature.DefaultFeatureGate)
		},
	}
}

// LoggingSettings are the reconciled process-global logging flags, keyed by
// flag name ("v", "vmodule", "logging-format"); only those some component set
// explicitly are present.
type LoggingSettings map[string]string

// LoggingFlags are the flags whose values are process-global (klog) and so
// reconciled at the barrier.
var loggingFlags = []string{"v", "vmodule", "logging-format"}

// ErrLoggingChanged is the cause when a start asks for logging settings other
// than those an earlier start in the same process applied.
var ErrLoggingChanged = errors.New("logging was applied earlier in this process with other settings; -v, --vmodule and --logging-format cannot change within a process")

// ApplyLoggingSettings builds a logsapi.LoggingConfiguration from s with
// upstream's own flag parsing and applies it with logsapi.ValidateAndApply.
// logsapi applies logging once per process: ApplyLoggingSettings sets
// upstream's logsapi.ReapplyHandling to ReapplyHandlingIgnoreUnchanged, so
// that a later start with the same settings is a no-op and one with other
// settings an error wrapping ErrLoggingChanged (with logsapi's diff).
func ApplyLoggingSettings(s LoggingSettings, gate featuregate.FeatureGate) error {
	cfg := logsapi.NewLoggingConfiguration()
	fs := pflag.NewFlagSet("logging", pflag.ContinueOnError)
	logsapi.AddFlags(cfg, fs)
	for _, name := range loggingFlags {
		if v, ok := s[name]; ok {
			if err := fs.Set(name, v); err != nil {
				return fmt.Errorf("logging: --%s=%s: %w", name, v, err)
			}
		}
	}
	if !knowsLoggingFeatures(gate) {
		gate = nil // logsapi then uses the logging features' defaults
	}
	logsapi.ReapplyHandling = logsapi.ReapplyHandlingIgnoreUnchanged
	if err := logsapi.ValidateAndApply(cfg, gate); err != nil {
		if strings.Contains(err.Error(), upstreamLoggingChanged) {
			return fmt.Errorf("%w: %v", ErrLoggingChanged, err)
		}
		return err
	}
	return nil
}

// knowsLoggingFeatures reports whether gate has logsapi's feature gates
// registered (k8s.io/kubernetes/pkg/features registers them in the process
// gate; the core module alone does not). logsapi panics on an unknown feature.
func knowsLoggingFeatures(gate featuregate.FeatureGate) bool {
	vg, ok := gate.(featuregate.MutableVersionedFeatureGate)
	if !ok {
		return false
	}
	_, known := vg.GetAllVersioned()[logsapi.ContextualLogging]
	return known
}

func (t Target) check() error {
	switch {
	case t.Gate == nil:
		return errors.New("scoping: Target.Gate is nil")
	case t.Registry == nil:
		return errors.New("scoping: Target.Registry is nil")
	case t.NewEffectiveVersion == nil:
		return errors.New("scoping: Target.NewEffectiveVersion is nil")
	case t.Registry.FeatureGateFor(KubeComponent) != featuregate.FeatureGate(t.Gate):
		return fmt.Errorf("scoping: Target.Registry must have Target.Gate registered as %q", KubeComponent)
	}
	if _, ok := t.Registry.EffectiveVersionFor(KubeComponent).(basecompat.MutableEffectiveVersion); !ok {
		return fmt.Errorf("scoping: Target.Registry's %q effective version is not mutable", KubeComponent)
	}
	return nil
}
