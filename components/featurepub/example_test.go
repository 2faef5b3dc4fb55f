package featurepub_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// The Feature objects of a plan, without an apiserver. A binary passes
// Publisher.Plan the plan of its running harness (h.Status().Plan); here a
// dry run makes one, over a stand-in kube gate (scopingtest) and stand-ins
// for the components: an etcd with no flags, and an apiserver and a
// scheduler with the kube feature flags.
func ExampleFeatures() {
	target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo", "Bar"))
	if err != nil {
		fmt.Println(err)
		return
	}
	h := &harness.Harness{Target: &target, Logger: logr.Discard()}
	idle := func(ctx context.Context) error { <-ctx.Done(); return nil }
	kubeFlags := func(s *scoping.Scope) error { s.AddFlags(); return nil }
	_ = h.Add(&harness.Func{ComponentName: etcd.Name, RunFunc: idle}, nil)
	_ = h.Add(&harness.Func{ComponentName: names.APIServer, FlagsFunc: kubeFlags, RunFunc: idle}, nil, etcd.Name)
	_ = h.Add(&harness.Func{ComponentName: names.Scheduler, FlagsFunc: kubeFlags, RunFunc: idle},
		[]string{"--feature-gates=Foo=true"}, names.APIServer)
	plan, err := h.DryRun(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}

	features := featurepub.Features(plan, "node-1")
	for _, f := range features {
		fmt.Printf("%-9s %-5s enabled=%-5v set-by=%s\n", f.Name, f.Status.Stage, f.Status.Enabled, f.Status.SetBy)
	}
	foo := features[3].Status.Servers[0] // this server's entry
	for _, c := range foo.Components {
		fmt.Printf("%s %s: registers=%v value=%q flag=%q\n", foo.Server, c.Name, c.Registers, c.Value, c.Flag)
	}
	// Output:
	// allalpha  Alpha enabled=false set-by=default
	// allbeta   Beta  enabled=false set-by=default
	// bar       Alpha enabled=false set-by=default
	// foo       Alpha enabled=true  set-by=kube-scheduler=true
	// node-1 etcd: registers=false value="" flag=""
	// node-1 kube-apiserver: registers=true value="" flag=""
	// node-1 kube-scheduler: registers=true value="true" flag="--feature-gates=Foo=true"
}
