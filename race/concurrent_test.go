package race_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/scoping"
)

const (
	// iterations of the concurrent scenario; each starts three goroutines.
	iterations = 200
	// childEnv makes TestUpstream_ConcurrentParse_DataRaceChild run the racy
	// scenario; without it the child test skips.
	childEnv  = "KUBEHARNESS_RACE_CHILD"
	childTest = "TestUpstream_ConcurrentParse_DataRaceChild"
)

// concurrentArgs are the disjoint gates of the three components.
var concurrentArgs = map[string]string{apiserver: Alpha1, scheduler: Alpha2, kcm: Alpha3}

// TestUpstream_ConcurrentParse_DataRace reproduces the KEP-4330 follow-up
// (kubernetes/enhancements#4330, after k3s#11853): k3s builds its commands and
// then executes the scheduler and the controller-manager in goroutines released
// by the same readiness channel, and each command's pflag parse writes the
// registry's flag storage — componentGlobalsRegistry.featureGatesConfig
// (through the one shared cliflag.ColonSeparatedMultimapStringString) and
// emulationVersionConfig — without the registry's mutex, while the other
// commands parse and Set() reads it under the mutex. That is a data race:
// -race reports it in cli/flag/colon_separated_multimap_string_string.go and
// compatibility/registry.go. Its effects, which the child logs but cannot
// assert (they depend on timing): an iteration now and then where one
// component's gate is lost ("the featuregate of the component that is started
// first does not take effect"), and some runs where the process dies with
// "fatal error: concurrent map writes", with or without -race.
//
// A race report fails the test it happens in, so the racy scenario runs in a
// child process: this test re-executes its own test binary to run only
// TestUpstream_ConcurrentParse_DataRaceChild, with KUBEHARNESS_RACE_CHILD=1,
// and asserts that the child's output has the race report and that the report
// points at the registry code. When upstream guards the flag storage, the child
// passes and this test fails: then turn it around.
func TestUpstream_ConcurrentParse_DataRace(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("this is the child process")
	}
	if !raceEnabled {
		t.Skip("the data race needs the race detector to be seen; run: go test -race ./race/")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0],
		"-test.run=^"+childTest+"$", "-test.count=1", "-test.v", "-test.timeout=2m")
	// The last value of a key in Env wins: report every race, to stderr, and
	// keep going after the first.
	cmd.Env = append(os.Environ(), childEnv+"=1", "GORACE=halt_on_error=0 log_path=stderr")
	began := time.Now()
	out, err := cmd.CombinedOutput()
	output := string(out)
	t.Logf("child ran %s: %v", time.Since(began).Round(time.Millisecond), err)
	require.NoError(t, ctx.Err(), "the child timed out; tail of its output:\n%s", tail(output))

	require.Contains(t, output, "=== RUN   "+childTest, "the child ran the scenario:\n%s", tail(output))
	require.NotContains(t, output, "--- SKIP: "+childTest, "the child skipped the scenario")
	var exitErr *exec.ExitError
	require.True(t, errors.As(err, &exitErr), "the child must fail because of the race, got %v:\n%s", err, tail(output))

	races := strings.Count(output, "WARNING: DATA RACE")
	require.Positive(t, races, "upstream's concurrent parse no longer races: the registry's flag storage is guarded now. Child output:\n%s", tail(output))
	registry := componentBaseFrames(output, "/compatibility/registry.go:")
	multimap := componentBaseFrames(output, "/cli/flag/colon_separated_multimap_string_string.go:")
	assert.Positive(t, registry+multimap, "the race reports point at the registry's flag storage:\n%s", tail(output))
	t.Logf("child: %d race reports; frames in compatibility/registry.go: %d, in cli/flag/colon_separated_multimap_string_string.go: %d",
		races, registry, multimap)
	if i := strings.Index(output, "outcomes of "); i >= 0 { // the child's own summary line
		t.Logf("child: %s", strings.SplitN(output[i:], "\n", 2)[0])
	}
	if i := strings.Index(output, "fatal error: concurrent map"); i >= 0 {
		t.Logf("child: died with %q, as the process can without -race too", strings.SplitN(output[i:], "\n", 2)[0])
	}
}

// TestUpstream_ConcurrentParse_DataRaceChild is the racy scenario; it runs
// only in the child process TestUpstream_ConcurrentParse_DataRace starts, and
// fails there with the race report. Each iteration wires a fresh registry and
// does what k3s's embedded executor does: build each command (AddFlags) in the
// calling goroutine, then execute each in its own goroutine once a readiness
// channel closes (the scheduler and the controller-manager both wait for the
// apiserver). The parses are then unordered with each other whatever the
// scheduler does, so the race detector reports them every run, even with
// GOMAXPROCS=1.
func TestUpstream_ConcurrentParse_DataRaceChild(t *testing.T) {
	if os.Getenv(childEnv) != "1" {
		t.Skip("child of TestUpstream_ConcurrentParse_DataRace; runs only when re-executed by it")
	}
	outcomes := map[string]int{}
	for range iterations {
		u := newUpstream(t)
		ready := make(chan struct{})
		errs := make(chan error, len(concurrentArgs))
		var wg sync.WaitGroup
		for c, feature := range concurrentArgs {
			cmd := u.newCommand(c)
			wg.Go(func() {
				<-ready
				errs <- cmd.execute("--feature-gates=" + feature + "=true")
			})
		}
		close(ready)
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if err != nil {
				failed++
			}
		}
		switch {
		case failed > 0:
			outcomes["a Set() failed"]++
		case u.gate.Enabled(Alpha1) && u.gate.Enabled(Alpha2) && u.gate.Enabled(Alpha3):
			outcomes["all three gates applied"]++
		default:
			outcomes["a component's gate was lost"]++
		}
	}
	t.Logf("outcomes of %d iterations: %s", iterations, sortedCounts(outcomes))
}

// TestHarness_ConcurrentParse_RaceFree: the same concurrent start through
// scoping, and more of it concurrent: every goroutine creates its scope, adds
// the flags and parses into its own flag set and registry; the barrier
// reconciles and applies once all have parsed. Under -race this runs clean
// in-process, and every iteration applies all three gates.
func TestHarness_ConcurrentParse_RaceFree(t *testing.T) {
	if !raceEnabled {
		t.Log("without -race this checks only the outcome; run: go test -race ./race/")
	}
	for i := range iterations {
		target := newTarget(t)
		b, err := scoping.NewBarrier(target, discard)
		require.NoError(t, err)
		start := make(chan struct{})
		errs := make(chan error, len(concurrentArgs))
		var wg sync.WaitGroup
		for c, feature := range concurrentArgs {
			wg.Go(func() {
				<-start
				_, err := parseScope(b, c, "--feature-gates="+feature+"=true")
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "iteration %d", i)
		}
		plan, err := b.Reconcile()
		require.NoError(t, err, "iteration %d", i)
		require.Equal(t, []string{apiserver, kcm, scheduler}, slices.Sorted(slices.Values(plan.Components)), "iteration %d", i)
		require.NoError(t, b.Apply(plan), "iteration %d", i)
		require.Equal(t, on(Alpha1, Alpha2, Alpha3, BetaOn), view(target.Gate, allFeatures...), "iteration %d", i)
	}
}

// componentBaseFrames counts the stack frames in k8s.io/component-base files
// whose path ends in file, e.g. "/compatibility/registry.go:".
func componentBaseFrames(output, file string) int {
	n := 0
	for _, line := range strings.Split(output, "\n") {
		if strings.Contains(line, "k8s.io/component-base") && strings.Contains(line, file) {
			n++
		}
	}
	return n
}

// tail is the end of a long output, for failure messages.
func tail(s string) string {
	const n = 6000
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}
