package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"k8s.io/apiserver/pkg/server/healthz"
)

// HarnessCheck is the name of the readyz (and healthz) check that passes
// only while Run is in PhaseRun with at least one component; the other
// checks are named as the components (see Harness.Handler).
const HarnessCheck = "harness"

// healthChecks serves /livez, /readyz and /healthz, and a path per check
// under each, with k8s.io/apiserver's healthz handlers. Their checks are
// fixed when installed, but components may still be added after Handler
// was called: the handlers are installed again whenever the components'
// names change (never once Run began).
type healthChecks struct {
	h *Harness

	mu    sync.Mutex
	names string      // the component names the paths were installed for
	paths exactRoutes // nil until the first request
}

// statusKey carries the Status one request's checks all read.
type statusKey struct{}

func (hc *healthChecks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := hc.h.Status()
	handler := hc.routes(st)[r.URL.Path]
	if handler == nil {
		http.NotFound(w, r)
		return
	}
	handler.ServeHTTP(unavailableOnFailure{w}, r.WithContext(context.WithValue(r.Context(), statusKey{}, st)))
}

// routes returns the installed paths for st's components, installing them
// again if the names changed.
func (hc *healthChecks) routes(st Status) exactRoutes {
	names := make([]string, len(st.Components))
	for i, c := range st.Components {
		names[i] = c.Name
	}
	key := strings.Join(names, "\x00")
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.paths != nil && hc.names == key {
		return hc.paths
	}
	var live, ready []healthz.HealthChecker
	for _, name := range names {
		live = append(live, healthz.NamedCheck(name, func(r *http.Request) error {
			if c := component(r, name); c.State == Failed {
				return fmt.Errorf("%s failed: %s", name, firstLine(c.Error))
			}
			return nil
		}))
		ready = append(ready, healthz.NamedCheck(name, func(r *http.Request) error {
			if c := component(r, name); c.State != Ready {
				return fmt.Errorf("%s is %s", name, c.State)
			}
			return nil
		}))
	}
	ready = append(ready, healthz.NamedCheck(HarnessCheck, func(r *http.Request) error {
		switch st := statusOf(r); {
		case st.Phase != PhaseRun:
			return fmt.Errorf("the harness is in phase %s, not %s", st.Phase, PhaseRun)
		case len(st.Components) == 0:
			return errors.New("the harness runs no component")
		}
		return nil
	}))
	routes := exactRoutes{}
	healthz.InstallLivezHandler(routes, live...)
	healthz.InstallReadyzHandler(routes, ready...)
	healthz.InstallHandler(routes, ready...)
	hc.names, hc.paths = key, routes
	return routes
}

func statusOf(r *http.Request) Status {
	st, _ := r.Context().Value(statusKey{}).(Status)
	return st
}

// component is the named component's status in the request's Status; the
// first of that name, as the installed checks are.
func component(r *http.Request, name string) ComponentStatus {
	for _, c := range statusOf(r).Components {
		if c.Name == name {
			return c
		}
	}
	return ComponentStatus{Name: name}
}

// exactRoutes is the mux healthz installs into: exact paths, any name (a
// component's name need not be a valid http.ServeMux pattern), the first
// of two equal paths kept.
type exactRoutes map[string]http.Handler

// Handle adds the path unless it is there already.
func (m exactRoutes) Handle(path string, h http.Handler) {
	if _, dup := m[path]; !dup {
		m[path] = h
	}
}

// unavailableOnFailure answers 503 where healthz answers 500.
type unavailableOnFailure struct{ http.ResponseWriter }

func (w unavailableOnFailure) WriteHeader(code int) {
	if code == http.StatusInternalServerError {
		code = http.StatusServiceUnavailable
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap gives http.ResponseController the writer underneath.
func (w unavailableOnFailure) Unwrap() http.ResponseWriter { return w.ResponseWriter }
