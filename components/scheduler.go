package components

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	schedopts "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// SchedulerName is the component name of the kube-scheduler adapter.
const SchedulerName = "kube-scheduler"

// schedulerConfigzName is the configz name kube-scheduler's Run registers.
const schedulerConfigzName = "componentconfig"

// Scheduler runs the real kube-scheduler of k8s.io/kubernetes as a harness
// component. It takes exactly kube-scheduler's flags (including --config).
// Create it with NewScheduler; a value runs once.
//
// It uses options.NewOptionsWithComponentGlobalsRegistry with the scope's
// registry, app.Setup and app.Run, never NewSchedulerCommand. Leader
// election, if the user enabled it, is run by the adapter (see Run).
type Scheduler struct {
	opts       *schedopts.Options
	registry   []schedapp.Option
	elector    *elector
	ready      chan struct{}
	exited     chan struct{}
	readyOnce  sync.Once
	mu         sync.Mutex
	runErr     error
	leaderElec LeaderElection
}

// NewScheduler returns a kube-scheduler component. Out-of-tree plugins are
// given as upstream's app.Option values (app.WithPlugin), as to
// NewSchedulerCommand.
func NewScheduler(outOfTreePlugins ...schedapp.Option) *Scheduler {
	return &Scheduler{
		registry: outOfTreePlugins,
		elector:  newElector(SchedulerName),
		ready:    make(chan struct{}),
		exited:   make(chan struct{}),
	}
}

// Name returns "kube-scheduler".
func (s *Scheduler) Name() string { return SchedulerName }

// Renew returns a new, unstarted kube-scheduler with the same out-of-tree
// plugins, for harness.Restart.
func (s *Scheduler) Renew() harness.Component { return NewScheduler(s.registry...) }

// AddFlags creates upstream's options with the scope's registry and adds
// every upstream flag set to the scope's flag set. It has no other effect.
func (s *Scheduler) AddFlags(sc *scoping.Scope) error {
	s.opts = schedopts.NewOptionsWithComponentGlobalsRegistry(sc.Registry())
	addFlagSets(sc, *s.opts.Flags)
	return nil
}

// LeaderElection returns the leader-election configuration Run resolved
// (zero before Run got that far).
func (s *Scheduler) LeaderElection() LeaderElection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaderElec
}

// Run sets the scheduler up (app.Setup) and runs it (app.Run) until ctx is
// cancelled, then returns nil.
//
// Leader election: upstream resolves the settings as it always does
// (--leader-elect and the --leader-elect-* flags over the --config file's
// leaderElection block) and, in Setup, builds client-go's
// LeaderElectionConfig with its lock (identity hostname_uuid, events
// recorded as the first profile's scheduler name). Run takes that config
// out of the completed config — cc.LeaderElection = nil and
// cc.ComponentConfig.LeaderElection.LeaderElect = false, so upstream's Run
// takes its path without an elector (and /configz shows leaderElect:
// false) — and runs app.Run inside its own client-go elector with the same
// lock and durations and ReleaseOnCancel. Differences from upstream,
// all because app.Run only runs while leading: a standby scheduler serves
// no /healthz (its port is bound by Setup but not served until it leads);
// its informers start when it leads (as DelayCacheUntilActive); the
// leader-election watchdog is not among /healthz's checks; coordinated
// leader election (the CoordinatedLeaderElection gate) is not supported.
// A lost lease stops only this scheduler: Run returns an error wrapping
// ErrLeaseLost.
func (s *Scheduler) Run(ctx context.Context) (err error) {
	defer func() {
		s.mu.Lock()
		s.runErr = err
		s.mu.Unlock()
		close(s.exited)
	}()
	if s.opts == nil {
		return errors.New("kube-scheduler: Run before AddFlags")
	}
	if ctx.Err() != nil {
		return nil // stopped before it started
	}
	logger := klog.FromContext(ctx).WithValues("component", SchedulerName)
	ctx = klog.NewContext(ctx, logger)

	informerName, err := cache.NewInformerName("kube-scheduler")
	if err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	defer informerName.Release()
	s.opts.InformerName = informerName

	// Setup's context drives the goroutines scheduler.New starts (cache,
	// metrics recorder, SIGUSR2 cache debugger) and the events broadcaster.
	setupCtx, cancelSetup := context.WithCancel(ctx)
	defer cancelSetup()
	cc, sched, err := schedapp.Setup(setupCtx, s.opts, s.registry...)
	if err != nil {
		return err
	}

	leCfg := cc.LeaderElection
	le := LeaderElection{
		Enabled:           cc.ComponentConfig.LeaderElection.LeaderElect,
		LeaseDuration:     cc.ComponentConfig.LeaderElection.LeaseDuration.Duration,
		RenewDeadline:     cc.ComponentConfig.LeaderElection.RenewDeadline.Duration,
		RetryPeriod:       cc.ComponentConfig.LeaderElection.RetryPeriod.Duration,
		ResourceLock:      cc.ComponentConfig.LeaderElection.ResourceLock,
		ResourceNamespace: cc.ComponentConfig.LeaderElection.ResourceNamespace,
		ResourceName:      cc.ComponentConfig.LeaderElection.ResourceName,
	}
	if leCfg != nil {
		le.Identity = leCfg.Lock.Identity()
	}
	s.mu.Lock()
	s.leaderElec = le
	s.mu.Unlock()
	cc.LeaderElection = nil
	cc.ComponentConfig.LeaderElection.LeaderElect = false

	var ran bool
	work := func(wctx context.Context) error {
		ran = true
		defer configz.Delete(schedulerConfigzName) // upstream's Run registers it and never deletes it
		watchCtx, stopWatch := context.WithCancel(wctx)
		defer stopWatch()
		go s.watchReady(watchCtx, cc, sched)
		err := schedapp.Run(wctx, cc, sched)
		if wctx.Err() != nil && (err == nil || strings.Contains(err.Error(), "finished without leader elect")) {
			// Upstream's Run always returns "finished without leader elect"
			// once its context is done: that is a clean stop (or a lost
			// lease, which the elector reports).
			return nil
		}
		if err == nil {
			err = errors.New("kube-scheduler: Run returned before it was asked to stop")
		}
		return err
	}
	if leCfg == nil {
		err = work(ctx)
	} else {
		source := "default-scheduler" // as upstream: the first profile's scheduler name
		if len(cc.ComponentConfig.Profiles) > 0 {
			source = cc.ComponentConfig.Profiles[0].SchedulerName
		}
		stopEvents := recordLeaderEvents(ctx, leCfg.Lock, cc.Client, source)
		err = s.elector.run(ctx, *leCfg, work)
		stopEvents()
	}
	if !ran && cc.SecureServing != nil && cc.SecureServing.Listener != nil {
		_ = cc.SecureServing.Listener.Close() // bound by Setup, never served
	}
	return err
}

// watchReady closes s.ready once the scheduler's informer event handlers
// have synced (sched.WaitForHandlersSync, what /readyz's sched-handler-sync
// check waits for) and, if it serves, its /healthz answers ok.
func (s *Scheduler) watchReady(ctx context.Context, cc *schedconfig.CompletedConfig, sched *scheduler.Scheduler) {
	logger := klog.FromContext(ctx)
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Waiting for the scheduler's handlers to sync")
		}
		return
	}
	if cc.SecureServing != nil {
		if err := newServingProbe(cc.SecureServing).waitOK(ctx, "/healthz"); err != nil {
			return
		}
	}
	s.readyOnce.Do(func() { close(s.ready) })
}

// Ready blocks until the scheduler leads, its handlers synced and its
// /healthz answers ok (over TLS, pinned to its serving certificate); or
// until it is a standby — another instance holds the lease — which counts
// as ready too.
func (s *Scheduler) Ready(ctx context.Context) error {
	select {
	case <-s.ready:
		return nil
	case <-s.elector.standby:
		return nil
	case <-s.exited:
		s.mu.Lock()
		defer s.mu.Unlock()
		return fmt.Errorf("kube-scheduler exited before it was ready: %w", s.runErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}
