package harness_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
	"github.com/kubeharness/kubeharness/scoping/scopingtest"
)

// journal records what components did, in order, across goroutines.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, fmt.Sprintf(format, args...))
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// fake is a small in-test component. By default it adds the registry flags,
// becomes ready after readyAfter, and runs until its context is cancelled.
type fake struct {
	name       string
	j          *journal
	readyAfter time.Duration
	neverReady bool          // Ready blocks until its ctx ends
	readyErr   error         // non-nil: Ready returns it after readyAfter
	failAfter  time.Duration // >0: Run returns failErr after this long
	failErr    error
	panicRun   bool
	ignoreCtx  chan struct{} // non-nil: Run ignores ctx and waits for this to close
	stopDelay  time.Duration // Stop takes this long
	withStop   bool
	hangReady  chan struct{} // non-nil: Ready ignores ctx and waits for this to close
	hangStop   chan struct{} // non-nil: Stop ignores ctx and waits for this to close

	mu           sync.Mutex
	runCancelled time.Time // when Run saw its context end
	stopDeadline time.Time // the deadline of Stop's context
	stopCalled   time.Time

	runCalled atomic.Bool
	started   chan struct{}
	once      sync.Once
}

func newFake(name string, j *journal) *fake {
	return &fake{name: name, j: j, started: make(chan struct{})}
}

func (f *fake) Name() string { return f.name }

func (f *fake) AddFlags(s *scoping.Scope) error {
	s.AddFlags()
	return nil
}

func (f *fake) Run(ctx context.Context) error {
	f.runCalled.Store(true)
	f.j.add("run %s", f.name)
	f.once.Do(func() { close(f.started) })
	if f.panicRun {
		panic("fake " + f.name + " panicked")
	}
	if f.failAfter > 0 {
		select {
		case <-time.After(f.failAfter):
			return f.failErr
		case <-ctx.Done():
		}
	}
	if f.ignoreCtx != nil {
		<-f.ignoreCtx
		f.j.add("stop %s (late)", f.name)
		return nil
	}
	<-ctx.Done()
	f.mu.Lock()
	f.runCancelled = time.Now()
	f.mu.Unlock()
	f.j.add("stop %s", f.name)
	return nil
}

func (f *fake) Ready(ctx context.Context) error {
	<-f.started
	if f.hangReady != nil {
		<-f.hangReady
		return nil
	}
	if f.neverReady {
		<-ctx.Done()
		return ctx.Err()
	}
	select {
	case <-time.After(f.readyAfter):
		if f.readyErr != nil {
			return f.readyErr
		}
		f.j.add("ready %s", f.name)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopper is a fake that also implements harness.Stopper.
type stopper struct{ *fake }

func (s stopper) Stop(ctx context.Context) error {
	s.j.add("Stop %s", s.name)
	s.mu.Lock()
	s.stopCalled = time.Now()
	s.stopDeadline, _ = ctx.Deadline()
	s.mu.Unlock()
	if s.hangStop != nil {
		<-s.hangStop
		return nil
	}
	select {
	case <-time.After(s.stopDelay):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

const (
	Foo = "Foo"
	Bar = "Bar"
	Baz = "Baz"
)

// newHarness returns a harness on a hermetic target, with short deadlines.
func newHarness(t *testing.T) (*harness.Harness, scoping.Target) {
	target, err := scopingtest.NewTarget(scopingtest.AlphaFeatures(Foo, Bar, Baz))
	require.NoError(t, err)
	return &harness.Harness{Target: &target, Logger: testr.New(t), ReadyTimeout: 10 * time.Second, StopTimeout: 5 * time.Second}, target
}

var errBoom = errors.New("boom")
