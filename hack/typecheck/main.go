// Command typecheck type-checks Go packages and their tests from source,
// every dependency included, without compiling them: the check that a
// Kubernetes minor's build-tagged code still compiles, at a small part of
// the cost of building it.
//
//	go run ./hack/typecheck -C components -tags k8s1_36 -modfile go.k8s-1.36.mod ./...
//
// It prints every error and exits 1 if there is one.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("C", ".", "the module's directory")
	tags := flag.String("tags", "", "build tags, comma-separated")
	modfile := flag.String("modfile", "", "the module file, relative to -C")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "typecheck: name the packages (./...)")
		os.Exit(2)
	}
	var buildFlags []string
	if *tags != "" {
		buildFlags = append(buildFlags, "-tags="+*tags)
	}
	if *modfile != "" {
		buildFlags = append(buildFlags, "-modfile="+*modfile)
	}
	start := time.Now()
	// NeedDeps with NeedSyntax and NeedTypes: dependencies are type-checked
	// from source too, never from compiled export data.
	cfg := &packages.Config{
		Dir: *dir, BuildFlags: buildFlags, Tests: true,
		Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps |
			packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
	}
	pkgs, err := packages.Load(cfg, flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "typecheck:", err)
		os.Exit(1)
	}
	n := 0
	packages.Visit(pkgs, nil, func(*packages.Package) { n++ })
	if errs := packages.PrintErrors(pkgs); errs > 0 {
		fmt.Fprintf(os.Stderr, "typecheck: %s %s: %d errors\n", *dir, *tags, errs)
		os.Exit(1)
	}
	fmt.Printf("typecheck: %s %s: %d packages, no error, %.1fs\n", *dir, *tags, n, time.Since(start).Seconds())
}
