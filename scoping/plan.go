package scoping

// Plan is the reconciled result of every scope: what the barrier applies
// (Barrier.Apply), as plain data. It can be encoded as JSON and decoded
// again (a status endpoint, a dry run); the live state that applying needs
// stays in the barrier that made it.
type Plan struct {
	BinaryVersion           string   `json:"binaryVersion"`
	EmulationVersion        string   `json:"emulationVersion"`
	MinCompatibilityVersion string   `json:"minCompatibilityVersion"`
	Components              []string `json:"components"`
	// Overrides are the kube features the plan sets explicitly, as
	// SetFromMap takes them (AllAlpha and AllBeta included as asked).
	Overrides map[string]bool `json:"overrides,omitempty"`
	// Features is every kube feature at the reconciled versions: stage,
	// default, effective value, lock, source and who asked for what.
	Features []FeatureState  `json:"features"`
	Logging  LoggingSettings `json:"logging,omitempty"`
	Warnings []string        `json:"warnings,omitempty"`
}

// FeatureStates returns p.Features.
func (p *Plan) FeatureStates() []FeatureState { return p.Features }
