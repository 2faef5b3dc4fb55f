package harness_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr/funcr"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// printer is a component that prints when it starts and stops, and is
// ready once it printed; the last one to start cancels the run, as a
// SIGTERM would.
func printer(name string, last context.CancelFunc) *harness.Func {
	started := make(chan struct{})
	return &harness.Func{
		ComponentName: name,
		FlagsFunc:     func(s *scoping.Scope) error { s.AddFlags(); return nil },
		RunFunc: func(ctx context.Context) error {
			fmt.Println("start", name)
			close(started)
			if last != nil {
				last()
			}
			<-ctx.Done()
			fmt.Println("stop", name)
			return nil
		},
		ReadyFunc: func(ctx context.Context) error {
			select {
			case <-started:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
	}
}

// Components start in dependency order, each after its dependencies are
// ready, and stop in reverse.
func ExampleHarness() {
	target, _ := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	ctx, cancel := context.WithCancel(context.Background())
	h.Add(printer("kube-controller-manager", cancel), nil, "kube-scheduler")
	h.Add(printer("kube-scheduler", nil), []string{"--feature-gates=Foo=true"}, "kube-apiserver")
	h.Add(printer("kube-apiserver", nil), nil)
	if err := h.Run(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println("Foo enabled:", target.Gate.Enabled("Foo"))
	// Output:
	// start kube-apiserver
	// start kube-scheduler
	// start kube-controller-manager
	// stop kube-controller-manager
	// stop kube-scheduler
	// stop kube-apiserver
	// Foo enabled: true
}

// A conflict at the barrier: no component runs, and the error names both.
func ExampleHarness_conflict() {
	target, _ := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	h.Add(printer("kube-apiserver", nil), []string{"--feature-gates=Foo=true"})
	h.Add(printer("kube-scheduler", nil), []string{"--feature-gates=Foo=false"}, "kube-apiserver")
	fmt.Println(h.Run(context.Background()))
	// Output:
	// harness phase barrier: components conflict on 1 process-wide setting:
	//   feature gate "Foo": kube-apiserver sets true (--feature-gates=Foo=true), kube-scheduler sets false (--feature-gates=Foo=false)
}

// server prints when it starts and stops, with its component-local
// --profile; Restart can start it again (it is a Renewer).
type server struct {
	name    string
	profile *string
	started chan struct{}
}

func newServer(name string) *server { return &server{name: name, started: make(chan struct{})} }

func (s *server) Name() string { return s.name }

func (s *server) AddFlags(sc *scoping.Scope) error {
	s.profile = sc.FlagSet().String("profile", "default", "a component-local setting")
	sc.AddFlags()
	return nil
}

func (s *server) Run(ctx context.Context) error {
	fmt.Println("start", s.name, "profile", *s.profile)
	close(s.started)
	<-ctx.Done()
	fmt.Println("stop", s.name, "profile", *s.profile)
	return nil
}

func (s *server) Ready(ctx context.Context) error {
	select {
	case <-s.started:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Renew is a new, unstarted server of the same name.
func (s *server) Renew() harness.Component { return newServer(s.name) }

// Restart one component with new arguments while the others run. A restart
// that would change a process-wide setting is refused before anything stops.
func ExampleHarness_Restart() {
	target, _ := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	h.Add(newServer("kube-apiserver"), nil)
	h.Add(newServer("kube-scheduler"), []string{"--profile=one"}, "kube-apiserver")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	if err := h.WaitReady(ctx); err != nil { // every component ready, Run in PhaseRun
		fmt.Println(err)
	}
	fmt.Println(h.Restart(ctx, "kube-scheduler", []string{"--profile=two"}))
	fmt.Println(h.Restart(ctx, "kube-scheduler", []string{"--feature-gates=Foo=true"}))
	cancel()
	fmt.Println(<-done)
	// Output:
	// start kube-apiserver profile default
	// start kube-scheduler profile one
	// stop kube-scheduler profile one
	// start kube-scheduler profile two
	// <nil>
	// components conflict on 1 process-wide setting:
	//   feature gate "Foo": kube-scheduler sets true (--feature-gates=Foo=true): feature gate "Foo" is false in the running control plane; a restarted component cannot change a process-wide setting while the others run
	// stop kube-scheduler profile two
	// stop kube-apiserver profile default
	// <nil>
}

// agent is a server that upstream cannot start twice in one process.
type agent struct{ *server }

func (agent) StartsOnce() string { return "its informers run on wait.NeverStop" }

// A Once — the kubelet, kube-proxy — is never restarted, nor is a component
// it depends on: Restart says why, before anything stops.
func ExampleOnce() {
	target, _ := scopingtest.NewTarget(scopingtest.AlphaFeatures("Foo"))
	h := &harness.Harness{Target: &target, Logger: funcr.New(func(string, string) {}, funcr.Options{})}
	h.Add(newServer("kube-apiserver"), nil)
	h.Add(agent{newServer("kubelet")}, nil, "kube-apiserver")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	if err := h.WaitReady(ctx); err != nil {
		fmt.Println(err)
	}
	err := h.Restart(ctx, "kube-apiserver", nil)
	var re *harness.RestartError
	fmt.Println(errors.As(err, &re), errors.Is(err, harness.ErrStartsOnce))
	fmt.Println(err)
	cancel()
	fmt.Println(<-done)
	// Output:
	// start kube-apiserver profile default
	// start kubelet profile default
	// true true
	// harness: cannot restart kube-apiserver: its dependent kubelet starts once per process: its informers run on wait.NeverStop
	// stop kubelet profile default
	// stop kube-apiserver profile default
	// <nil>
}
