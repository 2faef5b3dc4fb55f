package scoping

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// Rescope creates a new scope for a component of the plan this barrier
// applied, to start that component again with new arguments while the
// others keep running (harness.Restart): the same base as every first scope
// (the process defaults). Add the component's flags and Parse it, then Admit
// it. The barrier must have applied; name must be one of its components.
func (b *Barrier) Rescope(name string) (*Scope, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.applied {
		return nil, errors.New("scoping: Rescope before the barrier applied: use NewScope")
	}
	known := false
	for _, s := range b.scopes {
		known = known || s.name == name
	}
	if !known {
		return nil, fmt.Errorf("scoping: %q is not a component of the applied plan", name)
	}
	return newScope(b, name)
}

// Admit reconciles rescoped, parsed scopes against the applied plan, all or
// none. The process-wide settings cannot change while components run: a
// kube feature, the emulated or min-compatibility version, or a logging
// setting that a scope asks for (by flag, in its code, or through
// AllAlpha/AllBeta) with a value other than the one in force is a conflict,
// and all of them come back as one *ConflictError; nothing changes then.
// Settings the scope does not ask for keep the values in force, even those
// only the component's previous instance asked for. Otherwise each scope
// gets the plan's gate and versions, is sealed, and takes its component's
// place in the barrier. Component-local flags may change freely.
func (b *Barrier) Admit(scopes ...*Scope) error {
	b.mu.Lock()
	p := b.plan
	b.mu.Unlock()
	if p == nil {
		return errors.New("scoping: Admit before the barrier applied")
	}
	var conflicts []*Conflict
	for _, s := range scopes {
		if s.barrier != b {
			return fmt.Errorf("scoping: %s's scope belongs to another barrier", s.name)
		}
		c, err := collect([]*Scope{s})
		if err != nil {
			return err
		}
		conflicts = append(conflicts, p.admit(s.name, c)...)
	}
	if len(conflicts) > 0 {
		return &ConflictError{Conflicts: conflicts}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range scopes {
		if err := s.seal(p); err != nil {
			return err
		}
		for i, old := range b.scopes {
			if old.name == s.name {
				b.scopes[i] = s
			}
		}
	}
	return nil
}

// admit compares one component's new requests with the settings in force.
func (p *reconciled) admit(component string, c *collected) []*Conflict {
	const reason = "a restarted component cannot change a process-wide setting while the others run"
	var conflicts []*Conflict
	// check reports the requests rs that differ from current; the conflict
	// also lists who else asks for the setting in the running plan.
	check := func(kind ConflictKind, setting, current string, inForce, rs []Request) {
		var all []Request
		for _, r := range rs {
			if r.Value != current {
				all = append(all, r)
			}
		}
		if len(all) == 0 {
			return
		}
		for _, r := range inForce {
			if r.Component != component {
				all = append(all, r)
			}
		}
		sortRequests(all)
		conflicts = append(conflicts, &Conflict{Kind: kind, Setting: setting, Requests: all,
			Reason: fmt.Sprintf("%s is %s in the running control plane; %s", setting, current, reason)})
	}
	if len(c.emulated) > 0 {
		check(EmulatedVersionConflict, "--emulated-version", p.EmulationVersion, p.versionRequests["--emulated-version"], c.emulated)
	}
	if len(c.minCompat) > 0 {
		check(MinCompatibilityVersionConflict, "--min-compatibility-version", p.MinCompatibilityVersion, p.versionRequests["--min-compatibility-version"], c.minCompat)
	}
	defaults := loggingDefaults()
	for _, name := range loggingFlags {
		if rs := c.logging[name]; len(rs) > 0 {
			current, ok := p.Logging[name]
			if !ok {
				current = defaults[name]
			}
			check(LoggingConflict, "--"+name, current, p.loggingRequests[name], rs)
		}
	}
	expandAll(c, p.candidate)
	enabled := resolvedValues(p.candidate)
	specs := p.candidate.GetAll()
	for _, name := range sortedKeys(c.features) {
		if name == allAlpha || name == allBeta {
			continue // compared through the features they stand for
		}
		setting := fmt.Sprintf("feature gate %q", name)
		current, ok := enabled[name]
		if !ok {
			spec, known := specs[featuregate.Feature(name)]
			if !known {
				conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: setting, Requests: c.features[name],
					Reason: "not available at the running emulated version " + p.EmulationVersion})
				continue
			}
			current = spec.Default
		}
		check(FeatureGateConflict, setting, strconv.FormatBool(current), p.requests[name], c.features[name])
	}
	return conflicts
}

// loggingDefaults are the values -v, --vmodule and --logging-format have
// when nobody sets them, as their flags print them.
func loggingDefaults() map[string]string {
	fs := pflag.NewFlagSet("defaults", pflag.ContinueOnError)
	logsapi.AddFlags(logsapi.NewLoggingConfiguration(), fs)
	out := map[string]string{}
	for _, name := range loggingFlags {
		if f := fs.Lookup(name); f != nil {
			out[name] = f.Value.String()
		}
	}
	return out
}
