package scoping

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

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

// TableRows chooses the rows Plan.WriteTable writes.
type TableRows int

const (
	// AllFeatures: every kube feature.
	AllFeatures TableRows = iota
	// ChangedFeatures: only the features someone set, or whose value is not
	// their binary default.
	ChangedFeatures
)

// WriteTable writes the plan as a table: the versions, then NAME, STAGE,
// ENABLED, DEFAULT, SOURCE, SET-BY (component and flag of each request), then
// the warnings.
func (p *Plan) WriteTable(w io.Writer, rows TableRows) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "EMULATED: %s\tMIN-COMPATIBILITY: %s\tBINARY: %s\n\n", p.EmulationVersion, p.MinCompatibilityVersion, p.BinaryVersion)
	fmt.Fprintf(tw, "NAME\tSTAGE\tENABLED\tDEFAULT\tSOURCE\tSET-BY\n")
	for _, f := range p.Features {
		if rows == ChangedFeatures && f.Enabled == f.Default && f.Source == SourceDefault {
			continue
		}
		var by []string
		for _, r := range f.Requests {
			by = append(by, r.Component+" "+r.Flag)
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%t\t%s\t%s\n", f.Name, f.Stage, f.Enabled, f.Default, f.Source, strings.Join(by, "; "))
	}
	for _, warning := range p.Warnings {
		fmt.Fprintf(tw, "\nWarning: %s\n", warning)
	}
	return tw.Flush()
}
