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
	inForce := func(setting string, value string, rs []Request) *Conflict {
		var others []Request
		for _, r := range p.requestsFor(setting) {
			if r.Component != component {
				others = append(others, r)
			}
		}
		all := append(others, rs...)
		sortRequests(all)
		return &Conflict{Kind: kindOf(setting), Setting: setting, Requests: all, Reason: fmt.Sprintf("%s is %s in the running control plane; %s", setting, value, reason)}
	}
	var conflicts []*Conflict
	check := func(setting, current string, rs []Request) {
		var differ []Request
		for _, r := range rs {
			if r.Value != current {
				differ = append(differ, r)
			}
		}
		if len(differ) > 0 {
			conflicts = append(conflicts, inForce(setting, current, differ))
		}
	}
	if len(c.emulated) > 0 {
		check("--emulated-version", p.EmulationVersion, c.emulated)
	}
	if len(c.minCompat) > 0 {
		check("--min-compatibility-version", p.MinCompatibilityVersion, c.minCompat)
	}
	defaults := loggingDefaults()
	for _, name := range loggingFlags {
		if rs := c.logging[name]; len(rs) > 0 {
			current, ok := p.Logging[name]
			if !ok {
				current = defaults[name]
			}
			check("--"+name, current, rs)
		}
	}
	expandAll(c, p.candidate)
	enabled := resolvedValues(p.candidate)
	specs := p.candidate.GetAll()
	for _, name := range sortedKeys(c.features) {
		if name == allAlpha || name == allBeta {
			continue // compared through the features they stand for
		}
		current, ok := enabled[name]
		if !ok {
			spec, known := specs[featureName(name)]
			if !known {
				conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: fmt.Sprintf("feature gate %q", name), Requests: c.features[name],
					Reason: "not available at the running emulated version " + p.EmulationVersion})
				continue
			}
			current = spec.Default
		}
		check(fmt.Sprintf("feature gate %q", name), strconv.FormatBool(current), c.features[name])
	}
	return conflicts
}

// requestsFor returns the requests in force for a setting ("feature gate
// \"Foo\"", "--emulated-version", "--v").
func (p *reconciled) requestsFor(setting string) []Request {
	switch setting {
	case "--emulated-version", "--min-compatibility-version":
		return p.versionRequests[setting]
	}
	if name, ok := cutQuoted(setting); ok {
		return p.requests[name]
	}
	if len(setting) > 2 {
		return p.loggingRequests[setting[2:]]
	}
	return nil
}

func kindOf(setting string) ConflictKind {
	switch setting {
	case "--emulated-version":
		return EmulatedVersionConflict
	case "--min-compatibility-version":
		return MinCompatibilityVersionConflict
	}
	if _, ok := cutQuoted(setting); ok {
		return FeatureGateConflict
	}
	return LoggingConflict
}

// cutQuoted returns Foo from `feature gate "Foo"`.
func cutQuoted(setting string) (string, bool) {
	const prefix = "feature gate "
	if len(setting) <= len(prefix) || setting[:len(prefix)] != prefix {
		return "", false
	}
	name, err := strconv.Unquote(setting[len(prefix):])
	return name, err == nil
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

func featureName(name string) featuregate.Feature { return featuregate.Feature(name) }
