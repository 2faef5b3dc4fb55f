package status

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/zpages"
)

// statusPaths are the paths statusHandler serves, as /statusz lists them;
// /debug/pprof only with pprof (--enable-pprof).
func statusPaths(pprof bool) []string {
	paths := []string{"/components", "/features", "/features/nodes", "/flagz", "/healthz", "/leader-election", "/livez", "/metrics", "/readyz", "/statusz"}
	if pprof {
		paths = slices.Insert(paths, 1, "/debug/pprof")
	}
	return paths
}

// statusProfileMaxSeconds caps ?seconds= on /debug/pprof: a CPU profile or
// a trace holds the process's one profiler, or tracer, that long.
const statusProfileMaxSeconds = 60

// Handler is what --status-address serves: the harness status handler
// (/components, /features, /livez, /readyz, /healthz, /metrics: see
// harness.Harness.Handler), /leader-election, /features/nodes (the node
// summarizer's last summaries, by gate: featurepub.Summary), the z-pages (package
// components/zpages), as each upstream component serves them on its own
// port, and the process's profiles:
//
//   - /flagz, /flagz/NAME: every component's effective flags, secret
//     values redacted; /statusz: the process's versions and these paths,
//     for "k3s-like" (package components/zpages has the details).
//   - /debug/pprof/, with --enable-pprof (else 404): net/http/pprof's
//     profiles of the process (`k3s-like top`), each component's
//     goroutines labelled component=<name>, ?seconds at most
//     statusProfileMaxSeconds; not /debug/pprof/cmdline (404), which would
//     show the arguments unredacted.
//
// Who may read them is statusGuard's business (Serve).
func (e Endpoint) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", e.Harness.Handler())
	mux.HandleFunc("GET /leader-election", func(w http.ResponseWriter, _ *http.Request) {
		le := map[string]components.LeaderElection{}
		if e.LeaderElection != nil {
			le = e.LeaderElection()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(le)
	})
	mux.HandleFunc("GET /features/nodes", func(w http.ResponseWriter, _ *http.Request) {
		sums := map[string]featurepub.Summary{}
		if e.Summaries != nil {
			if last := e.Summaries(); last != nil {
				sums = last
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(sums)
	})
	zpages.Install(mux, e.Harness, "k3s-like", statusPaths(e.EnablePprof))
	// /debug/pprof: net/http/pprof's handlers, for `k3s-like top` and go
	// tool pprof: the index, every runtime profile by name through it
	// (heap, goroutine, allocs, block, mutex, threadcreate), profile (CPU),
	// trace and symbol. The harness labels each component's goroutines
	// component=<name> (harness.ProfileLabel). Not /debug/pprof/cmdline:
	// the process's arguments may carry a --token or another secret
	// (/components shows them redacted). pprof.Index would answer 404 for
	// it anyway (no runtime profile has that name); the route says so
	// explicitly. The index page still lists a cmdline link.
	if !e.EnablePprof {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "404 page not found: the server's profiles are off; start it with --enable-pprof", http.StatusNotFound)
		})
		return mux
	}
	mux.HandleFunc("GET /debug/pprof/", capSeconds(pprof.Index)) // named profiles take ?seconds too (deltas)
	mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
	mux.HandleFunc("GET /debug/pprof/profile", capSeconds(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/trace", capSeconds(pprof.Trace))
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol) // go tool pprof asks so
	return mux
}

// capSeconds refuses (400) a ?seconds= that is no number or more than
// statusProfileMaxSeconds, read as pprof reads it.
func capSeconds(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s := r.FormValue("seconds"); s != "" {
			if v, err := strconv.ParseFloat(s, 64); err != nil || math.IsNaN(v) || v > statusProfileMaxSeconds {
				http.Error(w, fmt.Sprintf("seconds=%s: want a number of seconds, at most %d", s, statusProfileMaxSeconds), http.StatusBadRequest)
				return
			}
		}
		h(w, r)
	}
}
