package components

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	kcmopts "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"

	"github.com/kubeharness/kubeharness/components/internal/election"
	"github.com/kubeharness/kubeharness/components/internal/fence"
	"github.com/kubeharness/kubeharness/components/internal/flags"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// ControllerManagerName is the component name of the
// kube-controller-manager adapter.
const ControllerManagerName = names.ControllerManager

// controllerShutdownTimeout is the adapter's default of
// --controller-shutdown-timeout (upstream: 10 s), how long upstream's Run
// waits for its controllers after the stop before it returns without them.
// In one process every second of it delays the apiserver's stop, and with
// the datastore gone a controller can be held up past the fence
// (package internal/fence): kube-controller-manager's per-controller credentials retry a
// failed token request for 3.5 s, sleeping, whatever its context says.
const controllerShutdownTimeout = 2 * time.Second

// kcmInformerName is the client-go informer name upstream's
// CreateControllerContext registers (process-wide; see Run).
const kcmInformerName = names.ControllerManager

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
	restConfig *rest.Config             // WithRESTConfig's; nil: --kubeconfig
	connect    func(*rest.Config) error // ConnectVia's
	built      func()                   // OnControllersBuilt's
}

// NewControllerManager returns a kube-controller-manager component.
func NewControllerManager() *ControllerManager {
	return &ControllerManager{lifecycle: newLifecycle(ControllerManagerName, election.New(ControllerManagerName))}
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

// ConnectVia makes the controller-manager pass its client configuration
// (from --kubeconfig or WithRESTConfig), once upstream built it and before
// any client is made from it, to fn, which may change how it connects —
// APIServer.InProcess — and returns m. An error of fn fails Run. Call it
// before m is added to a harness; nil undoes it. The controllers' clients
// with --use-service-account-credentials are derived without transport
// wrappers (rest.AnonymousClientConfig), as upstream derives them, and
// keep the network.
func (m *ControllerManager) ConnectVia(fn func(*rest.Config) error) *ControllerManager {
	m.connect = fn
	return m
}

// OnControllersBuilt has fn called each time this controller-manager (or
// a successor from Renew) has built its controllers — once per lease held,
// within 100 ms of upstream's last constructor returning — or, if it stops
// or loses its lease while building them, when its Run returns; and
// returns m. Upstream's constructors write process-wide
// state: the attach-detach, persistent-volume and expand controllers
// initialize the CSI volume plugin, replacing its node info manager, which
// a kubelet in the same process needs (kubelet.Kubelet.ReclaimCSI). fn must
// not block. Call it before the harness runs m; nil undoes it.
func (m *ControllerManager) OnControllersBuilt(fn func()) *ControllerManager {
	m.built = fn
	return m
}

// Name returns "kube-controller-manager".
func (m *ControllerManager) Name() string { return ControllerManagerName }

// Renew returns a new, unstarted kube-controller-manager with the same
// rest.Config, ConnectVia and OnControllersBuilt, if given, and the same leader-election identity
// (see Run), for harness.Restart and Harness.Recover.
func (m *ControllerManager) Renew() harness.Component {
	n := NewControllerManager().WithRESTConfig(m.restConfig).ConnectVia(m.connect).OnControllersBuilt(m.built)
	n.elector = m.elector.Successor()
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
	flags.AddSets(s, m.nfs)
	if m.restConfig != nil {
		for _, name := range []string{"kubeconfig", "master"} {
			flags.Refuse(s.FlagSet(), name, "--"+name+" is not used: this controller-manager was given its client configuration in memory (ControllerManager.WithRESTConfig)")
		}
	}
	return nil
}

// LeaderElection returns the leader-election configuration the user gave
// (zero before Run got that far).
func (m *ControllerManager) LeaderElection() LeaderElection { return m.elector.Settings() }

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
// docs/components.md, "Informer names").
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
	_, release, err := m.takeInformerName(" (another controller-manager runs in this process, or something else registered the informer name " + strconv.Quote(kcmInformerName) + " upstream's CreateControllerContext needs: one at a time)")
	if err != nil {
		return err
	}
	release()       // upstream registers its own
	defer release() // and this removes it again, once upstream's Run returned

	le := election.From(m.opts.Generic.LeaderElection)
	if f := m.nfs.FlagSet("generic").Lookup("enable-leader-migration"); le.Enabled && f != nil && f.Value.String() == "true" {
		return errors.New("kube-controller-manager: --enable-leader-migration is not supported in a single binary (the adapter runs leader election itself)")
	}
	m.opts.Generic.LeaderElection.LeaderElect = false

	// Its requests are held until the apiserver is ready (it starts early:
	// StartsEarly), so that Config's own work overlaps the apiserver's start.
	apiServerUp := dependenciesReady(ctx)
	clients, unfence := m.clientFence(ctx, apiServerUp, m.opts.Authentication, m.opts.Authorization)
	defer unfence()
	c, leaseConfig, err := m.config(ctx, clients)
	// The lease, and so upstream's Run, only once the apiserver is ready,
	// whatever Config read (--authentication-skip-lookup reads nothing).
	if proceed, err := awaitAPIServer(ctx, apiServerUp, err, func() { closeUnserved(c) }); !proceed {
		return err
	}
	cc := c.Complete()
	return m.runElected(ctx, upstreamRun{
		run: func(ctx context.Context) error {
			// Once the lease is lost, each request of the controllers
			// gets stopGrace (package internal/fence), so that a worker
			// blocked on an apiserver without its datastore lets
			// upstream's Run return — but only once upstream has built
			// its controllers: two of its constructors exit the process
			// when a request fails (docs/components.md, "Stopping, or
			// losing a lease, with the datastore gone"). Until then a
			// lost lease lets the build's requests wait for the datastore
			// (at most the apiserver's request timeout, as upstream); a
			// stop (clientFence's StopWhen) does not wait: a request of
			// the build it ends parks (fence.Park), and Run returns
			// without upstream's, whose goroutine stays blocked there
			// until the process exits. With the datastore answering, the
			// build's requests answer within the grace and upstream's Run
			// returns as usual.
			var built probe.Readiness
			clients.Park(built.Done()) // Config's requests, before, fail at the stop
			afterBuild := m.afterBuild()
			stopBuilt := built.MarkWhen(context.WithoutCancel(ctx), func(ctx context.Context) error {
				if err := waitControllersBuilt(ctx, cc.SecureServing, kcmapp.KnownControllers()); err != nil {
					return err
				}
				afterBuild()
				return nil
			})
			defer stopBuilt()
			defer afterBuild() // a build cut short may have run some constructors
			defer clients.StopAfter(ctx, ControllerManagerName, built.Done())()
			returned := make(chan error, 1)
			go func() { returned <- kcmapp.Run(ctx, cc) }()
			select {
			case err := <-returned:
				return err
			case <-clients.Parked():
				klog.FromContext(ctx).Info("Stopped while building its controllers, a request of the build unanswered: upstream's build is left blocked on it until the process exits (two of its constructors exit the process when a request fails)")
				return nil
			}
		},
		// /healthz answers ok (over TLS, pinned to its serving certificate)
		// and lists the controllers' checks: upstream serves /healthz
		// before it builds its controllers, and a controller-manager
		// stopped while it builds them leaves the work queues of those not
		// started yet. With no secure port: as soon as it runs.
		ready: func(ctx context.Context) error {
			if err := probe.WaitHealthz(ctx, cc.SecureServing); err != nil {
				return err
			}
			return waitControllersBuilt(ctx, cc.SecureServing, kcmapp.KnownControllers())
		},
		configz:     kcmapp.ConfigzName,
		election:    le,
		kubeconfig:  leaseConfig,
		events:      leaseConfig,
		eventSource: kcmopts.KubeControllerManagerUserAgent,
		// Config bound the secure port and started an event broadcaster;
		// both are upstream's Run's to close once it was called (it serves
		// the port until its context ends and shuts the broadcaster down).
		unserved: func() { closeUnserved(c) },
		stopMessages: []upstreamMessage{{
			text: upstreamKCMShutdownTimeout,
			// Upstream logged which ("Controller shutdown timeout
			// reached" runningControllers=[…]); their requests fail from
			// now on (the fence), so they return soon.
			note: func(logger klog.Logger) {
				logger.Info("Controllers still running at --controller-shutdown-timeout are left to return on their own", "timeout", cc.ControllerShutdownTimeout)
			},
		}},
		failMessages: []upstreamMessage{{text: upstreamKCMAPIServerUnhealthy, cause: ErrAPIServerUnhealthy}},
	})
}

// afterBuild is OnControllersBuilt's fn, called at most once per call of
// afterBuild.
func (m *ControllerManager) afterBuild() func() {
	var once sync.Once
	return func() {
		if m.built != nil {
			once.Do(m.built)
		}
	}
}

// config is upstream's options.Config, with the client connection made from
// the rest.Config WithRESTConfig gave, if any, and fenced (clients). Upstream
// builds its client configuration from --master and --kubeconfig in Config
// (with clientcmd.BuildConfigFromFlags); with a rest.Config, the adapter
// gives it --master = the rest.Config's host and no kubeconfig, so that it
// reads no file and tries no in-cluster configuration, and takes the
// configuration from the rest.Config, with the client-connection settings
// upstream applied copied over. Either way it then replaces the
// configuration and the client upstream built (Config.Kubeconfig,
// Config.Client: the only two app.Run builds every other client from) with
// fenced ones, Config.Client with a burst that covers the controllers'
// service-account bootstrap (withBootstrapBurst). It also returns an
// unfenced copy for the lease, whose
// release after the stop the elector bounds itself.
func (m *ControllerManager) config(ctx context.Context, clients *fence.Fence) (*kcmconfig.Config, *rest.Config, error) {
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
	if m.connect != nil {
		if err := m.connect(kubeconfig); err != nil {
			closeUnserved(c)
			return nil, nil, fmt.Errorf("kube-controller-manager: connecting its client configuration: %w", err)
		}
	}
	leaseConfig := rest.CopyConfig(kubeconfig)
	clients.Wrap(kubeconfig)
	client, err := clientset.NewForConfig(withBootstrapBurst(kubeconfig, len(kcmapp.KnownControllers())))
	if err != nil {
		closeUnserved(c)
		return nil, nil, fmt.Errorf("kube-controller-manager: a client for its configuration: %w", err)
	}
	c.Kubeconfig, c.Client = kubeconfig, client
	return c, leaseConfig, nil
}

// saBootstrapRequests is how many requests Config.Client makes per
// controller while upstream builds them with service-account credentials
// (clientbuilder's DynamicControllerClientBuilder): get the ServiceAccount,
// get its namespace, create it; then, for its first token, get it again
// and create a TokenRequest.
const saBootstrapRequests = 5

// withBootstrapBurst is a copy of cfg for Config.Client, whose burst also
// covers the service-account bootstrap of controllers controllers at once:
// upstream makes those requests one after another through Config.Client
// while it builds the controllers, so with the default burst (30) and QPS
// (20) the build waits about 50 ms a request, seconds in all. The QPS
// stays: later requests (token renewals, the controller-manager's own
// events) keep the configured rate. cfg, from which every controller's
// own client is made, is not changed. With no rate limit (QPS ≤ 0) or a
// RateLimiter of its own, the copy is cfg's.
func withBootstrapBurst(cfg *rest.Config, controllers int) *rest.Config {
	out := rest.CopyConfig(cfg)
	if out.QPS > 0 && out.RateLimiter == nil {
		out.Burst += saBootstrapRequests * controllers
	}
	return out
}

// closeUnserved closes the secure port and the event broadcaster Config
// made, for when upstream's Run, which owns them once called, is not called.
func closeUnserved(c *kcmconfig.Config) {
	closeUnusedListener(c.SecureServing)
	if c.EventBroadcaster != nil {
		c.EventBroadcaster.Shutdown()
	}
}

// StartsEarly is harness.EarlyStarter's: the controller-manager starts
// while kube-apiserver is still coming up; its requests wait until the
// apiserver is ready, so that only its own work overlaps the apiserver's
// start (the serving certificate it makes itself, its options).
func (m *ControllerManager) StartsEarly(dependency string) bool { return startsEarly(dependency) }

// Ready blocks until the controller-manager leads (or runs without leader
// election), its /healthz answers ok and it has built its controllers; or
// until it is a standby — another
// instance holds the lease — which counts as ready too.
func (m *ControllerManager) Ready(ctx context.Context) error { return m.lifecycle.Ready(ctx) }

// waitControllersBuilt waits until kube-controller-manager has built its
// controllers: upstream's BuildControllers registers a /healthz check per
// controller it built, all at once after the last one, so the first
// verbose /healthz that lists a check named after one of known (upstream's
// KnownControllers) says the building is over. It polls every 100 ms until
// then (nil) or until ctx ends (its error). With no secure serving there
// is nothing to ask, and nothing to wait for: nil at once, as
// probe.WaitHealthz.
func waitControllersBuilt(ctx context.Context, serving *genericapiserver.SecureServingInfo, known []string) error {
	if serving == nil {
		return nil
	}
	checks := make(map[string]bool, len(known))
	for _, n := range known {
		checks[n] = true
	}
	p := probe.New(serving)
	return probe.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		_, body, err := p.Fetch(ctx, "/healthz?verbose", 1<<16)
		if err == nil && !listsCheck(string(body), checks) {
			err = errors.New("/healthz lists no controller yet")
		}
		return err
	})
}
