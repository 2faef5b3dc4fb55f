package testenv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// A test that needs a pristine process (upstream leaves process-wide state
// behind) re-executes its own test binary as a child that runs one
// scenario: the parent calls RunChild, the child's TestChild reads
// ChildScenario, prints its results with ChildResult and, if it passed,
// ChildDone as the very last thing (a child whose process upstream exited,
// os.Exit(0) included, never prints it).
const (
	// ChildEnv names, in a child's environment, the scenario it runs.
	ChildEnv = "KUBEHARNESS_TEST_CHILD"
	// childResultPrefix begins each result line of a child.
	childResultPrefix = "KUBEHARNESS-RESULT "
	// childDoneMarker is the line ChildDone prints.
	childDoneMarker = "KUBEHARNESS-CHILD-DONE"
)

// ChildScenario returns the scenario this process runs as a child, or ""
// in a parent.
func ChildScenario() string { return os.Getenv(ChildEnv) }

// ChildResult prints one key=value result for the parent (ChildRun.Results).
func ChildResult(key string, v any) { fmt.Printf("\n%s%s=%v\n", childResultPrefix, key, v) }

// ChildDone prints the end marker (ChildRun.Done): call it last, once the
// scenario passed.
func ChildDone() { fmt.Println("\n" + childDoneMarker) }

// RunScenario is a test binary's TestChild: in a child it runs the
// scenario ChildEnv names and, if it passed, prints ChildDone's marker; in
// a parent it skips t.
func RunScenario(t *testing.T, scenarios map[string]func(*testing.T)) {
	name := ChildScenario()
	if name == "" {
		t.Skip("runs only in a child process started by another test")
	}
	run, ok := scenarios[name]
	if !ok {
		t.Fatalf("unknown scenario %q", name)
	}
	run(t)
	if !t.Failed() {
		ChildDone()
	}
}

// ChildRun is how a child ended and what it printed.
type ChildRun struct {
	// Output is the child's stdout and stderr.
	Output string
	// Results are its ChildResult lines.
	Results map[string]string
	// Done is true if it printed ChildDone's marker.
	Done bool
	// Err is the child's exit: nil for status 0.
	Err error
	// Wall is how long it ran, process start included.
	Wall time.Duration
}

// RunChild re-executes this test binary (os.Args[0]) to run TestChild with
// ChildEnv=scenario, until it exits or ctx ends (its -test.timeout is four
// fifths of ctx's time left, if ctx has a deadline), with its output
// written to logPath as well, and returns how it ended.
func RunChild(ctx context.Context, scenario, logPath string) (ChildRun, error) {
	return RunChildUnder(ctx, nil, scenario, logPath)
}

// RunChildUnder is RunChild with the test binary run under wrapper, a
// command that executes its arguments (["unshare", "--net"]: the child in
// a network namespace of its own).
func RunChildUnder(ctx context.Context, wrapper []string, scenario, logPath string) (ChildRun, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return ChildRun{}, err
	}
	defer logFile.Close()
	args := []string{"-test.run=^TestChild$", "-test.v", "-test.count=1"}
	if deadline, ok := ctx.Deadline(); ok {
		args = append(args, "-test.timeout="+(time.Until(deadline)*4/5).Round(time.Second).String())
	}
	argv := append(append(slices.Clip(wrapper), os.Args[0]), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+scenario)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	runErr := cmd.Run()
	run := ChildRun{Results: map[string]string{}, Err: runErr, Wall: time.Since(start)}
	out, err := os.ReadFile(logPath)
	if err != nil {
		return run, err
	}
	run.Output = string(out)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, childResultPrefix); ok {
			if k, v, ok := strings.Cut(rest, "="); ok {
				run.Results[k] = v
			}
		}
		if line == childDoneMarker {
			run.Done = true
		}
	}
	return run, nil
}
