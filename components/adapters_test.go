package components_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// privateTarget is testenv.PrivateTarget, for tests that only parse.
func privateTarget(t testing.TB) scoping.Target {
	t.Helper()
	target, err := testenv.PrivateTarget()
	require.NoError(t, err)
	return target
}

func allAdapters() []harness.Component {
	return []harness.Component{components.NewAPIServer(), components.NewScheduler(), components.NewControllerManager()}
}

// TestAddFlags: every adapter adds its upstream flags to its scope, with
// the registry's flags bound to the scope, upstream's name normalisation,
// the unreconciled logging flags refused, and nothing of the commands'
// own (--version).
func TestAddFlags(t *testing.T) {
	own := map[string][]string{
		components.APIServerName:         {"etcd-servers", "service-account-issuer", "authorization-mode", "secure-port"},
		components.SchedulerName:         {"config", "leader-elect", "leader-elect-lease-duration", "kubeconfig", "secure-port"},
		components.ControllerManagerName: {"controllers", "leader-elect", "cluster-signing-cert-file", "kubeconfig", "secure-port"},
	}
	b, err := scoping.NewBarrier(privateTarget(t), scoping.WithLogger(logr.Discard()))
	require.NoError(t, err)
	for _, c := range allAdapters() {
		s, err := b.NewScope(c.Name())
		require.NoError(t, err)
		require.NoError(t, c.AddFlags(s))
		fs := s.FlagSet()
		for _, name := range append(own[c.Name()], "feature-gates", "emulated-version", "min-compatibility-version", "v", "vmodule", "logging-format") {
			assert.NotNil(t, fs.Lookup(name), "%s --%s", c.Name(), name)
		}
		assert.Nil(t, fs.Lookup("version"), "%s: --version belongs to the upstream command, not the options", c.Name())
		assert.ErrorContains(t, fs.Set("log-flush-frequency", "1s"), "process-wide logging setting", c.Name())
		args := []string{"--feature-gates=AllAlpha=false", "-v=2"}
		if c.Name() != components.APIServerName {
			args = append(args, "--leader_elect=false") // normalised to --leader-elect
		}
		require.NoError(t, s.Parse(args), c.Name())
		if f := fs.Lookup("leader-elect"); f != nil {
			assert.Equal(t, "false", f.Value.String(), c.Name())
		}
	}
}

// TestBadInput: an unknown flag, a bad value, an unknown gate, a refused
// logging flag, a bad version, or conflicting settings, in any component,
// fail the harness in its parse or barrier phase, naming the component;
// no component's Run is called and no port is opened. It runs in this
// process: nothing it does touches process-wide state.
func TestBadInput(t *testing.T) {
	baseline := goleak.IgnoreCurrent()
	defer goleak.VerifyNone(t, baseline)
	ports := map[string]int{}
	for _, name := range []string{components.APIServerName, components.SchedulerName, components.ControllerManagerName} {
		p, err := testenv.FreePort()
		require.NoError(t, err)
		ports[name] = p
	}
	base := func(name string) []string {
		return []string{"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[name])}
	}
	type bad struct {
		component string
		args      []string
		want      string
	}
	cases := []struct {
		name  string
		bad   []bad
		phase harness.Phase
	}{
		{"unknown flag", []bad{{components.ControllerManagerName, []string{"--no-such-flag=1"}, "unknown flag: --no-such-flag"}}, harness.PhaseParse},
		{"bad value", []bad{{components.SchedulerName, []string{"--leader-elect-lease-duration=soon"}, `invalid argument "soon"`}}, harness.PhaseParse},
		{"unknown feature gate", []bad{{components.APIServerName, []string{"--feature-gates=NoSuchGate=true"}, "NoSuchGate"}}, harness.PhaseParse},
		{"emulated version out of range", []bad{{components.SchedulerName, []string{"--emulated-version=1.99"}, "1.99"}}, harness.PhaseParse},
		{"process-wide logging flag", []bad{{components.APIServerName, []string{"--log-flush-frequency=1s"}, "process-wide logging setting"}}, harness.PhaseParse},
		{"positional argument", []bad{{components.ControllerManagerName, []string{"extra"}, "unexpected positional arguments"}}, harness.PhaseParse},
		{"one per component", []bad{
			{components.APIServerName, []string{"--no-such-flag"}, "unknown flag"},
			{components.SchedulerName, []string{"--secure-port=abc"}, "invalid argument"},
			{components.ControllerManagerName, []string{"--feature-gates=NoSuchGate=true"}, "NoSuchGate"},
		}, harness.PhaseParse},
		{"conflicting verbosity", []bad{
			{components.APIServerName, []string{"-v=2"}, "-v"},
			{components.SchedulerName, []string{"-v=4"}, "-v"},
		}, harness.PhaseBarrier},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}, Logger: logr.Discard()}
			var spies []*runSpy
			for i, c := range allAdapters() {
				args := base(c.Name())
				for _, b := range tc.bad {
					if b.component == c.Name() {
						args = append(args, b.args...)
					}
				}
				spy := &runSpy{Component: c}
				spies = append(spies, spy)
				var deps []string
				if i > 0 {
					deps = []string{components.APIServerName}
				}
				require.NoError(t, h.Add(spy, args, deps...))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := h.Run(ctx)
			require.Error(t, err)
			t.Logf("%v", err)
			if tc.phase == harness.PhaseParse {
				failed := componentErrors(err)
				require.Len(t, failed, len(tc.bad))
				for _, b := range tc.bad {
					ce := failed[b.component]
					require.NotNil(t, ce, "%s is named", b.component)
					assert.Equal(t, harness.PhaseParse, ce.Phase)
					assert.ErrorContains(t, ce, b.want)
				}
			} else {
				var pe *harness.PhaseError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.phase, pe.Phase)
				for _, b := range tc.bad {
					assert.ErrorContains(t, err, b.component)
				}
			}
			for _, s := range spies {
				assert.Zero(t, s.runs.Load(), "%s: Run not called", s.Name())
			}
			for name, p := range ports {
				assert.True(t, testenv.PortFree(p), "%s's port %d never opened", name, p)
			}
		})
	}
}

// componentErrors finds every *harness.ComponentError in a joined error.
func componentErrors(err error) map[string]*harness.ComponentError {
	out := map[string]*harness.ComponentError{}
	var walk func(error)
	walk = func(err error) {
		var ce *harness.ComponentError
		if errors.As(err, &ce) && ce == err {
			out[ce.Component] = ce
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}
