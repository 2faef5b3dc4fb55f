package zpages

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"

	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/statusz"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Install registers GET /flagz, GET /flagz/{component...} and GET /statusz
// for h on mux. name is the process's in /statusz; listedPaths are the
// paths /statusz lists.
func Install(mux *http.ServeMux, h *harness.Harness, name string, listedPaths []string) {
	pages := &flagzPages{h: h}
	mux.HandleFunc("GET /flagz", pages.serveAll)
	mux.HandleFunc("GET /flagz/{component...}", pages.serveOne)
	mux.HandleFunc("GET /statusz", func(w http.ResponseWriter, r *http.Request) {
		target := scoping.ProcessTarget()
		if h.Target != nil {
			target = *h.Target
		}
		// Made per request: the barrier sets the kube effective version.
		reg := statusz.NewRegistry(target.Registry.EffectiveVersionFor(scoping.KubeComponent), statusz.WithListedPaths(listedPaths))
		var handler http.Handler
		statusz.Install(installer(func(_ string, h http.Handler) { handler = h }), name, reg)
		handler.ServeHTTP(w, r)
	})
}

// flagzPages serves the components' flags through k8s.io/apiserver's flagz
// handler, one per component, each made again when its flags change.
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
