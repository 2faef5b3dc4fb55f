// Package election runs a component's work while it holds its
// leader-election lease (an Elector), with client-go's LeaderElector and a
// bounded release, and never exits the process: a lost lease ends only the
// work, with ErrLeaseLost.
package election

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/klog/v2"
)

// Settings is the leader-election configuration an adapter read from its
// upstream options after parsing, and runs with its own Elector.
// Upstream's elector is always off in the adapters: its OnStoppedLeading
// exits the process (kube-scheduler os.Exit(0) on shutdown and
// klog.FlushAndExit on a lost lease; kube-controller-manager FlushAndExit
// unless its ControllerManagerReleaseLeaderElectionLockOnExit gate is on).
type Settings struct {
	// Enabled is --leader-elect (default true upstream).
	Enabled bool `json:"enabled"`
	// LeaseDuration, RenewDeadline and RetryPeriod are
	// --leader-elect-lease-duration, --leader-elect-renew-deadline and
	// --leader-elect-retry-period.
	LeaseDuration time.Duration `json:"leaseDuration"`
	RenewDeadline time.Duration `json:"renewDeadline"`
	RetryPeriod   time.Duration `json:"retryPeriod"`
	// ResourceLock, ResourceNamespace and ResourceName are
	// --leader-elect-resource-lock, -namespace and -name.
	ResourceLock      string `json:"resourceLock"`
	ResourceNamespace string `json:"resourceNamespace"`
	ResourceName      string `json:"resourceName"`
	// Identity is the holder identity the elector uses (hostname_uuid, as
	// upstream); empty until Run built the elector.
	Identity string `json:"identity,omitempty"`
}

// From reads upstream's resolved leader-election settings
// (the --leader-elect* flags, or a --config file's leaderElection block);
// Identity is left empty.
func From(c componentbaseconfig.LeaderElectionConfiguration) Settings {
	return Settings{
		Enabled:           c.LeaderElect,
		LeaseDuration:     c.LeaseDuration.Duration,
		RenewDeadline:     c.RenewDeadline.Duration,
		RetryPeriod:       c.RetryPeriod.Duration,
		ResourceLock:      c.ResourceLock,
		ResourceNamespace: c.ResourceNamespace,
		ResourceName:      c.ResourceName,
	}
}

// Lease builds the lease lock and client-go's election settings for le,
// with a hostname_uuid identity (as upstream), which it records in
// le.Identity. component prefixes the errors.
func (le *Settings) Lease(component string, kubeconfig *rest.Config) (*leaderelection.LeaderElectionConfig, error) {
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("%s: leader election identity: %w", component, err)
	}
	le.Identity = host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.NewFromKubeconfig(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
		resourcelock.ResourceLockConfig{Identity: le.Identity}, kubeconfig, le.RenewDeadline)
	if err != nil {
		return nil, fmt.Errorf("%s: leader election lock: %w", component, err)
	}
	return &leaderelection.LeaderElectionConfig{
		Lock:          lock,
		LeaseDuration: le.LeaseDuration,
		RenewDeadline: le.RenewDeadline,
		RetryPeriod:   le.RetryPeriod,
		Name:          le.ResourceName,
	}, nil
}

// ErrLeaseLost is the cause when a component lost its leader-election
// lease: its Run returns an error wrapping it. Upstream would have exited
// the process; here only that component stops, and the harness decides what
// happens to the others (it stops them: the first failure stops all).
var ErrLeaseLost = errors.New("lost the leader-election lease")

// Elector runs a component's work while it holds its lease, with
// client-go's LeaderElector and a bounded release (releaseLease), and never exits the
// process. It also tells Ready whether the component is a standby (another
// holder has the lease), which counts as ready: the harness must not wait
// forever for a component that is healthy but not leading.
type Elector struct {
	component string

	// inherited is the identity the previous instance of this component
	// in this process campaigned with (Successor); "" for a first start.
	inherited string

	mu       sync.Mutex
	standby  chan struct{} // closed when another holder was observed
	closed   bool
	settings Settings // what the adapter resolved (SetSettings)
}

// New returns the elector of component.
func New(component string) *Elector {
	return &Elector{component: component, standby: make(chan struct{})}
}

// Successor returns the elector for the next instance of e's component in
// this process (the adapters' Renew: harness.Restart and Harness.Recover).
// It campaigns with e's identity, so that after a lost lease — say the
// datastore stalled past the renew deadline — the new instance renews the
// record that still names it as soon as the datastore answers, instead of
// waiting a whole lease duration as a new candidate must (client-go's
// rule). That is safe because the harness starts the new instance only
// after the old one's Run returned, and the elector's run returns only
// after its work did: one identity is never leading twice at once.
func (e *Elector) Successor() *Elector {
	n := New(e.component)
	n.inherited = e.Settings().Identity
	if n.inherited == "" {
		n.inherited = e.inherited
	}
	return n
}

// campaignIdentity makes lock campaign with the inherited identity, if
// any and if lock is a Lease lock (the only kind client-go still builds),
// records the identity lock campaigns with in the settings (for
// LeaderElection and Successor), and returns it.
func (e *Elector) campaignIdentity(lock resourcelock.Interface) string {
	if ll, ok := lock.(*resourcelock.LeaseLock); ok && e.inherited != "" {
		ll.LockConfig.Identity = e.inherited
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settings.Identity = lock.Identity()
	return e.settings.Identity
}

// SetSettings records the leader-election settings the adapter resolved,
// for its LeaderElection method.
func (e *Elector) SetSettings(le Settings) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.settings = le
}

// Settings returns what SetSettings recorded (zero before).
func (e *Elector) Settings() Settings {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.settings
}

// Standby returns a channel closed once another holder of the lease was
// observed: the component is a standby, which counts as ready.
func (e *Elector) Standby() <-chan struct{} { return e.standby }

// ObservedOtherLeader records that another instance holds the lease
// (closes Standby's channel); later calls do nothing.
func (e *Elector) ObservedOtherLeader() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.closed {
		e.closed = true
		close(e.standby)
	}
}

// Run runs work under the lease described by cfg (Lock, durations, Name,
// WatchDog are used; Callbacks are set here, ReleaseOnCancel off), with
// the identity inherited from the previous instance if there was one
// (Successor).
//
// Order on stop (ctx cancelled): work's context is cancelled, run waits for
// work to return, and only then stops renewing and releases the lease
// (releaseLease, within leaseReleaseBudget: with the datastore gone the
// lease expires on its own instead), so that a successor never runs while
// this one is still stopping. If the lease is lost (client-go gave it up,
// or watchLease saw it gone first), work's context is cancelled with
// ErrLeaseLost as the cause, run waits for work, and returns an error
// wrapping ErrLeaseLost — unless ctx was cancelled meanwhile: a lease lost
// while stopping is a stop. If work returns on its own, the lease is released
// and its error returned. If ctx is cancelled before the lease was
// acquired, run returns nil without calling work.
func (e *Elector) Run(ctx context.Context, cfg leaderelection.LeaderElectionConfig, work func(context.Context) error) error {
	logger := klog.FromContext(ctx)
	identity := e.campaignIdentity(cfg.Lock)
	// The elector's own context is not cancelled by ctx: it ends when work
	// has returned (or, if never leading, when ctx ends).
	leCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()

	var (
		st        runState
		workErr   error // work's result, once workDone is closed
		workDone  = make(chan struct{})
		callbacks = leaderelection.LeaderCallbacks{}
		le        *leaderelection.LeaderElector // set before it runs the callbacks
	)
	callbacks.OnStartedLeading = func(lctx context.Context) {
		// client-go calls it in a goroutine of its own: it may come after
		// the stop, which then stands.
		if !st.move(campaigning, leading) {
			return
		}
		defer close(workDone)
		defer stopElector() // work returned: stop renewing, release the lease
		wctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		// lctx ends before work returns only when the lease was lost.
		loseLease := func() {
			st.move(leading, lost)
			cancel(ErrLeaseLost)
		}
		unhook := context.AfterFunc(lctx, loseLease)
		defer unhook()
		watched := make(chan struct{})
		defer func() { <-watched }()
		go func() {
			defer close(watched)
			if watchLease(wctx, le, cfg.LeaseDuration, cfg.RenewDeadline) {
				logger.Info("Leader election: the lease is no longer ours (not renewed within the renew deadline, or another holder seen); stopping the work", "lease", cfg.Name, "identity", identity)
				loseLease()
			}
		}()
		logger.Info("Leader election: acquired the lease, starting", "lease", cfg.Name, "identity", identity)
		workErr = work(wctx)
		cancel(nil) // ends watchLease
	}
	callbacks.OnStoppedLeading = func() {
		// Never exit: run's caller decides. client-go calls this when its
		// Run returns, whether or not it ever led: say it only if it did.
		if st.led() {
			logger.Info("Leader election: stopped leading", "lease", cfg.Name, "identity", identity)
		}
	}
	callbacks.OnNewLeader = func(id string) {
		if id != "" && id != identity { // "" is a released lease: not another leader
			logger.Info("Leader election: another instance holds the lease", "lease", cfg.Name, "holder", id)
			e.ObservedOtherLeader()
		}
	}
	cfg.Callbacks = callbacks
	// Not client-go's ReleaseOnCancel: it releases with the renew deadline
	// as its only bound (10 s by default, per component), which a stop
	// with the datastore gone waits out. releaseLease below has
	// leaseReleaseBudget.
	cfg.ReleaseOnCancel = false
	var err error
	le, err = leaderelection.NewLeaderElector(cfg)
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}

	// Stop trying to acquire when ctx ends and we are not leading; when
	// leading, work's context ends with ctx and the elector stops after work.
	go func() {
		select {
		case <-ctx.Done():
		case <-leCtx.Done():
			return
		}
		if st.move(campaigning, shut) {
			stopElector()
		}
	}()

	le.Run(leCtx)

	st.move(campaigning, shut)
	if st.led() {
		<-workDone
	}
	final := st.get() // work returned: leading, lost or shut for good
	if final == leading {
		// work returned and the elector stopped renewing: hand the lease
		// over at once instead of letting it expire, within a second.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseReleaseBudget)
		if err := releaseLease(rctx, cfg.Lock, identity); err != nil {
			logger.Info("Leader election: the lease was not released; it expires on its own", "lease", cfg.Name, "err", err)
		}
		cancel()
	}
	switch {
	case final == lost && ctx.Err() != nil:
		// Lost while (or just before) being asked to stop — a datastore
		// gone at the stop: the component stopped, as asked.
		logger.Info("Leader election: the lease was lost as the component was being stopped", "lease", cfg.Name, "identity", identity)
		return workErr
	case final == lost:
		return fmt.Errorf("%w %s (held as %s)", ErrLeaseLost, cfg.Lock.Describe(), identity)
	case final == shut && ctx.Err() == nil:
		return fmt.Errorf("leader election for %s ended without acquiring the lease", cfg.Lock.Describe())
	}
	return workErr
}

// runState is where one Elector.Run is: campaigning, then leading (work
// runs) and maybe lost, or shut (stopped before it led: work never
// starts). Each transition happens only from the state it expects.
type runState struct {
	mu sync.Mutex
	at runStage
}

type runStage int

const (
	campaigning runStage = iota
	shut                 // stopped before it led
	leading              // work started
	lost                 // work started, then the lease was lost
)

// move goes from one stage to another, if it is at from; it reports
// whether it moved.
func (s *runState) move(from, to runStage) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.at != from {
		return false
	}
	s.at = to
	return true
}

func (s *runState) get() runStage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.at
}

// led reports whether work was started.
func (s *runState) led() bool { at := s.get(); return at == leading || at == lost }

// watchLease reports, while ctx lasts, when le no longer holds its lease
// by its own account: the last renewal it observed is older than
// renewDeadline, or it saw another holder in the record. It returns false
// when ctx ended first.
//
// client-go gives up a lease only when a whole round of renew retries
// fails, a renew deadline after the round began: a leader whose process
// was paused (SIGSTOP, a stalled host) past the lease duration, and whose
// lease another server took meanwhile, starts a new round on resume and
// keeps running its work, side by side with the new leader, for up to
// another renew deadline (10 s measured, TestTwoServersHandOverFromPausedLeader).
// Checked every watchLeasePeriod, the work stops at once instead.
func watchLease(ctx context.Context, le *leaderelection.LeaderElector, leaseDuration, renewDeadline time.Duration) bool {
	t := time.NewTicker(watchLeasePeriod)
	defer t.Stop()
	for {
		// Check errs when the last observation (a renewal, while leading)
		// is older than the lease duration plus its argument.
		if !le.IsLeader() || le.Check(renewDeadline-leaseDuration) != nil {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// watchLeasePeriod is how often watchLease looks.
const watchLeasePeriod = 250 * time.Millisecond

// leaseReleaseBudget bounds the release of a lease on stop: with the
// datastore unreachable the release fails after it, and the lease expires
// on its own (LeaseDuration) instead of holding up the stop.
const leaseReleaseBudget = time.Second

// releaseLease releases lock if identity still holds it, as client-go's
// ReleaseOnCancel does (an empty holder, a 1 s lease duration), bounded by
// ctx.
func releaseLease(ctx context.Context, lock resourcelock.Interface, identity string) error {
	rec, _, err := lock.Get(ctx)
	if err != nil {
		return err
	}
	if rec.HolderIdentity != identity {
		return nil // taken over meanwhile: not ours to release
	}
	now := metav1.NewTime(time.Now())
	return lock.Update(ctx, resourcelock.LeaderElectionRecord{
		LeaderTransitions:    rec.LeaderTransitions,
		LeaseDurationSeconds: 1,
		RenewTime:            now,
		AcquireTime:          now,
	})
}

// RecordEvents gives a lease lock an event recorder of its own, whose
// broadcaster the returned stop shuts down. Upstream's locks record through
// the component's own broadcaster, which upstream's Run shuts down when it
// returns; the adapters' elector releases the lease after Run returned
// (so that a successor never overlaps), and the "stopped leading" event
// would be dropped with an error. Its client, made from cfg, gives each
// event leaderEventTimeout: the broadcaster's sink writes with a context
// that never ends, and with the datastore gone a "stopped leading" event
// would hold a request in the apiserver — whose stop waits for it — until
// the apiserver's request timeout. Locks other than Lease locks are left
// as they are.
func RecordEvents(ctx context.Context, lock resourcelock.Interface, cfg *rest.Config, source string) (stop func()) {
	ll, ok := lock.(*resourcelock.LeaseLock)
	if !ok || cfg == nil {
		return func() {}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = leaderEventTimeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.FromContext(ctx).Error(err, "No client for the lease's events; they are not recorded", "lease", ll.Describe())
		return func() {}
	}
	b := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx))) // shut down by stop, not by ctx
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	ll.LockConfig.EventRecorder = b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: source})
	return b.Shutdown
}

// leaderEventTimeout bounds each request of RecordEvents' client.
const leaderEventTimeout = 2 * time.Second
