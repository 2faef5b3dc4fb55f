package components

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	kcmopts "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// ControllerManagerName is the component name of the
// kube-controller-manager adapter.
const ControllerManagerName = "kube-controller-manager"

// controllerShutdownTimeout is the adapter's default of
// --controller-shutdown-timeout (upstream: 10 s), how long upstream's Run
// waits for its controllers after the stop before it returns without them.
// In one process every second of it delays the apiserver's stop, and with
// the datastore gone a controller can be held up past the fence
// (fence.go): kube-controller-manager's per-controller credentials retry a
// failed token request for 3.5 s, sleeping, whatever its context says.
const controllerShutdownTimeout = 2 * time.Second

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
// run by the adapter (see Run). Its client connection is --kubeconfig (or
// --master), or a *rest.Config given with WithRESTConfig.
type ControllerManager struct {
	*lifecycle // ready: /healthz ok while leading
	opts       *kcmopts.KubeControllerManagerOptions
	nfs        cliflag.NamedFlagSets
	restConfig *rest.Config // WithRESTConfig's; nil: --kubeconfig
}

// NewControllerManager returns a kube-controller-manager component.
func NewControllerManager() *ControllerManager {
	return &ControllerManager{lifecycle: newLifecycle(ControllerManagerName, newElector(ControllerManagerName))}
}

// WithRESTConfig makes the controller-manager connect to the apiserver with
// a copy of cfg instead of a kubeconfig file, and returns m. Call it before
// m is added to a harness; nil undoes it.
//
// Every client of the controller-manager is made from it, as upstream makes
// them from the configuration it loads from --kubeconfig: its own, its
// informers', the leader-election lock's, and the controllers' (each with
// its own user agent). As upstream does with a kubeconfig's, cfg's QPS,
// Burst, content types, compression and user agent are replaced by
// --kube-api-qps, --kube-api-burst, --kube-api-content-type, no compression
// and upstream's user agents; everything else — host, TLS, credentials, and
// what a kubeconfig file cannot hold (Dial, WrapTransport, Transport,
// Proxy) — is kept. With --use-service-account-credentials, the
// controllers' clients use service-account tokens and keep only what
// client-go's AnonymousClientConfig keeps of cfg (host, CA, Dial, Proxy;
// not WrapTransport or Transport), as upstream.
//
// --kubeconfig and --master are then refused at parse time: they would name
// a second connection. --authentication-kubeconfig and
// --authorization-kubeconfig stay files (or absent): they are the secure
// port's delegated authentication and authorization, which upstream builds
// from a file or the in-cluster configuration only. Without them the port
// authenticates no tokens (client certificates only with --client-ca-file)
// and allows only its always-allowed paths (/healthz, /readyz, /livez) and
// system:masters.
func (m *ControllerManager) WithRESTConfig(cfg *rest.Config) *ControllerManager {
	m.restConfig = nil
	if cfg != nil {
		m.restConfig = rest.CopyConfig(cfg)
	}
	return m
}

// Name returns "kube-controller-manager".
func (m *ControllerManager) Name() string { return ControllerManagerName }

// Renew returns a new, unstarted kube-controller-manager with the same
// rest.Config, if one was given, and the same leader-election identity
// (see Run), for harness.Restart and Harness.Recover.
func (m *ControllerManager) Renew() harness.Component {
	n := NewControllerManager().WithRESTConfig(m.restConfig)
	n.elector = m.elector.successor()
	return n
}

// AddFlags creates upstream's options with the scope's registry and adds
// every upstream flag set to the scope's flag set. One default differs
// from upstream's: --controller-shutdown-timeout is 2s (upstream 10s; see
// controllerShutdownTimeout). It has no other effect.
func (m *ControllerManager) AddFlags(s *scoping.Scope) error {
	opts, err := kcmopts.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	opts.ComponentGlobalsRegistry = s.Registry()
	opts.ControllerShutdownTimeout = controllerShutdownTimeout // the flag's default, before the flag is made
	m.nfs = opts.Flags(kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases())
	opts.ParsedFlags = &m.nfs
	m.opts = opts
	addFlagSets(s, m.nfs)
	if m.restConfig != nil {
		for _, name := range []string{"kubeconfig", "master"} {
			refuseFlag(s.FlagSet(), name, "--"+name+" is not used: this controller-manager was given its client configuration in memory (ControllerManager.WithRESTConfig)")
		}
	}
	return nil
}

// LeaderElection returns the leader-election configuration the user gave
// (zero before Run got that far).
func (m *ControllerManager) LeaderElection() LeaderElection { return m.elector.getSettings() }

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
// elector with those settings, a hostname_uuid identity (as upstream; an
// instance made by Renew keeps its predecessor's),
// leader-election events recorded as "kube-controller-manager", and
// the lease released on stop within a second (whatever the
// ControllerManagerReleaseLeaderElectionLockOnExit gate says). A lost lease
// stops only this component: Run returns an error wrapping ErrLeaseLost.
// So does an apiserver found unhealthy for upstream's 10 s once leading
// (before any controller is built): an error wrapping ErrAPIServerUnhealthy,
// which RecoverLostLease keeps too.
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
func (m *ControllerManager) Run(ctx context.Context) error {
	return m.run(ctx, m.opts != nil, m.configAndRun)
}

// configAndRun is Run's upstream wiring.
func (m *ControllerManager) configAndRun(ctx context.Context) error {
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

	le := leaderElectionFrom(m.opts.Generic.LeaderElection)
	if f := m.nfs.FlagSet("generic").Lookup("enable-leader-migration"); le.Enabled && f != nil && f.Value.String() == "true" {
		return errors.New("kube-controller-manager: --enable-leader-migration is not supported in a single binary (the adapter runs leader election itself)")
	}
	m.opts.Generic.LeaderElection.LeaderElect = false

	fence := newRequestFence(stopGrace, false)
	defer fence.markStopped(ControllerManagerName, "returned")
	defer fence.stopWhen(ctx, ControllerManagerName)()
	fence.wrapDelegatedAuth(m.opts.Authentication, m.opts.Authorization)
	c, leaseConfig, err := m.config(ctx, fence)
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
		if !ran {
			closeUnserved(c)
		}
	}()

	var lease *leaderelection.LeaderElectionConfig
	if le.Enabled {
		if lease, err = le.lease(ControllerManagerName, leaseConfig); err != nil {
			return err
		}
	}
	m.elector.setSettings(le)
	ran, err = m.runElected(ctx, lease, upstreamRun{
		run: func(ctx context.Context) error {
			// Once the lease is lost, each request of the controllers
			// gets stopGrace (fence.go), so that a worker blocked on an
			// apiserver without its datastore lets upstream's Run return
			// — but only once upstream has built its controllers: two of
			// its constructors exit the process when a request fails
			// (package documentation, "Stopping, or losing a lease, with
			// the datastore gone"). Until then a lost lease lets the
			// build's requests wait for the datastore (at most the
			// apiserver's request timeout, as upstream); a stop (the
			// fence's other stopWhen, above) does not wait.
			built := make(chan struct{})
			probeCtx, stopProbe := context.WithCancel(context.WithoutCancel(ctx))
			var probing sync.WaitGroup
			probing.Go(func() {
				if waitControllersBuilt(probeCtx, cc.SecureServing, kcmapp.KnownControllers()) == nil {
					close(built)
				}
			})
			defer func() { stopProbe(); probing.Wait() }()
			defer fence.stopAfter(ctx, ControllerManagerName, built)()
			err := kcmapp.Run(ctx, cc)
			if ctx.Err() != nil && err != nil && strings.Contains(err.Error(), upstreamKCMShutdownTimeout) {
				// Upstream logged which ("Controller shutdown timeout
				// reached" runningControllers=[…]); their requests fail
				// from now on (the fence), so they return soon.
				klog.FromContext(ctx).Info("Controllers still running at --controller-shutdown-timeout are left to return on their own", "timeout", cc.ControllerShutdownTimeout)
				return nil
			}
			if ctx.Err() == nil && err != nil && strings.Contains(err.Error(), upstreamKCMAPIServerUnhealthy) {
				return fmt.Errorf("kube-controller-manager: %w: %w", ErrAPIServerUnhealthy, err)
			}
			return err
		},
		// /healthz answers ok (over TLS, pinned to its serving certificate)
		// or, with no secure port, as soon as it runs.
		ready:       func(ctx context.Context) error { return waitHealthz(ctx, cc.SecureServing) },
		configz:     kcmapp.ConfigzName,
		events:      leaseConfig,
		eventSource: kcmopts.KubeControllerManagerUserAgent,
	})
	return err
}

// config is upstream's options.Config, with the client connection made from
// the rest.Config WithRESTConfig gave, if any, and fenced (fence). Upstream
// builds its client configuration from --master and --kubeconfig in Config
// (with clientcmd.BuildConfigFromFlags); with a rest.Config, the adapter
// gives it --master = the rest.Config's host and no kubeconfig, so that it
// reads no file and tries no in-cluster configuration, and takes the
// configuration from the rest.Config, with the client-connection settings
// upstream applied copied over. Either way it then replaces the
// configuration and the client upstream built (Config.Kubeconfig,
// Config.Client: the only two app.Run builds every other client from) with
// fenced ones. It also returns an unfenced copy for the lease, whose
// release after the stop the elector bounds itself.
func (m *ControllerManager) config(ctx context.Context, fence *requestFence) (*kcmconfig.Config, *rest.Config, error) {
	if m.restConfig != nil {
		if m.restConfig.Host == "" {
			return nil, nil, errors.New("kube-controller-manager: the rest.Config given with WithRESTConfig has no Host")
		}
		m.opts.Master = m.restConfig.Host
	}
	c, err := m.opts.Config(ctx, kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases())
	if err != nil {
		return c, nil, err
	}
	kubeconfig := rest.CopyConfig(c.Kubeconfig)
	if m.restConfig != nil {
		kubeconfig = rest.CopyConfig(m.restConfig)
		kubeconfig.DisableCompression = c.Kubeconfig.DisableCompression
		kubeconfig.AcceptContentTypes = c.Kubeconfig.AcceptContentTypes
		kubeconfig.ContentType = c.Kubeconfig.ContentType
		kubeconfig.QPS = c.Kubeconfig.QPS
		kubeconfig.Burst = c.Kubeconfig.Burst
	}
	// As upstream: the user agent is set on the configuration too, and
	// every controller's client replaces it with its own.
	rest.AddUserAgent(kubeconfig, kcmopts.KubeControllerManagerUserAgent)
	leaseConfig := rest.CopyConfig(kubeconfig)
	fence.wrap(kubeconfig)
	client, err := clientset.NewForConfig(kubeconfig)
	if err != nil {
		closeUnserved(c)
		return nil, nil, fmt.Errorf("kube-controller-manager: a client for its configuration: %w", err)
	}
	c.Kubeconfig, c.Client = kubeconfig, client
	return c, leaseConfig, nil
}

// closeUnserved closes the secure port and the event broadcaster Config
// made, for when upstream's Run, which owns them once called, is not called.
func closeUnserved(c *kcmconfig.Config) {
	if c.SecureServing != nil && c.SecureServing.Listener != nil {
		_ = c.SecureServing.Listener.Close()
	}
	if c.EventBroadcaster != nil {
		c.EventBroadcaster.Shutdown()
	}
}

// Ready blocks until the controller-manager leads (or runs without leader
// election) and its /healthz answers ok; or until it is a standby — another
// instance holds the lease — which counts as ready too.
func (m *ControllerManager) Ready(ctx context.Context) error { return m.lifecycle.Ready(ctx) }
