package zpages_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-logr/logr/funcr"

	"github.com/kubeharness/kubeharness/components/zpages"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// Serve one component's effective flags as upstream's Flagz object, and
// 404 for a name that is no component.
func ExampleInstall() {
	target, _ := scopingtest.NewTarget(nil)
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	_ = h.Add(&harness.Func{
		ComponentName: "api",
		FlagsFunc:     func(s *scoping.Scope) error { s.FlagSet().Int("port", 6443, "the port"); return nil },
		RunFunc:       func(ctx context.Context) error { <-ctx.Done(); return nil },
	}, []string{"--port=7443"})
	mux := http.NewServeMux()
	zpages.Install(mux, h, "my-distro", []string{"/flagz", "/statusz"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	if err := h.WaitReady(ctx); err != nil {
		fmt.Println(err)
	}
	for _, path := range []string{"/flagz/api", "/flagz/nope"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Accept", "application/json;as=Flagz;v=v1beta1;g=config.k8s.io")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Print(path, " ", w.Code, " ", w.Body.String())
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// /flagz/api 200 {"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"api"},"flags":{"port":"7443"}}
	// /flagz/nope 404 404 page not found
	// <nil>
}
