package scoping

import (
	"errors"
	"fmt"
	"slices"
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

// Barrier creates the scopes of one control-plane start and, once all of
// them parsed, reconciles them into a Plan and applies it to the Target
// once. Create one per start with NewBarrier; a process may start (and so
// create barriers) several times, one after another.
type Barrier struct {
	target        Target
	pristine      featuregate.MutableVersionedFeatureGate // the process defaults
	pristineSpecs map[featuregate.Feature]featuregate.VersionedSpecs
	pristineDeps  map[featuregate.Feature][]featuregate.Feature // nil: the gate has no dependencies (component-base v0.34)
	known         []featuregate.Feature                         // every feature of the pristine gate
	logger        logr.Logger

	mu      sync.Mutex
	scopes  []*Scope
	applied bool
	made    *reconciled // by the last Reconcile
	plan    *reconciled // the applied one
}

// Option configures a Barrier.
type Option func(*Barrier)

// WithLogger sets the logger for warnings and the apply line; the default is
// klog.Background().
func WithLogger(l logr.Logger) Option { return func(b *Barrier) { b.logger = l } }

// NewBarrier takes a copy of the target gate at the process defaults — the
// base every scope copies: every explicitly set value reset to its default,
// the emulated and min-compatibility versions at the binary's defaults. So
// a second start in one process is computed from the defaults, not from what
// an earlier start applied: the barrier owns the explicit values of the
// process gate. Defaults overridden on the process gate (OverrideDefault)
// are kept: they are the process defaults. Call it before anything closes
// the process gate.
func NewBarrier(t Target, opts ...Option) (*Barrier, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	pristine := t.Gate.DeepCopy()
	b := &Barrier{target: t, pristine: pristine, pristineSpecs: pristine.GetAllVersioned(), pristineDeps: dependencies(pristine), logger: klog.Background()}
	for name := range b.pristineSpecs {
		b.known = append(b.known, name)
	}
	sort.Slice(b.known, func(i, j int) bool { return b.known[i] < b.known[j] })
	ev := t.NewEffectiveVersion()
	if err := resetValues(pristine, b.known); err != nil {
		return nil, fmt.Errorf("scoping: the process feature gate cannot be reset to its defaults: %w", err)
	}
	if err := setGateVersions(pristine, ev.EmulationVersion(), ev.MinCompatibilityVersion()); err != nil {
		return nil, fmt.Errorf("scoping: the process feature gate cannot be reset to its defaults: %w", err)
	}
	for _, o := range opts {
		o(b)
	}
	return b, nil
}

// resetValues resets every value set on g, of the features names, to its
// default: first those set explicitly, then those AllAlpha/AllBeta set.
func resetValues(g featuregate.MutableVersionedFeatureGate, names []featuregate.Feature) error {
	resolved := resolvedValues(g)
	var explicit []featuregate.Feature
	for _, name := range names {
		if g.ExplicitlySet(name) {
			explicit = append(explicit, name)
		}
	}
	for _, name := range explicit {
		delete(resolved, string(name))
		if err := g.ResetFeatureValueToDefault(name); err != nil {
			return fmt.Errorf("resetting %s: %w", name, err)
		}
	}
	for name := range resolved {
		if err := g.ResetFeatureValueToDefault(featuregate.Feature(name)); err != nil {
			return fmt.Errorf("resetting %s: %w", name, err)
		}
	}
	return nil
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
	// SourceCode: a component's own code set it, or overrode its default, in
	// the component's scope (and no component set it by flag).
	SourceCode Source = "code"
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

// SetBy says who decided the feature in one word: component=value for each
// component that set it, sorted and comma-separated
// ("kube-apiserver=true,kube-scheduler=true"), else its Source ("default",
// "emulated-version"). It is the SET-BY of the Feature objects a distro
// publishes (components/featurepub) and the set_by label of the harness's
// kubeharness_feature_enabled metric.
func (f FeatureState) SetBy() string {
	if len(f.Requests) == 0 {
		return string(f.Source)
	}
	parts := make([]string, len(f.Requests))
	for i, r := range f.Requests {
		parts[i] = r.Component + "=" + r.Value
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// reconciled is what the barrier keeps of a plan it made: the plan (plain
// data, handed out) and the live parts Apply and Admit need.
type reconciled struct {
	*Plan
	barrier         *Barrier
	emu, min        *version.Version
	candidate       featuregate.MutableVersionedFeatureGate // the reconciled gate, a copy
	requests        map[string][]Request
	loggingRequests map[string][]Request
	versionRequests map[string][]Request
}

// Reconcile builds the plan from every scope of the barrier; all must have
// parsed. Different values of one kube feature, of the kube emulated or
// min-compatibility version, or of a logging setting, and settings that are
// valid alone but not together, come back at once as a *ConflictError.
// Reconcile changes nothing; Apply does.
//
// It works in steps, each returning its own conflicts: collect every
// scope's requests (its flags, and what its code changed in its gate);
// resolve the versions; agree on logging; expand AllAlpha and AllBeta into
// the features they stand for at the resolved versions; agree per feature;
// then validate the agreed features together at the resolved versions.
func (b *Barrier) Reconcile() (*Plan, error) {
	b.mu.Lock()
	scopes := append([]*Scope(nil), b.scopes...)
	applied := b.applied
	b.mu.Unlock()
	if applied {
		return nil, ErrSealed
	}
	c, err := collect(scopes)
	if err != nil {
		return nil, err
	}
	p := &reconciled{Plan: &Plan{Overrides: map[string]bool{}, Logging: LoggingSettings{}, Components: c.components}, barrier: b, loggingRequests: c.logging}
	versionConflicts := p.resolveVersions(c)
	conflicts := append(versionConflicts, p.agreeLogging(c)...)
	var atVersions featuregate.MutableVersionedFeatureGate
	if len(versionConflicts) == 0 {
		// Which features AllAlpha and AllBeta stand for depends on the version.
		atVersions = p.atVersions()
		expandAll(c, atVersions)
	}
	featureConflicts := p.agreeFeatures(c)
	conflicts = append(conflicts, featureConflicts...)
	if len(versionConflicts) == 0 && len(featureConflicts) == 0 {
		// With features or versions in conflict, the set would be judged
		// without them; that only adds noise, so judge it once they agree.
		conflicts = append(conflicts, p.checkCombination(c, atVersions)...)
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{Conflicts: conflicts}
	}
	p.versionRequests = map[string][]Request{"--emulated-version": c.emulated, "--min-compatibility-version": c.minCompat}
	p.warn(c.emulated)
	p.warnLogging()
	p.Features = featureStates(p.candidate, b.pristine, p.requests)
	b.mu.Lock()
	b.made = p
	b.mu.Unlock()
	return p.Plan, nil
}

// collected is every request of every scope, by setting.
type collected struct {
	components []string
	features   map[string][]Request
	emulated   []Request
	minCompat  []Request
	logging    map[string][]Request
}

// collect gathers each parsed scope's requests: its flags (recorded by
// Parse) and what its code changed in its gate (read now).
func collect(scopes []*Scope) (*collected, error) {
	c := &collected{features: map[string][]Request{}, logging: map[string][]Request{}}
	for _, s := range scopes {
		s.mu.Lock()
		state, req := s.state, s.requests
		var code map[string]Request
		if state == scopeParsed {
			code = s.codeRequests(req.Features)
		}
		s.mu.Unlock()
		if state != scopeParsed {
			return nil, fmt.Errorf("scoping: component %s has not parsed its arguments", s.name)
		}
		c.components = append(c.components, s.name)
		for _, m := range []map[string]Request{req.Features, code} {
			for name, r := range m {
				c.features[name] = append(c.features[name], r)
			}
		}
		if req.EmulatedVersion != nil {
			c.emulated = append(c.emulated, *req.EmulatedVersion)
		}
		if req.MinCompatibilityVersion != nil {
			c.minCompat = append(c.minCompat, *req.MinCompatibilityVersion)
		}
		for name, r := range req.Logging {
			c.logging[name] = append(c.logging[name], r)
		}
	}
	return c, nil
}

// agree sorts the requests for one setting and returns their common value,
// or a conflict when they differ.
func agree(kind ConflictKind, setting string, rs []Request) (string, *Conflict) {
	sortRequests(rs)
	for _, r := range rs[1:] {
		if r.Value != rs[0].Value {
			return "", &Conflict{Kind: kind, Setting: setting, Requests: rs}
		}
	}
	return rs[0].Value, nil
}

// resolveVersions agrees on the kube emulated and min-compatibility versions
// (starting from the binary's defaults, not from what an earlier start
// applied) and checks them against upstream's ranges. It sets the plan's
// versions.
func (p *reconciled) resolveVersions(c *collected) []*Conflict {
	ev := p.barrier.target.NewEffectiveVersion()
	var conflicts []*Conflict
	if len(c.emulated) > 0 {
		v, conflict := agree(EmulatedVersionConflict, "--emulated-version", c.emulated)
		if conflict != nil {
			conflicts = append(conflicts, conflict)
		} else {
			// Setting the emulated version derives min-compatibility from it,
			// as upstream does; an explicit min-compatibility overrides that.
			ev.SetEmulationVersion(version.MustParse(v))
		}
	}
	if len(c.minCompat) > 0 {
		v, conflict := agree(MinCompatibilityVersionConflict, "--min-compatibility-version", c.minCompat)
		if conflict != nil {
			conflicts = append(conflicts, conflict)
		} else {
			ev.SetMinCompatibilityVersion(version.MustParse(v))
		}
	}
	if len(conflicts) > 0 {
		return conflicts
	}
	if errs := ev.Validate(); len(errs) > 0 {
		versionReqs := append(append([]Request(nil), c.emulated...), c.minCompat...)
		sortRequests(versionReqs)
		return []*Conflict{{Kind: MinCompatibilityVersionConflict, Setting: "--emulated-version/--min-compatibility-version", Requests: versionReqs, Reason: errors.Join(errs...).Error()}}
	}
	p.BinaryVersion = ev.BinaryVersion().String()
	p.emu, p.min = ev.EmulationVersion(), ev.MinCompatibilityVersion()
	p.EmulationVersion, p.MinCompatibilityVersion = p.emu.String(), p.min.String()
	return nil
}

// atVersions is a copy of the base gate at the plan's versions, or nil when
// they do not fit it.
func (p *reconciled) atVersions() featuregate.MutableVersionedFeatureGate {
	g := p.barrier.pristine.DeepCopy()
	if err := setGateVersions(g, p.emu, p.min); err != nil {
		return nil // checkCombination reports it
	}
	return g
}

// agreeLogging agrees on -v, --vmodule and --logging-format.
func (p *reconciled) agreeLogging(c *collected) []*Conflict {
	var conflicts []*Conflict
	for _, name := range loggingFlags {
		if rs := c.logging[name]; len(rs) > 0 {
			if v, conflict := agree(LoggingConflict, "--"+name, rs); conflict != nil {
				conflicts = append(conflicts, conflict)
			} else {
				p.Logging[name] = v
			}
		}
	}
	return conflicts
}

// The special features of every feature gate: one value for every feature
// at a stage that is not set explicitly.
const (
	allAlpha = "AllAlpha"
	allBeta  = "AllBeta"
)

// expandAll turns each component's AllAlpha/AllBeta request into a request
// for every feature at that stage at the plan's versions that the component
// did not set itself, as upstream's gate resolves it: a component asking for
// "all alpha on" asks for each alpha feature, so another component setting
// one of them the other way is a conflict. The expanded requests carry the
// AllAlpha/AllBeta flag and Via; they are not overrides of their own.
// Components that disagree on AllAlpha itself are one conflict, not one per
// feature: that request is not expanded.
func expandAll(c *collected, g featuregate.MutableVersionedFeatureGate) {
	if g == nil {
		return
	}
	var specs map[featuregate.Feature]featuregate.FeatureSpec
	for _, special := range []string{allAlpha, allBeta} {
		rs := c.features[special]
		if len(rs) == 0 {
			continue
		}
		if _, conflict := agree(FeatureGateConflict, "", slices.Clone(rs)); conflict != nil {
			continue
		}
		if specs == nil {
			specs = g.GetAll()
		}
		stage := featuregate.Alpha
		if special == allBeta {
			stage = featuregate.Beta
		}
		for _, r := range rs {
			for name, spec := range specs {
				if spec.PreRelease != stage || name == allAlpha || name == allBeta {
					continue
				}
				own := slices.ContainsFunc(c.features[string(name)], func(o Request) bool { return o.Component == r.Component && o.Via == "" })
				if !own {
					implied := r
					implied.Via = special
					c.features[string(name)] = append(c.features[string(name)], implied)
				}
			}
		}
	}
}

// agreeFeatures agrees per kube feature. Only requests a component made for
// the feature itself become overrides; those implied by AllAlpha/AllBeta
// need only agree.
func (p *reconciled) agreeFeatures(c *collected) []*Conflict {
	var conflicts []*Conflict
	for _, name := range sortedKeys(c.features) {
		rs := c.features[name]
		v, conflict := agree(FeatureGateConflict, fmt.Sprintf("feature gate %q", name), rs)
		if conflict != nil {
			conflicts = append(conflicts, conflict)
			continue
		}
		if slices.ContainsFunc(rs, func(r Request) bool { return r.Via == "" }) {
			p.Overrides[name], _ = strconv.ParseBool(v)
		}
	}
	p.requests = c.features
	return conflicts
}

// checkCombination validates the agreed features together at the resolved
// versions, on a copy of the base gate; each feature that does not fit is
// a conflict naming who asked for it and who set the versions. It keeps the
// reconciled gate for the plan's feature table.
//
// candidate is a copy of the base gate at the reconciled versions (nil when
// they do not fit it); checkCombination sets the overrides on it.
func (p *reconciled) checkCombination(c *collected, candidate featuregate.MutableVersionedFeatureGate) []*Conflict {
	versionReqs := append(append([]Request(nil), c.emulated...), c.minCompat...)
	sortRequests(versionReqs)
	if candidate == nil {
		err := setGateVersions(p.barrier.pristine.DeepCopy(), p.emu, p.min)
		return []*Conflict{{Kind: CombinationConflict, Setting: "--emulated-version", Requests: versionReqs,
			Reason: fmt.Sprintf("the process feature gate's settings are not valid at this version: %v", err)}}
	}
	if err := candidate.SetFromMap(p.Overrides); err != nil {
		// SetFromMap keeps the raw values even when it fails: attribute the
		// failure feature by feature on fresh copies at the reconciled versions.
		var conflicts []*Conflict
		for _, name := range sortedKeys(p.Overrides) {
			if ferr := p.atVersions().SetFromMap(map[string]bool{name: p.Overrides[name]}); ferr != nil {
				rs := append(append([]Request(nil), c.features[name]...), versionReqs...)
				conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: fmt.Sprintf("feature gate %q", name), Requests: rs, Reason: ferr.Error()})
			}
		}
		if len(conflicts) == 0 { // only the set as a whole fails: dependencies between features
			var rs []Request
			for _, name := range sortedKeys(p.Overrides) {
				rs = append(rs, c.features[name]...)
			}
			sortRequests(rs)
			conflicts = append(conflicts, &Conflict{Kind: CombinationConflict, Setting: "feature gates", Requests: rs, Reason: err.Error()})
		}
		return conflicts
	}
	p.candidate = candidate
	return nil
}

// warn records (and logs) that an emulated version below binary-1 may be
// out of support, as the KEP-4330 discussion asked.
func (p *reconciled) warn(emulated []Request) {
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

// warnLogging records that the logging flags some component set are not
// applied, when the target does not apply logging (a binary that applied
// component-base logging itself).
func (p *reconciled) warnLogging() {
	if p.barrier.target.ApplyLogging != nil || len(p.Logging) == 0 {
		return
	}
	var set []string
	for _, name := range loggingFlags {
		for _, r := range p.loggingRequests[name] {
			set = append(set, r.Flag+" ("+r.Component+")")
		}
	}
	w := "logging is not applied by the barrier (the target's ApplyLogging is nil: the binary applies logging itself), so " + strings.Join(set, ", ") + " take no effect"
	p.Warnings = append(p.Warnings, w)
	p.barrier.logger.Info("Warning: " + w)
}

func featureStates(candidate, pristine featuregate.MutableVersionedFeatureGate, features map[string][]Request) []FeatureState {
	atEmu := candidate.GetAll()
	atBinary := atEmu
	if !sameGateVersions(candidate, pristine) {
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
			Stage:           StageName(spec),
			Default:         spec.Default,
			Enabled:         enabled,
			LockedToDefault: spec.LockToDefault,
			Source:          SourceDefault,
			Requests:        features[string(name)],
		}
		switch {
		case slices.ContainsFunc(fs.Requests, func(r Request) bool { return r.Source != SourceCode }):
			fs.Source = SourceFlag
		case len(fs.Requests) > 0:
			fs.Source = SourceCode
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

// StageName is how a Plan names a feature's stage (FeatureState.Stage):
// Alpha, Beta, GA or Deprecated.
func StageName(spec featuregate.FeatureSpec) string {
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

// Apply validates the plan against the target once more, on a copy, then
// applies it once — p must be the plan this barrier's last Reconcile
// returned (a plan decoded from JSON, or another barrier's, is refused): the logging settings (if the target applies logging), the
// process gate, the process registry's kube effective version, and back into
// every scope's gate and effective version, so that every view answers the
// same for every kube feature. Then the scopes are sealed. Apply is
// all-or-nothing: an error leaves the process gate as it was. A second Apply
// returns ErrSealed.
func (b *Barrier) Apply(plan *Plan) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.applied {
		return ErrSealed
	}
	p := b.made
	if p == nil || p.Plan != plan {
		return errors.New("scoping: Apply takes the plan this barrier's last Reconcile returned")
	}
	if len(b.scopes) != len(p.Components) {
		return fmt.Errorf("scoping: %d scopes exist but the plan reconciled %d; reconcile again", len(b.scopes), len(p.Components))
	}
	// Reconcile validated the plan on a copy of the base gate. If the
	// process gate's features, specs and dependencies are still the base's,
	// the same plan cannot fail on it; otherwise it is validated again on a
	// copy first, so that a failure changes nothing.
	if !b.targetUnchanged() {
		check := b.target.Gate.DeepCopy()
		if err := b.resetAndSet(check, p); err != nil {
			return fmt.Errorf("scoping: the process feature gate changed since the plan was made and no longer accepts it: %w", err)
		}
	}
	if b.target.ApplyLogging != nil {
		if err := b.target.ApplyLogging(p.Logging); err != nil {
			return &LoggingError{Settings: p.loggingRequests, Err: err}
		}
	}
	// Validated on an identical copy: these cannot fail now.
	if err := b.resetAndSet(b.target.Gate, p); err != nil {
		return fmt.Errorf("scoping: applying the process feature gate: %w", err)
	}
	setVersion(b.targetVersion(), p)
	for _, s := range b.scopes {
		if err := s.seal(p); err != nil {
			return err
		}
	}
	b.applied, b.plan = true, p
	b.logger.Info("Barrier applied", "components", p.Components, "emulationVersion", p.EmulationVersion,
		"minCompatibilityVersion", p.MinCompatibilityVersion, "overrides", len(p.Overrides))
	return nil
}

// targetUnchanged reports whether the process gate has the features,
// versioned specs and dependencies it had when the barrier was made: then
// resetting it and setting a plan does exactly what Reconcile did on the
// copy it validated the plan on. (Values and versions do not count:
// resetAndSet replaces them.)
func (b *Barrier) targetUnchanged() bool {
	specs := b.target.Gate.GetAllVersioned()
	if len(specs) != len(b.pristineSpecs) {
		return false
	}
	for name, vs := range specs {
		if !specsEqual(vs, b.pristineSpecs[name]) {
			return false
		}
	}
	deps := dependencies(b.target.Gate)
	if len(deps) != len(b.pristineDeps) {
		return false
	}
	for name, d := range deps {
		if !slices.Equal(d, b.pristineDeps[name]) {
			return false
		}
	}
	return true
}

// specsEqual compares two features' versioned specs field by field.
func specsEqual(a, b featuregate.VersionedSpecs) bool {
	return slices.EqualFunc(a, b, func(x, y featuregate.FeatureSpec) bool {
		if x.Default != y.Default || x.LockToDefault != y.LockToDefault || x.PreRelease != y.PreRelease {
			return false
		}
		if x.Version == nil || y.Version == nil {
			return x.Version == y.Version
		}
		return x.Version.EqualTo(y.Version)
	})
}

// dependencies are the gate's feature dependencies (component-base v0.35
// and later), nil without.
func dependencies(g featuregate.FeatureGate) map[featuregate.Feature][]featuregate.Feature {
	dg, ok := g.(interface {
		Dependencies() map[featuregate.Feature][]featuregate.Feature
	})
	if !ok {
		return nil
	}
	return dg.Dependencies()
}

// resetAndSet puts a gate's values back at their defaults (what an earlier
// start, or the scope's own parse, set is not inherited), then sets the
// plan: its versions, then its overrides.
func (b *Barrier) resetAndSet(g featuregate.MutableVersionedFeatureGate, p *reconciled) error {
	if err := resetValues(g, b.known); err != nil {
		return err
	}
	return setGate(g, p)
}

// seal gives the scope the plan's gate and versions and seals it.
func (s *Scope) seal(p *reconciled) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state = scopeSealed
	setVersion(s.effective, p)
	if err := s.barrier.resetAndSet(s.gate, p); err != nil {
		return fmt.Errorf("scoping: applying to %s's gate: %w", s.name, err)
	}
	return nil
}

func setGate(g featuregate.MutableVersionedFeatureGate, p *reconciled) error {
	if err := setGateVersions(g, p.emu, p.min); err != nil {
		return err
	}
	return g.SetFromMap(p.Overrides)
}

func setVersion(ev basecompat.MutableEffectiveVersion, p *reconciled) {
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
