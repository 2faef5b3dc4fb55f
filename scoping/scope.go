package scoping

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
)

// Requests is what one component asked for explicitly, recorded by Parse.
// Only these take part in reconciliation: a component that did not set a
// setting accepts what the others set.
type Requests struct {
	// Features are the kube features the component set, by name.
	Features map[string]Request `json:"features,omitempty"`
	// EmulatedVersion is the kube --emulated-version, if set.
	EmulatedVersion *Request `json:"emulatedVersion,omitempty"`
	// MinCompatibilityVersion is the kube --min-compatibility-version, if set.
	MinCompatibilityVersion *Request `json:"minCompatibilityVersion,omitempty"`
	// Logging holds -v, --vmodule and --logging-format, by flag name, if set.
	Logging map[string]Request `json:"logging,omitempty"`
}

type scopeState int

const (
	scopeCreated scopeState = iota
	scopeParsed
	scopeFailed // Parse returned an error; flag values may be half-set
	scopeSealed
)

// Scope is one component's private view of the process-wide flags and
// globals: its own pflag.FlagSet, its own ComponentGlobalsRegistry with the
// kube component registered to a deep copy of the process gate and a fresh
// effective version. Nothing a scope does before the barrier touches another
// scope or the process-wide state. Create scopes with Barrier.NewScope.
type Scope struct {
	name      string
	barrier   *Barrier
	fs        *pflag.FlagSet
	registry  basecompat.ComponentGlobalsRegistry
	gate      featuregate.MutableVersionedFeatureGate
	effective basecompat.MutableEffectiveVersion

	mu       sync.Mutex
	state    scopeState
	requests Requests
}

// Name is the component's name, as errors and the plan report it.
func (s *Scope) Name() string { return s.name }

// FlagSet is the component's own flag set. Add the component's flags to it
// before Parse.
func (s *Scope) FlagSet() *pflag.FlagSet { return s.fs }

// Registry is the scope's own ComponentGlobalsRegistry, with KubeComponent
// registered. Give it to upstream options that take a registry
// (e.g. kube-scheduler's NewOptionsWithComponentGlobalsRegistry). A distro
// component may Register its own registry components here, under names other
// than KubeComponent, before AddFlags; those stay private to the scope.
func (s *Scope) Registry() basecompat.ComponentGlobalsRegistry { return s.registry }

// FeatureGate is the scope's copy of the kube feature gate. Before the
// barrier it holds only this component's settings; after it, the reconciled
// ones, the same as the process gate.
func (s *Scope) FeatureGate() featuregate.MutableVersionedFeatureGate { return s.gate }

// EffectiveVersion is the scope's copy of the kube effective version.
func (s *Scope) EffectiveVersion() basecompat.MutableEffectiveVersion { return s.effective }

// AddFlags adds the registry's --feature-gates, --emulated-version and
// --min-compatibility-version to the scope's flag set, for components whose
// upstream options do not add them themselves. Like upstream's AddFlags it
// closes the registered gates: register private components first.
func (s *Scope) AddFlags() { s.registry.AddFlags(s.fs) }

// Requested returns what the component asked for explicitly. It is empty
// before Parse.
func (s *Scope) Requested() Requests {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Parse parses args into the scope's flag set and calls the scoped
// registry's Set, as an upstream command's PersistentPreRunE does, then
// checks the versions against the binary's allowed range and records what the
// component asked for. Errors are *FlagError. A scope parses once; after the
// barrier applied, Parse returns ErrSealed.
func (s *Scope) Parse(args []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case scopeParsed, scopeFailed:
		return &FlagError{Component: s.name, Err: errors.New("scope already parsed")}
	case scopeSealed:
		return ErrSealed
	}
	if err := s.parse(args); err != nil {
		s.state = scopeFailed
		return err
	}
	s.state = scopeParsed
	return nil
}

func (s *Scope) parse(args []string) error {
	recs := map[string]*recorder{}
	for _, name := range recordedFlags {
		if f := s.fs.Lookup(name); f != nil {
			r, ok := f.Value.(*recorder)
			if !ok {
				r = &recorder{Value: f.Value}
				f.Value = r
			}
			recs[name] = r
		}
	}
	if err := s.fs.Parse(args); err != nil {
		return &FlagError{Component: s.name, Err: err}
	}
	if n := s.fs.NArg(); n > 0 {
		return &FlagError{Component: s.name, Err: fmt.Errorf("unexpected positional arguments %q", s.fs.Args())}
	}
	texts := func(name string) []string {
		if r := recs[name]; r != nil {
			return r.texts
		}
		return nil
	}
	features, err := featureItems(texts("feature-gates"))
	if err != nil {
		return s.itemErr("feature-gates", err)
	}
	emulated, err := versionItems(texts("emulated-version"))
	if err != nil {
		return s.itemErr("emulated-version", err)
	}
	minCompat, err := versionItems(texts("min-compatibility-version"))
	if err != nil {
		return s.itemErr("min-compatibility-version", err)
	}
	for _, it := range features {
		if it.component != KubeComponent && s.registry.FeatureGateFor(it.component) == nil {
			return s.flagErr("feature-gates", it.text, fmt.Errorf("unknown registry component %q: not registered in this component's registry", it.component))
		}
	}
	for flag, items := range map[string][]flagItem{"emulated-version": emulated, "min-compatibility-version": minCompat} {
		for _, it := range items {
			if s.registry.EffectiveVersionFor(it.component) == nil {
				return s.flagErr(flag, it.text, fmt.Errorf("unknown registry component %q: not registered in this component's registry", it.component))
			}
		}
	}
	if err := s.registry.Set(); err != nil {
		return s.setErr(err, features, emulated, minCompat)
	}
	if err := s.checkVersions(emulated, minCompat); err != nil {
		return err
	}
	s.record(features, emulated, minCompat, recs)
	return nil
}

// checkVersions applies upstream's range rules (emulated within
// [binary-3 (floor), binary], min-compatibility within [floor, emulated]) to
// every registry component the component gave a version for.
func (s *Scope) checkVersions(emulated, minCompat []flagItem) error {
	comps := map[string]bool{}
	for _, it := range append(append([]flagItem(nil), emulated...), minCompat...) {
		comps[it.component] = true
	}
	for comp := range comps {
		for _, err := range s.registry.EffectiveVersionFor(comp).Validate() {
			flag, items := "emulated-version", emulated
			if strings.HasPrefix(err.Error(), upstreamMinCompatibilityInvalid) {
				flag, items = "min-compatibility-version", minCompat
			}
			text := comp
			for _, it := range items {
				if it.component == comp {
					text = it.text
				}
			}
			return s.flagErr(flag, text, err)
		}
	}
	return nil
}

// setErr attributes an error of the registry's Set to the flag that caused
// it: versions were checked already, so it is a feature gate, named in the
// error when upstream names it.
func (s *Scope) setErr(err error, features, emulated, minCompat []flagItem) error {
	msg := err.Error()
	for _, it := range features {
		if strings.Contains(msg, it.key) {
			return s.flagErr("feature-gates", it.text, err)
		}
	}
	switch {
	case len(features) > 0:
		all := make([]string, len(features))
		for i, it := range features {
			all[i] = it.text
		}
		return s.flagErr("feature-gates", strings.Join(all, ","), err)
	case len(emulated) > 0:
		return s.flagErr("emulated-version", emulated[0].text, err)
	case len(minCompat) > 0:
		return s.flagErr("min-compatibility-version", minCompat[0].text, err)
	}
	return &FlagError{Component: s.name, Err: err}
}

func (s *Scope) itemErr(flag string, err error) error {
	var ie *itemError
	if errors.As(err, &ie) {
		return s.flagErr(flag, ie.item, ie.err)
	}
	return s.flagErr(flag, "", err)
}

func (s *Scope) flagErr(flag, value string, err error) error {
	return &FlagError{Component: s.name, Flag: "--" + flag, Value: value, Err: err}
}

// SetFeatures sets kube features that the component read from somewhere
// other than its command line — a configuration file its flags name, as the
// kubelet's --config — on the scope's gate, and records each as the
// component's request with origin as its Flag text
// ("--config=/etc/kubelet.yaml"), reconciled like a flag. A feature the
// component set by flag keeps the flag's value and request: the command line
// takes precedence, as upstream's does. Call it after Parse and before the
// barrier; errors are *FlagError naming origin and the feature.
func (s *Scope) SetFeatures(origin string, features map[string]bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case scopeCreated, scopeFailed:
		return &FlagError{Component: s.name, Flag: origin, Err: errors.New("SetFeatures before a successful Parse")}
	case scopeSealed:
		return ErrSealed
	}
	for _, name := range sortedKeys(features) {
		if _, flagged := s.requests.Features[name]; flagged {
			continue
		}
		value := strconv.FormatBool(features[name])
		if err := s.gate.SetFromMap(map[string]bool{name: features[name]}); err != nil {
			return &FlagError{Component: s.name, Flag: origin, Value: name + "=" + value, Err: err}
		}
		s.requests.Features[name] = Request{Component: s.name, Value: value, Flag: origin}
	}
	return nil
}

// record keeps what the component asked for explicitly on its command line.
// Features come from the gate itself (ExplicitlySet), with the flag text that
// set each. What the component's own code changes in its gate is read at the
// barrier (codeRequests), so that changes made after Parse count too.
func (s *Scope) record(features, emulated, minCompat []flagItem, recs map[string]*recorder) {
	req := Requests{Features: map[string]Request{}, Logging: map[string]Request{}}
	for _, it := range features {
		if it.component != KubeComponent || !s.gate.ExplicitlySet(featuregate.Feature(it.key)) {
			continue
		}
		b, _ := strconv.ParseBool(it.value)
		req.Features[it.key] = Request{Component: s.name, Value: strconv.FormatBool(b), Flag: flagText("feature-gates", it.text)}
	}
	versionReq := func(flag string, items []flagItem) *Request {
		for _, it := range items {
			if it.component == KubeComponent {
				return &Request{Component: s.name, Value: it.value, Flag: flagText(flag, it.text)}
			}
		}
		return nil
	}
	req.EmulatedVersion = versionReq("emulated-version", emulated)
	req.MinCompatibilityVersion = versionReq("min-compatibility-version", minCompat)
	for _, name := range loggingFlags {
		if r := recs[name]; r != nil && len(r.texts) > 0 {
			req.Logging[name] = Request{Component: s.name, Value: r.Value.String(), Flag: flagText(name, r.texts[len(r.texts)-1])}
		}
	}
	s.requests = req
}

// codeRequests returns what the component's own code changed in the scope's
// gate, not by flag: a value it set (SetFromMap, Set) and a default it
// overrode (OverrideDefault). Each is a request with Source SourceCode and the
// value the component sees, reconciled like a flag. A feature the component
// also set by flag is the flag's request: the flag came last.
func (s *Scope) codeRequests(flagged map[string]Request) map[string]Request {
	out := map[string]Request{}
	var resolved map[string]bool
	var atVersion map[featuregate.Feature]featuregate.FeatureSpec
	value := func(name featuregate.Feature) bool {
		if resolved == nil {
			resolved, atVersion = resolvedValues(s.gate), s.gate.GetAll()
		}
		if v, ok := resolved[string(name)]; ok {
			return v
		}
		return atVersion[name].Default
	}
	specs := s.gate.GetAllVersioned()
	for _, name := range s.barrier.known {
		if _, ok := flagged[string(name)]; ok {
			continue
		}
		switch {
		case s.gate.ExplicitlySet(name):
			out[string(name)] = Request{Component: s.name, Value: strconv.FormatBool(value(name)), Flag: CodeSetFlag, Source: SourceCode}
		case defaultsDiffer(specs[name], s.barrier.pristineSpecs[name]):
			out[string(name)] = Request{Component: s.name, Value: strconv.FormatBool(value(name)), Flag: CodeDefaultFlag, Source: SourceCode}
		}
	}
	return out
}

// defaultsDiffer reports whether a feature's versioned defaults were
// overridden (OverrideDefault changes the spec at the gate's version).
func defaultsDiffer(a, b featuregate.VersionedSpecs) bool {
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i].Default != b[i].Default {
			return true
		}
	}
	return false
}

// newScope gives the component a copy of the barrier's base gate and a
// fresh effective version: both at the process defaults, not at what an
// earlier start applied.
func newScope(b *Barrier, name string) (*Scope, error) {
	gate := b.pristine.DeepCopy()
	ev := b.target.NewEffectiveVersion()
	reg := basecompat.NewComponentGlobalsRegistry()
	if err := reg.Register(KubeComponent, ev, gate); err != nil {
		return nil, fmt.Errorf("scoping: %s: %w", name, err)
	}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Scope{name: name, barrier: b, fs: fs, registry: reg, gate: gate, effective: ev}, nil
}
