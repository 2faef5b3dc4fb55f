package components

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedopts "k8s.io/kubernetes/cmd/kube-scheduler/app/options"

	"github.com/kubeharness/kubeharness/components/internal/election"
	"github.com/kubeharness/kubeharness/components/internal/flags"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// SchedulerName is the component name of the kube-scheduler adapter.
const SchedulerName = names.Scheduler

// schedulerConfigzName is the configz name kube-scheduler's Run registers.
const schedulerConfigzName = "componentconfig"

// Scheduler runs the real kube-scheduler of k8s.io/kubernetes as a harness
// component. It takes exactly kube-scheduler's flags (including --config).
// Create it with NewScheduler; a value runs once.
//
// It uses options.NewOptionsWithComponentGlobalsRegistry with the scope's
// registry, app.Setup and app.Run, never NewSchedulerCommand. Leader
// election, if the user enabled it, is run by the adapter (see Run).
//
// Its client connection is --kubeconfig (or --master): unlike
// ControllerManager, it cannot be given a *rest.Config. app.Setup builds the
// client configuration from those flags (options.Config → ApplyTo →
// clientcmd.BuildConfigFromFlags), makes every client, informer factory and
// the scheduler itself from it, and returns them built; the options have no
// field for a configuration, so one could only be injected by re-implementing
// Setup and Config.
type Scheduler struct {
	*lifecycle // ready: handlers synced and /healthz ok while leading
	opts       *schedopts.Options
	registry   []schedapp.Option
}

// NewScheduler returns a kube-scheduler component. Out-of-tree plugins are
// given as upstream's app.Option values (app.WithPlugin), as to
// NewSchedulerCommand.
func NewScheduler(outOfTreePlugins ...schedapp.Option) *Scheduler {
	return &Scheduler{
		lifecycle: newLifecycle(SchedulerName, election.New(SchedulerName)),
		registry:  outOfTreePlugins,
	}
}

// Name returns "kube-scheduler".
func (s *Scheduler) Name() string { return SchedulerName }

// Renew returns a new, unstarted kube-scheduler with the same out-of-tree
// plugins and the same leader-election identity (see Run), for
// harness.Restart and Harness.Recover.
func (s *Scheduler) Renew() harness.Component {
	n := NewScheduler(s.registry...)
	n.elector = s.elector.Successor()
	return n
}

// AddFlags creates upstream's options with the scope's registry and adds
// every upstream flag set to the scope's flag set. It has no other effect.
func (s *Scheduler) AddFlags(sc *scoping.Scope) error {
	s.opts = schedopts.NewOptionsWithComponentGlobalsRegistry(sc.Registry())
	flags.AddSets(sc, *s.opts.Flags)
	return nil
}

// LeaderElection returns the leader-election configuration Run resolved
// (zero before Run got that far).
func (s *Scheduler) LeaderElection() LeaderElection { return s.elector.Settings() }

// Run sets the scheduler up (app.Setup) and runs it (app.Run) until ctx is
// cancelled, then returns nil.
//
// Leader election: upstream resolves the settings as it always does
// (--leader-elect and the --leader-elect-* flags over the --config file's
// leaderElection block). Run reads them from the completed config and
// turns upstream's elector off — cc.LeaderElection = nil and
// cc.ComponentConfig.LeaderElection.LeaderElect = false, so upstream's Run
// takes its path without an elector (and /configz shows leaderElect:
// false) — and runs app.Run inside its own client-go elector, with the
// lease taken as the controller-manager's is: the lock upstream's Setup
// would build (the same settings, the client configuration cc.KubeConfig,
// identity hostname_uuid — or, for an instance made by Renew, its
// predecessor's identity), the same durations, events recorded as the
// first profile's scheduler name, and the lease released on stop. Differences from upstream,
// all because app.Run only runs while leading: a standby scheduler serves
// no /healthz (its port is bound by Setup but not served until it leads);
// its informers start when it leads (as DelayCacheUntilActive); the
// leader-election watchdog is not among /healthz's checks; coordinated
// leader election (the CoordinatedLeaderElection gate) is not supported.
// A lost lease stops only this scheduler: Run returns an error wrapping
// ErrLeaseLost.
func (s *Scheduler) Run(ctx context.Context) error {
	return s.run(ctx, s.opts != nil, s.setupAndRun)
}

// setupAndRun is Run's upstream wiring.
func (s *Scheduler) setupAndRun(ctx context.Context) error {
	informerName, release, err := s.takeInformerName("")
	if err != nil {
		return err
	}
	defer release()
	setSchedulerInformerName(s.opts, informerName)

	// Setup reads the authentication ConfigMap with context.TODO(): fenced,
	// so that a stop while the datastore does not answer is not held up
	// (package internal/fence), and held until the apiserver is ready: the
	// scheduler starts early (StartsEarly), and Setup's work before that
	// read overlaps the apiserver's start.
	apiServerUp := dependenciesReady(ctx)
	_, unfence := s.clientFence(ctx, apiServerUp, s.opts.Authentication, s.opts.Authorization)
	defer unfence()

	// Setup's context drives the goroutines scheduler.New starts (cache,
	// metrics recorder, SIGUSR2 cache debugger) and the events broadcaster.
	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	cc, sched, err := schedapp.Setup(setupCtx, s.opts, s.registry...)
	// Nothing of the scheduler talks to the apiserver before it is ready:
	// the lease (and so upstream's Run) waits for it here, whatever Setup
	// read (--authentication-skip-lookup reads nothing).
	if proceed, err := awaitAPIServer(ctx, apiServerUp, err, func() { closeUnusedListener(cc.SecureServing) }); !proceed {
		return err
	}

	// Upstream's elector off (see Run); the adapter's takes the lease the
	// way the controller-manager's does (runElected), from the same
	// settings and cc.KubeConfig, as upstream's Setup builds its lock.
	le := election.From(cc.ComponentConfig.LeaderElection)
	cc.LeaderElection = nil
	cc.ComponentConfig.LeaderElection.LeaderElect = false

	source := corev1.DefaultSchedulerName // as upstream: the first profile's scheduler name records the lease's events
	if len(cc.ComponentConfig.Profiles) > 0 {
		source = cc.ComponentConfig.Profiles[0].SchedulerName
	}
	return s.runElected(ctx, upstreamRun{
		run: func(ctx context.Context) error { return schedapp.Run(ctx, cc, sched) },
		// The scheduler's informer event handlers synced
		// (sched.WaitForHandlersSync, what /readyz's sched-handler-sync check
		// waits for) and, if it serves, its /healthz answers ok.
		ready: func(ctx context.Context) error {
			if err := sched.WaitForHandlersSync(ctx); err != nil {
				if ctx.Err() == nil {
					klog.FromContext(ctx).Error(err, "Waiting for the scheduler's handlers to sync")
				}
				return err
			}
			return probe.WaitHealthz(ctx, cc.SecureServing)
		},
		configz:     schedulerConfigzName,
		election:    le,
		kubeconfig:  cc.KubeConfig,
		events:      cc.KubeConfig,
		eventSource: source,
		unserved:    func() { closeUnusedListener(cc.SecureServing) }, // bound by Setup, never served
		// What upstream's Run always returns once its context ended: a
		// clean stop (or a lost lease, which the elector reports).
		stopMessages: []upstreamMessage{{text: upstreamSchedulerStopped}},
	})
}

// StartsEarly is harness.EarlyStarter's: the scheduler starts while
// kube-apiserver is still coming up; its requests wait until the
// apiserver is ready, so that only its own work overlaps the apiserver's
// start (the serving certificate it makes itself, its framework).
func (s *Scheduler) StartsEarly(dependency string) bool { return startsEarly(dependency) }

// Ready blocks until the scheduler leads, its handlers synced and its
// /healthz answers ok (over TLS, pinned to its serving certificate); or
// until it is a standby — another instance holds the lease — which counts
// as ready too.
func (s *Scheduler) Ready(ctx context.Context) error { return s.lifecycle.Ready(ctx) }
