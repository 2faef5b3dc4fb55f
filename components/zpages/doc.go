// Package zpages serves a harness's /flagz and /statusz, the z-pages each
// upstream component serves on its own port, for the whole process: built
// on k8s.io/apiserver's flagz and statusz handlers (component-base's
// zpages moved there after v0.34), so that text and structured output are
// upstream's.
//
//	mux := http.NewServeMux()
//	mux.Handle("/", h.Handler()) // the harness's /components, /livez, ...
//	zpages.Install(mux, h, "my-distro", []string{"/components", "/flagz", "/livez", "/statusz"})
//
// The pages:
//
//   - GET /flagz: every component's effective flags (Harness.Flags: every
//     flag, set or default, secret values redacted), one section per
//     component in upstream's text format, in the components' order. Text
//     only; 503 until some component's flags are parsed.
//   - GET /flagz/NAME: one component's, with upstream's content
//     negotiation: text, or the config.k8s.io Flagz object as JSON or YAML
//     (Accept: application/json;as=Flagz;v=v1beta1;g=config.k8s.io). 404
//     for a name that is no component; 503 until its flags are parsed.
//   - GET /statusz: the process's start, uptime, Go, binary and emulated
//     versions (the harness's target's, once its barrier set them) and the
//     listed paths, as upstream's statusz, under the process's name.
//
// Upstream's flagz handler caches its text forever: a component's is made
// again when its flags change (a restart with other arguments).
package zpages
