package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeharness/kubeharness/scoping"
)

// PhaseTiming is how long one phase of Run took; for PhaseBarrier, Hooks
// is how much of it the AfterBarrier hooks took.
type PhaseTiming struct {
	Phase    Phase         `json:"phase"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	Hooks    time.Duration `json:"hooks,omitempty"`
}

// ComponentStatus is one component's state. Restarts counts the restarts
// of it — Restart's and Harness.Recover's, of it or of a component it
// depends on — each a new instance (started once its dependencies are
// ready again).
type ComponentStatus struct {
	Name         string    `json:"name"`
	State        State     `json:"state"`
	Error        string    `json:"error,omitempty"`
	Since        time.Time `json:"since"`
	Dependencies []string  `json:"dependencies,omitempty"`
	Args         []string  `json:"args"`
	Restarts     int       `json:"restarts,omitempty"`
	// Recoveries counts the restarts Harness.Recover made after a failure
	// (a scheduler or controller-manager that lost its lease, demoted to a
	// standby that campaigns again); LastRecovery is the last of them.
	Recoveries   int       `json:"recoveries,omitempty"`
	LastRecovery *Recovery `json:"lastRecovery,omitempty"`
	// Abandoned says why the harness left the component's goroutines
	// running when it stopped it: a Once whose Run did not return within
	// StopTimeout (upstream cannot stop it). Empty for any other stop.
	Abandoned string `json:"abandoned,omitempty"`
}

// Recovery is one restart of a component that Harness.Recover kept from
// stopping the harness: when the component failed, and the error it failed
// with.
type Recovery struct {
	At    time.Time `json:"at"`
	Cause string    `json:"cause"`
}

// Status is a snapshot of the harness: its phase, each component's state,
// how long each phase took, and the feature plan once the barrier made it.
// Conflicts counts the conflicts of every barrier that failed in this
// harness — Run's, and each Restart refused with a *scoping.ConflictError —
// by kind (scoping.ConflictKind's String); nil when there were none.
type Status struct {
	Phase      Phase             `json:"phase"`
	Components []ComponentStatus `json:"components"`
	Phases     []PhaseTiming     `json:"phases"`
	Plan       *scoping.Plan     `json:"plan,omitempty"`
	Conflicts  map[string]int    `json:"conflicts,omitempty"`
}

// Status returns a snapshot; it is safe to call at any time, from any goroutine.
func (h *Harness) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := Status{Phase: h.phase, Phases: slices.Clone(h.timings), Plan: h.plan, Conflicts: maps.Clone(h.conflicts)}
	if st.Phase == "" {
		st.Phase = "not-started"
	}
	for _, s := range h.slots {
		state, err := s.state()
		cs := ComponentStatus{Name: s.name, State: state, Since: s.since, Dependencies: s.deps, Args: s.newest().args,
			Restarts: s.restarts, Recoveries: s.recoveries, LastRecovery: s.lastRecov, Abandoned: s.abandoned}
		if err != nil {
			cs.Error = err.Error()
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

// Handler serves the status of the harness, read-only (GET):
//
//   - /components: the phase, each component's state, the phase timings,
//     and each component's arguments with secret values redacted
//     (RedactArgs).
//   - /features: the reconciled feature plan; 503 before the barrier made
//     it.
//   - /livez, /readyz and /healthz: k8s.io/apiserver's healthz handlers, as
//     kube-apiserver serves them, with one check per component, named as
//     the component. /readyz/NAME runs one check and gives its reason (404
//     for a name that is no check); ?verbose lists every check;
//     ?exclude=NAME (repeatable) skips one. A failing check makes the answer
//     503 (kube-apiserver answers 500: here a failing check means not
//     ready, never an internal error), and the list names it, its reason
//     withheld as upstream does. livez: a component's check fails only
//     once it Failed; pending, starting, stopping, restarting or
//     Recovering is alive. readyz: a component's check passes only while it is Ready,
//     and one more check, HarnessCheck, passes only while Run is in
//     PhaseRun with at least one component, so /readyz answers 200 exactly
//     when Status.Ready is true: not before every component started, and
//     no longer once stopping began. healthz: the readyz checks (what
//     /healthz always meant here).
//   - /metrics: the metrics below, in Prometheus text format, from a
//     k8s.io/component-base/metrics registry each Handler makes for itself
//     (not the process's legacy registry), computed from Status at every
//     scrape. All are ALPHA.
//
// The metrics:
//
//   - kubeharness_phase{phase}: 1 for the phase Run is in, 0 for the other
//     phases.
//   - kubeharness_phase_duration_seconds{phase}: how long each phase of Run
//     that has ended took.
//   - kubeharness_component_state{component,state}: 1 for the component's
//     State, 0 for the other states.
//   - kubeharness_component_restarts_total{component}: the instances of the
//     component that Restart replaced (ComponentStatus.Restarts).
//   - kubeharness_component_recoveries_total{component}: how many of those
//     restarts Harness.Recover made after a failure
//     (ComponentStatus.Recoveries).
//   - kubeharness_barrier_conflicts_total{kind}: the conflicts of every
//     barrier that failed, Run's or a Restart's, by scoping.ConflictKind
//     (Status.Conflicts); every kind is present, 0 when none.
//   - kubeharness_feature_enabled{name,stage,set_by}: 1 if the kube feature
//     is enabled in the plan the barrier made, else 0; absent before the
//     plan. set_by is component=value for each component that set it
//     (sorted, comma-separated), else its source: default or
//     emulated-version.
//
// /components and /features answer JSON, or a plain-text table when the
// client asks for text (Accept: text/plain, or ?format=text).
func (h *Harness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /components", func(w http.ResponseWriter, r *http.Request) {
		st := h.Status()
		if wantsText(r) {
			writeText(w, func(tw *tabwriter.Writer) {
				fmt.Fprintf(tw, "PHASE: %s\n\nCOMPONENT\tSTATE\tSINCE\tDEPENDS ON\tRESTARTS\tRECOVERIES\tERROR\n", st.Phase)
				for _, c := range st.Components {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", c.Name, c.State, c.Since.Format(time.RFC3339), strings.Join(c.Dependencies, ","), c.Restarts, c.Recoveries, firstLine(c.Error))
				}
				fmt.Fprintf(tw, "\nPHASE\tDURATION\tOF WHICH HOOKS\n")
				for _, p := range st.Phases {
					hooks := ""
					if p.Hooks > 0 {
						hooks = p.Hooks.String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Phase, p.Duration, hooks)
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
	health := &healthChecks{h: h}
	for _, p := range []string{"/livez", "/readyz", "/healthz"} {
		mux.Handle("GET "+p, health)
		mux.Handle("GET "+p+"/", health)
	}
	mux.Handle("GET /metrics", metricsHandler(h))
	return mux
}

// Flags returns a component's effective flags: every flag of its scope's
// FlagSet, set by its arguments or not, by name, each value as the flag
// prints it. They are read once, right after the component's arguments
// were parsed (for a restarted component, its new instance's). The value
// of a secret flag is Redacted: by RedactArgs's rule (an empty value stays
// empty), and a flag upstream marks so (annotated "classified", as its
// flagz handler reads it). ok is false for an unknown component or one
// not parsed yet. The map is the caller's.
func (h *Harness) Flags(component string) (flags map[string]string, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.slots, func(s *slot) bool { return s.name == component })
	if i < 0 || h.slots[i].newest().flags == nil {
		return nil, false
	}
	return maps.Clone(h.slots[i].newest().flags), true
}

// effectiveFlags is every flag of a parsed scope, each value redacted where
// it is secret.
func effectiveFlags(scope *scoping.Scope) map[string]string {
	flags := map[string]string{}
	scope.FlagSet().VisitAll(func(f *pflag.Flag) {
		v := flagValue(f)
		if set := f.Annotations["classified"]; len(set) > 0 || (v != "" && secretFlag(f.Name) && !isSwitch(v)) {
			v = Redacted
		}
		flags[f.Name] = v
	})
	return flags
}

// flagValue is the flag's value as it prints, or why it cannot print (a
// Value whose String panics).
func flagValue(f *pflag.Flag) (v string) {
	defer func() {
		if p := recover(); p != nil {
			v = fmt.Sprintf("<String panicked: %v>", p)
		}
	}()
	return f.Value.String()
}

// countConflicts adds the conflicts of a failed barrier, if err is one.
func (h *Harness) countConflicts(err error) {
	var ce *scoping.ConflictError
	if !errors.As(err, &ce) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.conflicts == nil {
		h.conflicts = map[string]int{}
	}
	for _, c := range ce.Conflicts {
		h.conflicts[c.Kind.String()]++
	}
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
