package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/pprof"
	"slices"
	"sync"

	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/statusz"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// statusPaths are the paths statusHandler serves, as /statusz lists them.
func statusPaths() []string {
	return []string{"/components", "/debug/pprof", "/features", "/flagz", "/healthz", "/leader-election", "/livez", "/metrics", "/readyz", "/statusz"}
}

// statusHandler is what --status-address serves: the harness status handler
// (/components, /features, /livez, /readyz, /healthz, /metrics: see
// harness.Harness.Handler), /leader-election, and k8s.io/apiserver's
// z-pages, as each upstream component serves them on its own port:
//
//   - /flagz: every component's effective flags (harness.Harness.Flags:
//     every flag, set or default, secret values redacted), one section per
//     component as upstream's text format has it, in the components' order.
//     Text only. /flagz/NAME is one component's, with upstream's content
//     negotiation: text, or the config.k8s.io Flagz object as JSON or YAML
//     (Accept: application/json;as=Flagz;v=v1beta1;g=config.k8s.io). 404
//     for a name that is no component; 503 until its flags are parsed.
//   - /statusz: the process's start, uptime, Go, binary and emulated
//     versions and these paths, as upstream's statusz, for "k3s-like".
//   - /debug/pprof/: net/http/pprof's profiles of the process (`k3s-like
//     top`), each component's goroutines labelled component=<name>; not
//     /debug/pprof/cmdline (404), which would show the arguments
//     unredacted.
func (o *serverOptions) statusHandler(cp *controlPlane) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", cp.h.Handler())
	mux.HandleFunc("GET /leader-election", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cp.leaderElection())
	})
	pages := &flagzPages{h: cp.h}
	mux.HandleFunc("GET /flagz", pages.serveAll)
	mux.HandleFunc("GET /flagz/{component...}", pages.serveOne)
	mux.HandleFunc("GET /statusz", func(w http.ResponseWriter, r *http.Request) {
		target := scoping.ProcessTarget()
		if cp.h.Target != nil {
			target = *cp.h.Target
		}
		// Made per request: the barrier sets the kube effective version.
		reg := statusz.NewRegistry(target.Registry.EffectiveVersionFor(scoping.KubeComponent), statusz.WithListedPaths(statusPaths()))
		var handler http.Handler
		statusz.Install(installer(func(_ string, h http.Handler) { handler = h }), "k3s-like", reg)
		handler.ServeHTTP(w, r)
	})
	// /debug/pprof: net/http/pprof's handlers, for `k3s-like top` and go
	// tool pprof: the index, every runtime profile by name through it
	// (heap, goroutine, allocs, block, mutex, threadcreate), profile (CPU),
	// trace and symbol. The harness labels each component's goroutines
	// component=<name> (harness.ProfileLabel). Not /debug/pprof/cmdline:
	// the process's arguments may carry a --token or another secret
	// (/components shows them redacted). pprof.Index would answer 404 for
	// it anyway (no runtime profile has that name); the route says so
	// explicitly. The index page still lists a cmdline link.
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol) // go tool pprof asks so
	return mux
}

// flagzPages serves the components' flags through k8s.io/apiserver's flagz
// handler, one per component. Upstream's handler caches its text forever,
// so a component's is made again when its flags change (a restart).
type flagzPages struct {
	h *harness.Harness

	mu    sync.Mutex
	pages map[string]flagzPage
}

type flagzPage struct {
	flags   flagSnapshot
	handler http.Handler
}

// flagSnapshot is a flagz.Reader of flags read once.
type flagSnapshot map[string]string

// GetFlagz returns the flags.
func (s flagSnapshot) GetFlagz() map[string]string { return s }

// installer adapts a function to what the z-pages install into.
type installer func(path string, h http.Handler)

// Handle calls the function.
func (f installer) Handle(path string, h http.Handler) { f(path, h) }

// page returns the component's flagz handler; false until its flags are
// parsed, or for a name that is no component.
func (p *flagzPages) page(name string) (http.Handler, bool) {
	flags, ok := p.h.Flags(name)
	if !ok {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if pg, ok := p.pages[name]; ok && maps.Equal(pg.flags, flagSnapshot(flags)) {
		return pg.handler, true
	}
	var handler http.Handler
	flagz.Install(installer(func(_ string, h http.Handler) { handler = h }), name, flagSnapshot(flags))
	if p.pages == nil {
		p.pages = map[string]flagzPage{}
	}
	p.pages[name] = flagzPage{flags: flags, handler: handler}
	return handler, true
}

func (p *flagzPages) serveOne(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("component")
	handler, ok := p.page(name)
	if !ok {
		if !slices.ContainsFunc(p.h.Status().Components, func(c harness.ComponentStatus) bool { return c.Name == name }) {
			http.NotFound(w, r)
			return
		}
		http.Error(w, name+"'s flags are not parsed yet", http.StatusServiceUnavailable)
		return
	}
	handler.ServeHTTP(w, r)
}

// serveAll writes each component's flagz text, one after the other.
func (p *flagzPages) serveAll(w http.ResponseWriter, r *http.Request) {
	var all bytes.Buffer
	for _, c := range p.h.Status().Components {
		handler, ok := p.page(c.Name)
		if !ok {
			continue
		}
		text := r.Clone(r.Context())
		text.Header.Del("Accept") // upstream's text
		section := &bufferedResponse{header: http.Header{}}
		handler.ServeHTTP(section, text)
		if section.status != http.StatusOK {
			http.Error(w, fmt.Sprintf("flagz of %s: %d %s", c.Name, section.status, section.body.String()), http.StatusInternalServerError)
			return
		}
		all.Write(section.body.Bytes())
	}
	if all.Len() == 0 {
		http.Error(w, "no component's flags are parsed yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = all.WriteTo(w)
}

// bufferedResponse keeps what a handler writes.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.WriteHeader(http.StatusOK)
	return b.body.Write(p)
}
