package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeharness/kubeharness/scoping"
)

// PhaseTiming is how long one phase of Run took.
type PhaseTiming struct {
	Phase    Phase         `json:"phase"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
}

// ComponentStatus is one component's state.
type ComponentStatus struct {
	Name         string    `json:"name"`
	State        State     `json:"state"`
	Error        string    `json:"error,omitempty"`
	Since        time.Time `json:"since"`
	Dependencies []string  `json:"dependencies,omitempty"`
	Args         []string  `json:"args"`
}

// Status is a snapshot of the harness: its phase, each component's state,
// how long each phase took, and the feature plan once the barrier made it.
type Status struct {
	Phase      Phase             `json:"phase"`
	Components []ComponentStatus `json:"components"`
	Phases     []PhaseTiming     `json:"phases"`
	Plan       *scoping.Plan     `json:"plan,omitempty"`
}

// Status returns a snapshot; it is safe to call at any time, from any goroutine.
func (h *Harness) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{Phase: h.phase, Phases: slices.Clone(h.timings), Plan: h.plan}
	if st.Phase == "" {
		st.Phase = PhaseValidate
		if !h.running {
			st.Phase = "not-started"
		}
	}
	for _, u := range h.units {
		cs := ComponentStatus{Name: u.c.Name(), State: u.state, Since: u.since, Dependencies: u.deps, Args: u.args}
		if u.err != nil {
			cs.Error = u.err.Error()
		}
		st.Components = append(st.Components, cs)
	}
	return st
}

// Ready reports whether the harness runs (PhaseRun) with every component
// ready: what Restart needs. Every component may be ready a moment before
// Run moves from PhaseStart to PhaseRun; Ready is false until it did.
func (s Status) Ready() bool {
	if len(s.Components) == 0 || s.Phase != PhaseRun {
		return false
	}
	for _, c := range s.Components {
		if c.State != Ready {
			return false
		}
	}
	return true
}

// Handler serves the status: /components (states, phases and their
// timings, each component's arguments with secret values redacted:
// RedactArgs), /features (the reconciled feature plan) and /healthz (200 when
// every component is ready, else 503). /components and /features answer JSON,
// or a plain-text table when the client asks for text (Accept: text/plain, or
// ?format=text).
func (h *Harness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /components", func(w http.ResponseWriter, r *http.Request) {
		st := h.Status()
		if wantsText(r) {
			writeText(w, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "PHASE: %s\n\nCOMPONENT\tSTATE\tSINCE\tDEPENDS ON\tERROR\n", st.Phase)
				for _, c := range st.Components {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.State, c.Since.Format(time.RFC3339), strings.Join(c.Dependencies, ","), firstLine(c.Error))
				}
				fmt.Fprintf(tw, "\nPHASE\tDURATION\n")
				for _, p := range st.Phases {
					fmt.Fprintf(tw, "%s\t%s\n", p.Phase, p.Duration)
				}
			})
			return
		}
		for i := range st.Components {
			st.Components[i].Args = RedactArgs(st.Components[i].Args)
		}
		writeJSON(w, http.StatusOK, struct {
			Phase      Phase             `json:"phase"`
			Components []ComponentStatus `json:"components"`
			Phases     []PhaseTiming     `json:"phases"`
		}{st.Phase, st.Components, st.Phases})
	})
	mux.HandleFunc("GET /features", func(w http.ResponseWriter, r *http.Request) {
		plan := h.Status().Plan
		if plan == nil {
			http.Error(w, "the barrier has not run yet", http.StatusServiceUnavailable)
			return
		}
		if wantsText(r) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_ = plan.WriteTable(w, scoping.AllFeatures)
			return
		}
		writeJSON(w, http.StatusOK, plan)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		st := h.Status()
		if st.Ready() {
			fmt.Fprintln(w, "ok")
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, c := range st.Components {
			if c.State != Ready {
				fmt.Fprintf(w, "%s: %s\n", c.Name, c.State)
			}
		}
	})
	return mux
}

func wantsText(r *http.Request) bool {
	return r.URL.Query().Get("format") == "text" || strings.Contains(r.Header.Get("Accept"), "text/plain")
}

func writeText(w http.ResponseWriter, f func(*tabwriter.Writer)) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	f(tw)
	_ = tw.Flush()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
