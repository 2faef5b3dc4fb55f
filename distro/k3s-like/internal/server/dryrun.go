package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// printPlan parses every component's arguments and runs the barrier without
// applying it, then prints the plan, or the conflicts.
func (o *options) printPlan(ctx context.Context, h *harness.Harness, args map[string][]string, stdout io.Writer) error {
	plan, err := h.DryRun(ctx)
	if err != nil {
		return err
	}
	if o.output == "json" {
		out := DryRunOutput{Plan: plan}
		for _, c := range h.Status().Components {
			out.Components = append(out.Components, DryRunComponent{Name: c.Name, Args: harness.RedactArgs(args[c.Name])})
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, c := range h.Status().Components {
		fmt.Fprintf(tw, "%s:\n", c.Name)
		for _, a := range harness.RedactArgs(args[c.Name]) {
			fmt.Fprintf(tw, "  %s\n", a)
		}
	}
	fmt.Fprintf(tw, "\nFEATURES SET BY A COMPONENT OR NOT AT THEIR DEFAULT\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	return plan.WriteTable(stdout, scoping.ChangedFeatures)
}

// DryRunOutput is what `server --dry-run -o json` prints: each component's
// arguments, as the server would run it (secret values redacted:
// harness.RedactArgs), and the plan of the barrier.
type DryRunOutput struct {
	Components []DryRunComponent `json:"components"`
	Plan       *scoping.Plan     `json:"plan"`
}

// DryRunComponent is one component of DryRunOutput.
type DryRunComponent struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
}
