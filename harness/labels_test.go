package harness_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// profiled is a component that leaves a goroutine behind in each of its
// AddFlags, Run, Ready and Stop — parked until release is closed, each in a
// function of its own, so that the goroutine profile tells them apart —
// and, if burn, one that burns CPU while Run runs. Every one of them, and
// Run itself, sends on entered once it is in its function.
type profiled struct {
	name    string
	burn    bool
	renewed bool // a Restart's instance: its AddFlags parks nothing
	release chan struct{}
	entered chan struct{}
	wg      *sync.WaitGroup

	mu       sync.Mutex
	runLabel string // the ProfileLabel value of Run's context
}

func (p *profiled) Name() string { return p.name }

func (p *profiled) AddFlags(s *scoping.Scope) error {
	s.AddFlags()
	if !p.renewed {
		p.wg.Go(func() { parkedFromAddFlags(p.entered, p.release) })
	}
	return nil
}

func (p *profiled) Run(ctx context.Context) error {
	label, _ := pprof.Label(ctx, harness.ProfileLabel)
	p.mu.Lock()
	p.runLabel = label
	p.mu.Unlock()
	p.entered <- struct{}{}
	p.wg.Go(func() { parkedFromRun(p.entered, p.release) })
	var burner sync.WaitGroup
	if p.burn {
		burner.Go(func() { burnFromRun(ctx, p.entered) })
	}
	<-ctx.Done()
	burner.Wait()
	return nil
}

func (p *profiled) Ready(context.Context) error {
	p.wg.Go(func() { parkedFromReady(p.entered, p.release) })
	return nil
}

func (p *profiled) Stop(context.Context) error {
	p.wg.Go(func() { parkedFromStop(p.entered, p.release) })
	return nil
}

func (p *profiled) Renew() harness.Component {
	return &profiled{name: p.name, burn: p.burn, renewed: true, release: p.release, entered: p.entered, wg: p.wg}
}

//go:noinline
func parkedFromAddFlags(entered chan<- struct{}, release <-chan struct{}) {
	entered <- struct{}{}
	<-release
}

//go:noinline
func parkedFromRun(entered chan<- struct{}, release <-chan struct{}) {
	entered <- struct{}{}
	<-release
}

//go:noinline
func parkedFromReady(entered chan<- struct{}, release <-chan struct{}) {
	entered <- struct{}{}
	<-release
}

//go:noinline
func parkedFromStop(entered chan<- struct{}, release <-chan struct{}) {
	entered <- struct{}{}
	<-release
}

// burnFromRun spins until ctx ends.
//
//go:noinline
func burnFromRun(ctx context.Context, entered chan<- struct{}) {
	entered <- struct{}{}
	x := uint64(1)
	for ctx.Err() == nil {
		for range 100_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	_ = strconv.FormatUint(x, 10)
}

// goroutineGroup is one record of the goroutine profile at debug=1: how
// many goroutines share one stack and one label set, the labels, and the
// functions on the stack, innermost first.
type goroutineGroup struct {
	count  int
	labels map[string]string
	funcs  []string
}

// has reports whether a function on the stack is named fn (package
// path.name, or a suffix of it).
func (g goroutineGroup) has(fn string) bool {
	return slices.ContainsFunc(g.funcs, func(f string) bool { return strings.HasSuffix(f, fn) })
}

// componentCode reports whether the stack is in the code of a profiled
// component.
func (g goroutineGroup) componentCode() bool {
	return slices.ContainsFunc(g.funcs, func(f string) bool {
		return strings.Contains(f, "harness_test.(*profiled)") || strings.Contains(f, "harness_test.parkedFrom") || strings.Contains(f, "harness_test.burnFromRun")
	})
}

// goroutineProfile parses the process's goroutine profile as text
// (debug=1), where each record is "N @ pcs", then "# labels: {...}" if the
// goroutines carry labels, then a "#\tpc\tfunc+off\tfile:line" line per
// frame.
func goroutineProfile(t *testing.T) []goroutineGroup {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, pprof.Lookup("goroutine").WriteTo(&buf, 1))
	var groups []goroutineGroup
	for rec := range strings.SplitSeq(buf.String(), "\n\n") {
		var g goroutineGroup
		for line := range strings.SplitSeq(strings.TrimSpace(rec), "\n") {
			switch {
			case line == "", strings.HasPrefix(line, "goroutine profile:"):
			case strings.HasPrefix(line, "# labels: "):
				require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "# labels: ")), &g.labels), line)
			case strings.HasPrefix(line, "#\t"):
				fields := strings.Split(line, "\t")
				require.GreaterOrEqual(t, len(fields), 3, line)
				fn := fields[2]
				if i := strings.LastIndex(fn, "+0x"); i >= 0 {
					fn = fn[:i]
				}
				g.funcs = append(g.funcs, fn)
			default:
				n, _, ok := strings.Cut(line, " @ ")
				require.True(t, ok, "a goroutine profile line: %q", line)
				var err error
				g.count, err = strconv.Atoi(n)
				require.NoError(t, err, line)
			}
		}
		if g.count > 0 {
			groups = append(groups, g)
		}
	}
	require.NotEmpty(t, groups, "the goroutine profile:\n%s", buf.String())
	return groups
}

// labelsOf counts the goroutines whose stack has fn, by their labels
// ("k=v,k=v", sorted; "" for none).
func labelsOf(groups []goroutineGroup, fn string) map[string]int {
	counts := map[string]int{}
	for _, g := range groups {
		if !g.has(fn) {
			continue
		}
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(g.labels)) {
			kv = append(kv, k+"="+g.labels[k])
		}
		counts[strings.Join(kv, ",")] += g.count
	}
	return counts
}

// TestProfileLabels: every goroutine a component's AddFlags, Run, Ready or
// Stop starts carries component=<its name>, merged with the labels of the
// caller's context, and only its own; the harness's goroutines and the
// caller's carry none; a restarted instance's Run, Ready and Stop carry
// theirs too.
func TestProfileLabels(t *testing.T) {
	h, _ := newHarness(t)
	release, entered := make(chan struct{}), make(chan struct{}, 32)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	alpha := &profiled{name: "labels-alpha", burn: true, release: release, entered: entered, wg: &wg}
	beta := &profiled{name: "labels-beta", release: release, entered: entered, wg: &wg}
	// waitEntered waits until n more goroutines are in their functions.
	waitEntered := func(n int) {
		t.Helper()
		for i := range n {
			select {
			case <-entered:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d of %d goroutines are in their functions after 10s", i, n)
			}
		}
	}
	require.NoError(t, h.Add(alpha, nil))
	require.NoError(t, h.Add(beta, nil, alpha.name))

	// A distro's own label on the context of Run: kept, not replaced.
	ctx, cancel := context.WithCancel(pprof.WithLabels(t.Context(), pprof.Labels("distro", "test")))
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- h.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	require.NoError(t, h.WaitReady(wctx))
	waitEntered(5 + 4) // alpha: AddFlags, Run, Run's parked and burning ones, Ready; beta: all but burning

	const (
		a = "component=labels-alpha,distro=test"
		b = "component=labels-beta,distro=test"
	)
	groups := goroutineProfile(t)
	for _, fn := range []string{"harness_test.parkedFromAddFlags", "harness_test.parkedFromRun", "harness_test.parkedFromReady", "harness_test.(*profiled).Run"} {
		assert.Equal(t, map[string]int{a: 1, b: 1}, labelsOf(groups, fn), "goroutines in %s, by labels", fn)
	}
	assert.Equal(t, map[string]int{a: 1}, labelsOf(groups, "harness_test.burnFromRun"), "the goroutine burning CPU for alpha")
	assert.Equal(t, map[string]int{"": 1}, labelsOf(groups, "harness_test.TestProfileLabels"), "the test's own goroutine")
	assert.Equal(t, map[string]int{"": 1}, labelsOf(groups, "harness.(*Harness).Run"), "the goroutine of Harness.Run")
	assertNoStrayLabels(t, groups)
	alpha.mu.Lock()
	assert.Equal(t, alpha.name, alpha.runLabel, "the label is on Run's context too")
	alpha.mu.Unlock()

	// A restart: the new instance's Run, Ready and (below) Stop carry the
	// label; the old one's goroutines keep theirs.
	require.NoError(t, h.Restart(wctx, beta.name, nil))
	require.NoError(t, h.WaitReady(wctx))
	waitEntered(1 + 3) // the old beta's Stop; the new one's Run, Run's parked one, Ready
	groups = goroutineProfile(t)
	assert.Equal(t, map[string]int{a: 1, b: 2}, labelsOf(groups, "harness_test.parkedFromRun"))
	assert.Equal(t, map[string]int{a: 1, b: 2}, labelsOf(groups, "harness_test.parkedFromReady"))
	assert.Equal(t, map[string]int{b: 1}, labelsOf(groups, "harness_test.parkedFromStop"), "the old beta's Stop")
	assertNoStrayLabels(t, groups)

	cancel()
	require.NoError(t, <-errc)
	waitEntered(2) // each Stop
	groups = goroutineProfile(t)
	assert.Equal(t, map[string]int{a: 1, b: 2}, labelsOf(groups, "harness_test.parkedFromStop"))
	assert.Empty(t, labelsOf(groups, "harness_test.burnFromRun"), "the burner stopped with alpha's Run")
	assertNoStrayLabels(t, groups)
}

// assertNoStrayLabels: a goroutine labelled for one of the profiled
// components runs that component's code — nothing of the harness's own
// wears its label. (A goroutine of the component that has just returned
// may still be seen exiting, in runtime.goexit1 alone.)
func assertNoStrayLabels(t *testing.T, groups []goroutineGroup) {
	t.Helper()
	for _, g := range groups {
		exiting := !slices.ContainsFunc(g.funcs, func(f string) bool { return !strings.HasPrefix(f, "runtime.goexit") })
		if c := g.labels[harness.ProfileLabel]; strings.HasPrefix(c, "labels-") && !g.componentCode() && !exiting {
			t.Errorf("a goroutine not in a component's code carries component=%s: %s", c, strings.Join(g.funcs, " < "))
		}
	}
}
