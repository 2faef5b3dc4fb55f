package upgradeplan

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is what `k3s-like upgrade-plan` prints: moving a running server
// from its emulated version From to To changes Gates, and serves Added and
// no longer Removed; Objects is the manifests' fate at To (with -f).
type Report struct {
	BinaryVersion string       `json:"binaryVersion"`
	From          string       `json:"from"`
	To            string       `json:"to"`
	Gates         []GateChange `json:"gates"`
	Added         APIs         `json:"added"`
	Removed       APIs         `json:"removed"`
	Objects       []Object     `json:"objects,omitempty"`
	// ModelDiffers lists where the model of what is served at From
	// disagrees with the server's discovery ("+x": served but not
	// modelled; "-x": modelled but not served); empty when the server was
	// not asked (no kubeconfig) or they agree.
	ModelDiffers []string `json:"modelDiffers,omitempty"`
}

// Object is one manifest object and whether it is served at To.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// Served at To; Known is false for a group this model does not cover
	// (a CRD or an aggregated API), whose fate it cannot tell.
	Served bool `json:"served"`
	Known  bool `json:"known"`
}

// Changes reports whether moving changes anything: a gate, an API, an
// object that stops being served, or an explicit setting To refuses.
func (r *Report) Changes() bool {
	if len(r.Gates) > 0 || len(r.Added.GroupVersions)+len(r.Added.Resources)+len(r.Removed.GroupVersions)+len(r.Removed.Resources) > 0 {
		return true
	}
	for _, o := range r.Objects {
		if o.Known && !o.Served {
			return true
		}
	}
	return false
}

// WriteTable writes the report for people.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "EMULATED: %s -> %s\tBINARY: %s\n\n", r.From, r.To, r.BinaryVersion)
	if len(r.Gates) == 0 {
		fmt.Fprintln(tw, "feature gates: no change")
	} else {
		fmt.Fprintf(tw, "GATE\tSTAGE\tENABLED\tSET-BY\n")
		for _, g := range r.Gates {
			setBy := "default"
			if g.SetBy != "" {
				setBy = g.SetBy + " (explicit: keeps its value)"
			}
			if g.Refused != "" {
				setBy += "; REFUSED at " + r.To + ": " + g.Refused
			}
			fmt.Fprintf(tw, "%s\t%s -> %s\t%v -> %v\t%s\n", g.Name, dash(g.FromStage), dash(g.ToStage), g.From, g.To, setBy)
		}
	}
	fmt.Fprintln(tw)
	apis := func(title string, a APIs) {
		if len(a.GroupVersions)+len(a.Resources) == 0 {
			fmt.Fprintf(tw, "%s: none\n", title)
			return
		}
		fmt.Fprintf(tw, "%s:\n", title)
		for _, gv := range a.GroupVersions {
			fmt.Fprintf(tw, "  group-version\t%s\n", gv)
		}
		for _, res := range a.Resources {
			fmt.Fprintf(tw, "  resource\t%s\n", res)
		}
	}
	apis("served from "+r.To, r.Added)
	apis("no longer served at "+r.To, r.Removed)
	if len(r.Objects) > 0 {
		fmt.Fprintln(tw)
		for _, o := range r.Objects {
			state := "ok"
			switch {
			case !o.Known:
				state = "UNKNOWN (not a built-in group)"
			case !o.Served:
				state = "STOPS"
			}
			fmt.Fprintf(tw, "%s\t%s %s %s\n", state, o.APIVersion, o.Kind, o.Name)
		}
	}
	if len(r.ModelDiffers) > 0 {
		fmt.Fprintf(tw, "\nwarning: the model of what %s serves differs from the server's discovery: %s\n", r.From, strings.Join(r.ModelDiffers, ", "))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
