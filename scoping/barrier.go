package scoping

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/version"
	basecompat "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// Barrier creates the scopes of one process and, once all of them parsed,
// reconciles them into a Plan and applies it to the Target once.
// Create one per process (per control-plane start) with NewBarrier.
type Barrier struct {
	target   Target
	pristine featuregate.MutableVersionedFeatureGate
	known    []featuregate.Feature // every feature of the pristine gate
	baseSet  map[string]bool       // features already set explicitly in the pristine gate, resolved
	logger   logr.Logger

	mu      sync.Mutex
	scopes  []*Scope
	applied bool
}

// Option configures a Barrier.
type Option func(*Barrier)

// WithLogger sets the logger for warnings and the apply line; the default is
// klog.Background().
func WithLogger(l logr.Logger) Option { return func(b *Barrier) { b.logger = l } }

// NewBarrier takes a pristine deep copy of the target gate — the base every
// scope copies — so call it before anything sets or closes the process gate.
func NewBarrier(t Target, opts ...Option) (*Barrier, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	b := &Barrier{target: t, pristine: t.Gate.DeepCopy(), logger: klog.Background()}
	b.baseSet = map[string]bool{}
	resolved := resolvedValues(b.pristine)
	for name := range b.pristine.GetAllVersioned() {
		b.known = append(b.known, name)
		if b.pristine.ExplicitlySet(name) {
			b.baseSet[string(name)] = resolved[string(name)]
		}
	}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// NewScope creates the scope of one component. Names must be unique and
// non-empty; after Apply, NewScope returns ErrSealed.
func (b *Barrier) NewScope(name string) (*Scope, error) {
	if name == "" {
		return nil, errors.New("scoping: a scope needs a component name")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied {
		return nil, ErrSealed
	}
	for _, s := range b.scopes {
		if s.name == name {
			return nil, fmt.Errorf("scoping: a scope named %q already exists", name)
		}
	}
	s, err := newScope(b, name)
	if err != nil {
		return nil, err
	}
	b.scopes = append(b.scopes, s)
	return s, nil
}

func (b *Barrier) targetVersion() basecompat.MutableEffectiveVersion {
	return b.target.Registry.EffectiveVersionFor(KubeComponent).(basecompat.MutableEffectiveVersion)
}

// Applied reports whether the barrier has applied a plan.
func (b *Barrier) Applied() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.applied
}

// Source says where a feature's effective value comes from.
type Source string

const (
	// SourceDefault: nobody set it; its default at the binary version.
	SourceDefault Source = "default"
	// SourceFlag: a component set it explicitly.
	SourceFlag Source = "flag"
	// SourceEmulatedVersion: nobody set it, and its default at the emulated
	// version differs from its default at the binary version.
	SourceEmulatedVersion Source = "emulated-version"
)

// FeatureState is one kube feature in the reconciled plan.
type FeatureState struct {
	Name            string    `json:"name"`
	Stage           string    `json:"stage"`
	Default         bool      `json:"default"`
	Enabled         bool      `json:"enabled"`
	LockedToDefault bool      `json:"lockedToDefault"`
	Source          Source    `json:"source"`
	Requests        []Request `json:"requests,omitempty"`
}

// Plan is the reconciled result of every scope: what the barrier will apply.
type Plan struct {
	BinaryVersion           string   `json:"binaryVersion"`
	EmulationVersion        string   `json:"emulationVersion"`
	MinCompatibilityVersion string   `json:"minCompatibilityVersion"`
	Components              []string `json:"components"`
	// Features is every kube feature at the reconciled versions. A plan made
	// by Reconcile computes it on first use: read it with FeatureStates (the
	// JSON form includes it). A plan decoded from JSON has it filled.
	Features []FeatureState  `json:"features"`
	Logging  LoggingSettings `json:"logging,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`

	barrier   *Barrier
	emu, min  *version.Version
	overrides map[string]bool

	featuresOnce sync.Once
	candidate    featuregate.MutableVersionedFeatureGate // the reconciled gate, a copy
	requests     map[string][]Request
}

// FeatureStates returns every kube feature at the reconciled versions:
// stage, default, effective value, lock, source and who asked for what. It
// is computed once, on first use, from a copy of the reconciled gate, so
// that reconciling costs nothing for a table nobody reads.
func (p *Plan) FeatureStates() []FeatureState {
	p.featuresOnce.Do(func() {
		if p.Features == nil && p.candidate != nil {
			p.Features = featureStates(p.candidate, p.barrier.pristine, p.requests)
		}
	})
	return p.Features
}

// MarshalJSON encodes the plan with its feature states.
func (p *Plan) MarshalJSON() ([]byte, error) {
	p.FeatureStates()
	type fields Plan // the same fields, without this method
	return json.Marshal((*fields)(p))
}

// Reconcile builds the plan from every scope of the barrier; all must have
// parsed. Different values of one kube feature, of the kube emulated or
// min-compatibility version, or of a logging setting, and settings that are
// valid alone but not together, come back at once as a *ConflictError.
// Reconcile changes nothing; Plan.Apply does.
func (b *Barrier) Reconcile() (*Plan, error) {
	b.mu.Lock()
	scopes := append([]*Scope(nil), b.scopes...)
	applied := b.applied
	b.mu.Unlock()
	if applied {
		return nil, ErrAlreadyApplied
	}
	features := map[string][]Request{}
	var emulated, minCompat []Request
	logging := map[string][]Request{}
	p := &Plan{barrier: b, overrides: map[string]bool{}, Logging: LoggingSettings{}}
	for _, s := range scopes {
		s.mu.Lock()
		state, req := s.state, s.requests
		s.mu.Unlock()
		if state != scopeParsed {
			return nil, fmt.Errorf("scoping: component %s has not parsed its arguments", s.name)
		}
		p.Components = append(p.Components, s.name)
		for name, r := range req.Features {
			features[name] = append(features[name], r)
		}
		if req.EmulatedVersion != nil {
			emulated = append(emulated, *req.EmulatedVersion)
		}
		if req.MinCompatibilityVersion != nil {
			minCompat = append(minCompat, *req.MinCompatibilityVersion)
		}
		for name, r := range req.Logging {
			logging[name] = append(logging[name], r)
		}
	}

	var conflicts []*Conflict
	agree := func(kind ConflictKind, setting string, rs []Request) (string, bool) {
		sortRequests(rs)
		for _, r := range rs[1:] {
			if r.Value != rs[0].Value {
				conflicts = append(conflicts, &Conflict{Kind: kind, Setting: setting, Requests: rs})
				return "", false
			}
		}
		return rs[0].Value, true
	}
	for _, name := range sortedKeys(features) {
		if v, ok := agree(FeatureGateConflict, fmt.Sprintf("feature gate %q", name), features[name]); ok {
			p.overrides[name], _ = strconv.ParseBool(v)
		}
	}
	current := b.targetVersion()
	emuVer, minVer := current.EmulationVersion(), current.MinCompatibilityVersion()
	emuOK, minOK := true, true
	if len(emulated) > 0 {
		var v string
		if v, emuOK = agree(EmulatedVersionConflict, "--emulated-version", emulated); emuOK {
			emuVer = version.MustParse(v)
		}
	}
	if len(minCompat) > 0 {
		var v string
		if v, minOK = agree(MinCompatibilityVersionConflict, "--min-compatibility-version", minCompat); minOK {
			minVer = version.MustParse(v)
		}
	}
	for _, name := range loggingFlags {
		if rs := logging[name]; len(rs) > 0 {
			if v, ok := agree(LoggingConflict, "--"+name, rs); ok {
				p.Logging[name] = v
			}
		}
	}

	if emuOK && minOK {
		// With features already in conflict, the rest of the set would be judged
		// without them; that only adds noise, so judge it once they agree.
		featuresAgree := len(conflicts) == 0 || conflicts[0].Kind != FeatureGateConflict
		conflicts = append(conflicts, p.checkCombination(emuVer, minVer, emulated, minCompat, features, featuresAgree)...)
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{Conflicts: conflicts}
	}
	p.warn(emulated)
	return p, nil
}

// checkCombination validates the reconciled versions and features together,
// on copies: the versions against upstream's ranges, the overrides against
// the gate at the reconciled versions. It fills in the plan's versions and
// features when they fit.
func (p *Plan) checkCombination(emuVer, minVer *version.Version, emulated, minCompat []Request, features map[string][]Request, featuresAgree bool) []*Conflict {
	b := p.barrier
	ev := b.target.NewEffectiveVersion()
	// Setting the emulated version derives min-compatibility from it, as
	// upstream does; an explicit min-compatibility (or, when nobody changes
	// the emulated version, the current one) overrides that.
	ev.SetEmulationVersion(emuVer)
	if len(emulated) == 0 || len(minCompat) > 0 {
		ev.SetMinCompatibilityVersion(minVer)
	}
	versionReqs := append(append([]Request(nil), emulated...), minCompat...)
	sortRequests(versionReqs)
	if errs := ev.Validate(); len(errs) > 0 {
		return []*Conflict{{Kind: MinCompatibilityVersionConflict, Setting: "--emulated-version/--min-compatibility-version", Requests: versionReqs, Reason: errors.Join(errs...).Error()}}
	}
	p.BinaryVersion = ev.BinaryVersion().String()
	p.emu, p.min = ev.EmulationVersion(), ev.MinCompatibilityVersion()
	p.EmulationVersion, p.MinCompatibilityVersion = p.emu.String(), p.min.String()

	candidate := b.target.Gate.DeepCopy()
	if err := candidate.SetEmulationVersionAndMinCompatibilityVersion(p.emu, p.min); err != nil {
		return []*Conflict{{Kind: CombinationConflict, Setting: "--emulated-version", Requests: versionReqs,
			Reason: "the process feature gate's settings are not valid at this version: " + err.Error()}}
	}
	if !featuresAgree {
		return nil
	}
	if err := candidate.SetFromMap(p.overrides); err != nil {
		// SetFromMap keeps the raw values even when it fails: attribute the
		// failure feature by feature on fresh copies at the reconciled versions.
		var conflicts []*Conflict
		for _, name := range sortedKeys(p.overrides) {
			one := b.target.Gate.DeepCopy()
			_ = one.SetEmulationVersionAndMinCompatibilityVersion(p.emu, p.min) // succeeded on candidate above
			if ferr := one.SetFromMap(map[string]bool{name: p.overrides[name]}); ferr != nil {
				rs := append(append([]Request(nil), features[name]...), versionReqs...)
				conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: fmt.Sprintf("feature gate %q", name), Requests: rs, Reason: ferr.Error()})
			}
		}
		if len(conflicts) == 0 { // only the set as a whole fails: dependencies between features
			var rs []Request
			for _, name := range sortedKeys(p.overrides) {
				rs = append(rs, features[name]...)
			}
			conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: "feature gates", Requests: rs, Reason: err.Error()})
		}
		return conflicts
	}
	p.candidate, p.requests = candidate, features
	return nil
}

// warn records (and logs) that an emulated version below binary-1 may be
// out of support, as the KEP-4330 discussion asked.
func (p *Plan) warn(emulated []Request) {
	bin := version.MustParse(p.BinaryVersion)
	if !p.emu.LessThan(version.MajorMinor(bin.Major(), bin.Minor()).SubtractMinor(1)) {
		return
	}
	var who []string
	for _, r := range emulated {
		who = append(who, r.Component+" ("+r.Flag+")")
	}
	w := fmt.Sprintf("emulated version %s is more than one minor release below binary version %s, asked by %s: release %s may be out of support; emulation enables that release's code paths, it does not make it a supported release",
		p.EmulationVersion, bin, strings.Join(who, ", "), p.EmulationVersion)
	p.Warnings = append(p.Warnings, w)
	p.barrier.logger.Info("Warning: "+w, "emulationVersion", p.EmulationVersion, "binaryVersion", bin.String())
}

func featureStates(candidate, pristine featuregate.MutableVersionedFeatureGate, features map[string][]Request) []FeatureState {
	atEmu := candidate.GetAll()
	atBinary := atEmu
	if !candidate.EmulationVersion().EqualTo(pristine.EmulationVersion()) || !candidate.MinCompatibilityVersion().EqualTo(pristine.MinCompatibilityVersion()) {
		atBinary = pristine.GetAll()
	}
	resolved := resolvedValues(candidate)
	out := make([]FeatureState, 0, len(atEmu))
	for name, spec := range atEmu {
		enabled, ok := resolved[string(name)]
		if !ok {
			enabled = spec.Default
		}
		fs := FeatureState{
			Name:            string(name),
			Stage:           stageName(spec),
			Default:         spec.Default,
			Enabled:         enabled,
			LockedToDefault: spec.LockToDefault,
			Source:          SourceDefault,
			Requests:        features[string(name)],
		}
		switch {
		case len(fs.Requests) > 0:
			fs.Source = SourceFlag
		case atBinary[name].Default != spec.Default:
			fs.Source = SourceEmulatedVersion
		}
		out = append(out, fs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// resolvedValues reads the gate's resolved explicit values (AllAlpha and
// AllBeta expanded) from its String form, "A=true,B=false". A feature not in
// it is at its default. Calling Enabled for every feature instead would record
// each as queried, which upstream does by cloning a set per call: quadratic in
// the number of features.
func resolvedValues(g featuregate.FeatureGate) map[string]bool {
	out := map[string]bool{}
	str, ok := g.(fmt.Stringer)
	if !ok {
		return out
	}
	for _, kv := range strings.Split(str.String(), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k], _ = strconv.ParseBool(v)
		}
	}
	return out
}

func stageName(spec featuregate.FeatureSpec) string {
	switch spec.PreRelease {
	case featuregate.Alpha:
		return "Alpha"
	case featuregate.Beta:
		return "Beta"
	case featuregate.GA:
		return "GA"
	case featuregate.Deprecated:
		return "Deprecated"
	}
	return string(spec.PreRelease)
}

// Overrides returns the kube features the plan sets explicitly, as
// SetFromMap takes them.
func (p *Plan) Overrides() map[string]bool {
	out := make(map[string]bool, len(p.overrides))
	for k, v := range p.overrides {
		out[k] = v
	}
	return out
}

// Apply validates the plan against the target once more, on a copy, then
// applies it once: the logging settings (if the target applies logging), the
// process gate, the process registry's kube effective version, and back into
// every scope's gate and effective version, so that every view answers the
// same for every kube feature. Then the scopes are sealed. Apply is
// all-or-nothing: an error leaves the process gate as it was. A second Apply
// returns ErrAlreadyApplied.
func (p *Plan) Apply() error {
	b := p.barrier
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied {
		return ErrAlreadyApplied
	}
	if len(b.scopes) != len(p.Components) {
		return fmt.Errorf("scoping: %d scopes exist but the plan reconciled %d; reconcile again", len(b.scopes), len(p.Components))
	}
	check := b.target.Gate.DeepCopy()
	if err := setGate(check, p); err != nil {
		return fmt.Errorf("scoping: the process feature gate changed since the plan was made and no longer accepts it: %w", err)
	}
	if b.target.ApplyLogging != nil {
		if err := b.target.ApplyLogging(p.Logging); err != nil {
			return fmt.Errorf("scoping: applying logging settings %v: %w", map[string]string(p.Logging), err)
		}
	}
	// Validated on an identical copy: these cannot fail now.
	if err := setGate(b.target.Gate, p); err != nil {
		return fmt.Errorf("scoping: applying the process feature gate: %w", err)
	}
	setVersion(b.targetVersion(), p)
	for _, s := range b.scopes {
		s.mu.Lock()
		err := setGate(s.gate, p)
		setVersion(s.effective, p)
		s.state = scopeSealed
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("scoping: applying to %s's gate: %w", s.name, err)
		}
	}
	b.applied = true
	b.logger.Info("Barrier applied", "components", p.Components, "emulationVersion", p.EmulationVersion,
		"minCompatibilityVersion", p.MinCompatibilityVersion, "overrides", len(p.overrides))
	return nil
}

func setGate(g featuregate.MutableVersionedFeatureGate, p *Plan) error {
	if err := g.SetEmulationVersionAndMinCompatibilityVersion(p.emu, p.min); err != nil {
		return err
	}
	return g.SetFromMap(p.overrides)
}

func setVersion(ev basecompat.MutableEffectiveVersion, p *Plan) {
	ev.SetEmulationVersion(p.emu)
	ev.SetMinCompatibilityVersion(p.min)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
