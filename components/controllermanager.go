package components

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/util/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmopts "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// ControllerManagerName is the component name of the
// kube-controller-manager adapter.
const ControllerManagerName = "kube-controller-manager"

// kcmInformerName is the client-go informer name upstream's
// CreateControllerContext registers (process-wide; see Run).
const kcmInformerName = "kube-controller-manager"

// ControllerManager runs the real kube-controller-manager of
// k8s.io/kubernetes as a harness component. It takes exactly
// kube-controller-manager's flags. Create it with NewControllerManager; a
// value runs once, and only one runs at a time per process (see Run).
//
// It uses options.NewKubeControllerManagerOptions with the scope's registry,
// Flags(KnownControllers(), ControllersDisabledByDefault(),
// ControllerAliases()), Config and app.Run under the harness's context, never
// NewControllerManagerCommand. Leader election, if the user enabled it, is
// run by the adapter (see Run).
type ControllerManager struct {
	opts    *kcmopts.KubeControllerManagerOptions
	nfs     cliflag.NamedFlagSets
	elector *elector

	ready     chan struct{}
	exited    chan struct{}
	readyOnce sync.Once

	mu         sync.Mutex
	runErr     error
	leaderElec LeaderElection
}

// NewControllerManager returns a kube-controller-manager component.
func NewControllerManager() *ControllerManager {
	return &ControllerManager{
		elector: newElector(ControllerManagerName),
		ready:   make(chan struct{}),
		exited:  make(chan struct{}),
	}
}

// Name returns "kube-controller-manager".
func (m *ControllerManager) Name() string { return ControllerManagerName }

// Renew returns a new, unstarted kube-controller-manager, for harness.Restart.
func (m *ControllerManager) Renew() harness.Component { return NewControllerManager() }

// AddFlags creates upstream's options with the scope's registry and adds
// every upstream flag set to the scope's flag set. It has no other effect.
func (m *ControllerManager) AddFlags(s *scoping.Scope) error {
	opts, err := kcmopts.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	opts.ComponentGlobalsRegistry = s.Registry()
	m.nfs = opts.Flags(kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases())
	opts.ParsedFlags = &m.nfs
	m.opts = opts
	addFlagSets(s, m.nfs)
	return nil
}

// LeaderElection returns the leader-election configuration the user gave
// (zero before Run got that far).
func (m *ControllerManager) LeaderElection() LeaderElection {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leaderElec
}

// Run builds the controller-manager's configuration (options.Config) and
// runs it (app.Run) until ctx is cancelled, then returns nil once every
// controller returned.
//
// Leader election: Run copies the parsed --leader-elect and
// --leader-elect-{lease-duration,renew-deadline,retry-period,resource-lock,
// resource-namespace,resource-name} from the options
// (Generic.LeaderElection), then sets Generic.LeaderElection.LeaderElect =
// false before Config, so upstream's Run takes its path without an elector.
// If the user enabled it, Run then runs app.Run inside its own client-go
// elector with those settings, a hostname_uuid identity (as upstream),
// leader-election events recorded as "kube-controller-manager", and
// ReleaseOnCancel (whatever the
// ControllerManagerReleaseLeaderElectionLockOnExit gate says). A lost lease
// stops only this component: Run returns an error wrapping ErrLeaseLost.
// Differences from upstream: a standby serves no /healthz (the port is
// bound by Config but served only while leading); the elector's watchdog is
// not among /healthz's checks; leader migration
// (--enable-leader-migration) and coordinated leader election are refused
// or not supported.
//
// Upstream registers the client-go informer name "kube-controller-manager"
// process-wide and releases it only on the paths on which every controller
// was built. Run removes that registration when upstream's Run returned,
// whichever way, so that the process can start a controller-manager again
// after this one stopped or failed; two at the same time are refused (see
// the package documentation, "Informer names").
//
// Config binds the secure port and starts an event broadcaster before
// leader election is set up; Run closes both on every path on which
// upstream's Run, which owns them once called, was not called.
func (m *ControllerManager) Run(ctx context.Context) (err error) {
	defer func() {
		m.mu.Lock()
		m.runErr = err
		m.mu.Unlock()
		close(m.exited)
	}()
	if m.opts == nil {
		return errors.New("kube-controller-manager: Run before AddFlags")
	}
	if ctx.Err() != nil {
		return nil // stopped before it started
	}
	logger := klog.FromContext(ctx).WithValues("component", ControllerManagerName)
	ctx = klog.NewContext(ctx, logger)

	// Upstream's CreateControllerContext registers the process-wide informer
	// name "kube-controller-manager"; the informer factory's Shutdown
	// releases it, but upstream defers that only once every controller was
	// built, so the name stays registered when CreateControllerContext
	// fails after registering it (the apiserver not healthy within 10 s)
	// or a controller fails to build. The adapter lets one
	// controller-manager run at a time, checks that the name is free, and
	// keeps an InformerName of that name, released at once so that
	// upstream can register its own; releasing it again after upstream's
	// Run returned removes upstream's registration if it is still there
	// (client-go's Release deletes the registry entry by name), so that a
	// later controller-manager in this process can start. A second
	// controller-manager while one runs finds the name taken (client-go's
	// registry is the process-wide record; the adapter keeps none of its own).
	informerName, err := cache.NewInformerName(kcmInformerName)
	if err != nil {
		return fmt.Errorf("kube-controller-manager: %w (another controller-manager runs in this process, or something else registered the informer name "+strconv.Quote(kcmInformerName)+" upstream's CreateControllerContext needs: one at a time)", err)
	}
	informerName.Release()       // upstream registers its own
	defer informerName.Release() // and this removes it again, once upstream's Run returned

	le := LeaderElection{
		Enabled:           m.opts.Generic.LeaderElection.LeaderElect,
		LeaseDuration:     m.opts.Generic.LeaderElection.LeaseDuration.Duration,
		RenewDeadline:     m.opts.Generic.LeaderElection.RenewDeadline.Duration,
		RetryPeriod:       m.opts.Generic.LeaderElection.RetryPeriod.Duration,
		ResourceLock:      m.opts.Generic.LeaderElection.ResourceLock,
		ResourceNamespace: m.opts.Generic.LeaderElection.ResourceNamespace,
		ResourceName:      m.opts.Generic.LeaderElection.ResourceName,
	}
	if f := m.nfs.FlagSet("generic").Lookup("enable-leader-migration"); le.Enabled && f != nil && f.Value.String() == "true" {
		return errors.New("kube-controller-manager: --enable-leader-migration is not supported in a single binary (the adapter runs leader election itself)")
	}
	m.opts.Generic.LeaderElection.LeaderElect = false

	c, err := m.opts.Config(ctx, kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases())
	if err != nil {
		return err
	}
	cc := c.Complete()
	// Config bound the secure port and started an event broadcaster; both
	// are upstream's Run's to close once it was called (it serves the port
	// until its context ends and shuts the broadcaster down). On every
	// path that does not get there — a leader-election setup error, a
	// standby that never led, a stop before the lease — they are closed
	// here.
	var ran bool
	defer func() {
		if ran {
			return
		}
		if cc.SecureServing != nil && cc.SecureServing.Listener != nil {
			_ = cc.SecureServing.Listener.Close()
		}
		if cc.EventBroadcaster != nil {
			cc.EventBroadcaster.Shutdown()
		}
	}()

	var leCfg *leaderelection.LeaderElectionConfig
	if le.Enabled {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("kube-controller-manager: leader election identity: %w", err)
		}
		le.Identity = host + "_" + string(uuid.NewUUID())
		lock, err := resourcelock.NewFromKubeconfig(le.ResourceLock, le.ResourceNamespace, le.ResourceName,
			resourcelock.ResourceLockConfig{Identity: le.Identity},
			c.Kubeconfig, le.RenewDeadline)
		if err != nil {
			return fmt.Errorf("kube-controller-manager: leader election lock: %w", err)
		}
		leCfg = &leaderelection.LeaderElectionConfig{
			Lock:          lock,
			LeaseDuration: le.LeaseDuration,
			RenewDeadline: le.RenewDeadline,
			RetryPeriod:   le.RetryPeriod,
			Name:          le.ResourceName,
		}
	}
	m.mu.Lock()
	m.leaderElec = le
	m.mu.Unlock()

	work := func(wctx context.Context) error {
		ran = true
		defer configz.Delete(kcmapp.ConfigzName) // upstream's Run registers it and never deletes it
		watchCtx, stopWatch := context.WithCancel(wctx)
		defer stopWatch()
		go m.watchReady(watchCtx, cc.SecureServing)
		err := kcmapp.Run(wctx, cc)
		if err == nil && wctx.Err() == nil {
			err = errors.New("kube-controller-manager: Run returned before it was asked to stop")
		}
		return err
	}
	if leCfg == nil {
		err = work(ctx)
	} else {
		stopEvents := recordLeaderEvents(ctx, leCfg.Lock, c.Client, kcmopts.KubeControllerManagerUserAgent)
		err = m.elector.run(ctx, *leCfg, work)
		stopEvents()
	}
	return err
}

// watchReady closes m.ready once the controller-manager's /healthz answers
// ok (over TLS, pinned to its serving certificate) or, with no secure
// port, as soon as it runs.
func (m *ControllerManager) watchReady(ctx context.Context, serving *genericapiserver.SecureServingInfo) {
	if serving != nil {
		if err := newServingProbe(serving).waitOK(ctx, "/healthz"); err != nil {
			return
		}
	}
	m.readyOnce.Do(func() { close(m.ready) })
}

// Ready blocks until the controller-manager leads (or runs without leader
// election) and its /healthz answers ok; or until it is a standby — another
// instance holds the lease — which counts as ready too.
func (m *ControllerManager) Ready(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-m.elector.standby:
		return nil
	case <-m.exited:
		m.mu.Lock()
		defer m.mu.Unlock()
		return fmt.Errorf("kube-controller-manager exited before it was ready: %w", m.runErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}
