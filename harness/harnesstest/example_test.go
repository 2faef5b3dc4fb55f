package harnesstest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/harness/harnesstest"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// printT stands in for a test's *testing.T.
type printT struct{}

func (printT) Helper() {}

func (printT) Fatalf(format string, args ...any) { fmt.Printf("FATAL "+format+"\n", args...) }

// Run a harness until every component is ready, then stop it, as a test
// does with its *testing.T.
func Example() {
	target, _ := scopingtest.NewTarget(nil)
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	serve := func(ctx context.Context) error { <-ctx.Done(); return nil }
	_ = h.Add(&harness.Func{ComponentName: "db", RunFunc: serve}, nil)
	_ = h.Add(&harness.Func{ComponentName: "api", RunFunc: serve}, nil, "db")

	var t printT // a test's *testing.T
	ctx, cancel := context.WithCancel(context.Background())
	done := harnesstest.StartReady(t, ctx, h, time.Minute)
	fmt.Println("ready:", h.Status().Ready())
	fmt.Println("stopped:", harnesstest.Stop(t, cancel, done, time.Minute))
	// Output:
	// ready: true
	// stopped: <nil>
}
