package components

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	kasapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kasopts "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
	"k8s.io/kubernetes/pkg/capabilities"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/internal/fence"
	"github.com/kubeharness/kubeharness/components/internal/flags"
	"github.com/kubeharness/kubeharness/components/internal/guard"
	"github.com/kubeharness/kubeharness/components/internal/inproc"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// APIServerName is the component name of the kube-apiserver adapter.
const APIServerName = names.APIServer

// APIServer runs the real kube-apiserver of k8s.io/kubernetes as a harness
// component. It takes exactly kube-apiserver's flags. Create it with
// NewAPIServer; a value runs once.
//
// It is built the way upstream's own test server builds one, not with
// NewAPIServerCommand (which installs a process-wide signal handler when it is
// constructed): options.NewServerRunOptions with the scope's registry,
// Complete, Validate, NewConfig, Complete, CreateServerChain, PrepareRun and
// Run under the harness's context.
type APIServer struct {
	*lifecycle // ready: /readyz answered 200 for the first time
	opts       *kasopts.ServerRunOptions

	loopback *rest.Config // guarded by mu

	afterEtcdReady bool // WaitForEtcd

	inProcess *inproc.Server // InProcess's: the server while Run serves; shared with Renew's
}

// NewAPIServer returns a kube-apiserver component.
func NewAPIServer() *APIServer {
	return &APIServer{lifecycle: newLifecycle(APIServerName, nil), inProcess: &inproc.Server{Name: APIServerName}}
}

// Name returns "kube-apiserver".
func (a *APIServer) Name() string { return APIServerName }

// Renew returns a new, unstarted kube-apiserver, for harness.Restart.
func (a *APIServer) Renew() harness.Component {
	n := NewAPIServer()
	n.afterEtcdReady = a.afterEtcdReady
	n.inProcess = a.inProcess
	return n
}

// InProcess makes the requests of clients made from cfg from now on go to
// the apiserver of this process without a connection (no TLS, no HTTP/2,
// no socket), while Run serves — this APIServer's, or its Renew's after a
// restart; before that, and once it stopped, they fail with
// *inproc.NotServingError. The apiserver still authenticates and
// authorizes each request as the client's: cfg's client certificate
// (CertData or CertFile, read now) is the request's TLS peer certificate,
// its other credentials are headers as before. Upgrades (exec, attach,
// port-forward) and clients derived without cfg's transport wrappers
// (rest.AnonymousClientConfig) go over the network with cfg's TLS
// settings. cfg.Host must be this apiserver's.
func (a *APIServer) InProcess(cfg *rest.Config) error { return inproc.Wrap(cfg, a.inProcess) }

// WaitForEtcd makes kube-apiserver start only once embedded etcd is ready,
// not early (StartsEarly): for an etcd member that joins a cluster, which
// serves only once it is promoted, minutes later at worst, past the time
// upstream's storage clients wait for etcd. Call it before the harness
// runs.
func (a *APIServer) WaitForEtcd() { a.afterEtcdReady = true }

// StartsEarly is harness.EarlyStarter's: kube-apiserver starts while
// embedded etcd (etcd.Name) is still coming up, as the upstream binary does
// next to an etcd started at the same time: it builds its configuration,
// admission and storage while etcd elects itself, and its storage clients
// retry until etcd answers. Its readiness still waits for etcd's.
func (a *APIServer) StartsEarly(dependency string) bool {
	return dependency == etcd.Name && !a.afterEtcdReady
}

// AddFlags creates upstream's options with the scope's registry (so that
// --feature-gates, --emulated-version and --min-compatibility-version bind to
// the scope, not to the process) and adds every upstream flag set to the
// scope's flag set. It has no other effect.
func (a *APIServer) AddFlags(s *scoping.Scope) error {
	a.opts = kasopts.NewServerRunOptions()
	a.opts.GenericServerRunOptions.ComponentGlobalsRegistry = s.Registry()
	nfs := a.opts.Flags()
	a.opts.Flagz = flagz.NamedFlagSetsReader{FlagSets: nfs}
	flags.AddSets(s, nfs)
	return nil
}

// Run completes and validates the options, builds the server chain and
// serves until ctx is cancelled; then it shuts the server down gracefully
// (upstream's shutdown sequence) and returns nil.
//
// If ctx is cancelled before the server was ready once, Run first waits for
// readiness (or for the server to fail): upstream's post-start hooks call
// klog.Fatalf — exiting the process — when their context is cancelled while
// they still wait (crd-informer-synced, priority-and-fairness-config-producer,
// start-service-ip-repair-controllers, among others). A server that never
// becomes ready therefore never returns from Run, and the harness reports a
// stop deadline instead of the process exiting. If ctx is already cancelled
// when Run is called, Run returns nil at once.
func (a *APIServer) Run(ctx context.Context) error {
	return a.run(ctx, a.opts != nil, a.serve)
}

// serve is Run's upstream wiring.
func (a *APIServer) serve(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// What upstream's app.Run would otherwise do without release.
	informerName, release, err := a.takeInformerName("")
	if err != nil {
		return err
	}
	defer release()
	setAPIServerInformerName(a.opts, informerName)

	completed, err := a.opts.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completed.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	applyCapabilities(completed.AllowPrivileged, completed.MaxConnectionBytesPerSec)
	cfg, err := kasapp.NewConfig(completed) // binds the secure port
	if err != nil {
		return err
	}
	loopbackFence := fence.New(stopGrace, true)
	defer loopbackFence.MarkStopped(APIServerName, "returned")
	loopbackFence.Wrap(cfg.KubeAPIs.ControlPlane.Generic.LoopbackClientConfig)
	// The loopback clients made from here on (the post-start hooks', the
	// readiness probe's) are served in process; those NewConfig made keep
	// their connections.
	if err := a.InProcess(cfg.KubeAPIs.ControlPlane.Generic.LoopbackClientConfig); err != nil {
		closeUnusedListener(cfg.KubeAPIs.ControlPlane.Generic.SecureServing)
		return err
	}
	inFlight := fence.New(servedGrace, false)
	defer inFlight.MarkStopped(APIServerName, "returned")
	if agg := cfg.Aggregator; agg != nil && agg.GenericConfig != nil { // the server chain's outermost: it serves every request
		build := agg.GenericConfig.BuildHandlerChainFunc
		agg.GenericConfig.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
			return build(inFlight.Handler(apiHandler), c)
		}
	}
	// The reconcilers' etcd calls, guarded (package internal/guard).
	var guards []*guard.Guard
	if r := cfg.KubeAPIs.ControlPlane.PeerEndpointLeaseReconciler; r != nil {
		gr := guard.NewPeerReconciler(r, loopbackFence.Stopped(), stopGrace)
		cfg.KubeAPIs.ControlPlane.PeerEndpointLeaseReconciler = gr
		guards = append(guards, gr.Guard())
	}
	defer func() {
		for _, g := range guards {
			if !g.Wait(stopGrace) {
				logger.Info("A reconciler's etcd client is still closing; left to finish on its own", "after", stopGrace)
			}
		}
	}()
	closeListener := func() { closeUnusedListener(cfg.KubeAPIs.ControlPlane.Generic.SecureServing) }
	cc, err := cfg.Complete()
	if err != nil {
		closeListener()
		return err
	}
	if r := cfg.KubeAPIs.Extra.EndpointReconcilerConfig.Reconciler; r != nil { // made by Complete
		gr := guard.NewEndpointReconciler(r, loopbackFence.Stopped(), stopGrace)
		cfg.KubeAPIs.Extra.EndpointReconcilerConfig.Reconciler = gr
		guards = append(guards, gr.Guard())
	}
	srv, err := kasapp.CreateServerChain(cc)
	if err != nil {
		closeListener()
		return err
	}
	prepared, err := srv.PrepareRun()
	if err != nil {
		closeListener()
		return err
	}
	a.inProcess.Serve(ctx, srv.GenericAPIServer.Handler)
	defer func() {
		if !a.inProcess.Stop(stopGrace) {
			logger.Info("In-process requests still running after the stop; left to return on their own", "after", stopGrace)
		}
	}()
	loopback := rest.CopyConfig(srv.GenericAPIServer.LoopbackClientConfig)
	a.mu.Lock()
	a.loopback = loopback
	a.mu.Unlock()

	// The server runs under its own context, cancelled only when it is safe
	// (see above). WithoutCancel keeps ctx's values (the logger).
	srvCtx, cancelSrv := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSrv()
	served := make(chan error, 1)
	go func() { served <- prepared.Run(srvCtx) }()
	stopProbe := a.ready.MarkWhen(srvCtx, a.readyz(loopback))
	defer func() { cancelSrv(); stopProbe() }()

	select {
	case err := <-served:
		if err == nil {
			err = errors.New("kube-apiserver: server returned before it was asked to stop")
		}
		return err
	case <-ctx.Done():
	}
	select {
	case <-a.ready.Done():
	case err := <-served:
		return err
	default:
		logger.Info("Stop requested before the apiserver was ready; waiting for readiness first, as cancelling its post-start hooks earlier exits the process")
		select {
		case <-a.ready.Done():
		case err := <-served:
			return err
		}
	}
	loopbackFence.MarkStopped(APIServerName, "was asked to stop")
	inFlight.MarkStopped(APIServerName, "was asked to stop")
	cancelSrv()
	return <-served
}

// readyPoll is how often readyz asks: the scheduler and the
// controller-manager wait for the harness to see the apiserver ready, so
// each poll's wait is on their start's path.
const readyPoll = 25 * time.Millisecond

// readyz is the apiserver's readiness check: it GETs /readyz with the
// server's loopback client every readyPoll until it answers 200.
func (a *APIServer) readyz(loopback *rest.Config) func(context.Context) error {
	return func(ctx context.Context) error {
		cfg := rest.CopyConfig(loopback)
		cfg.Timeout = 5 * time.Second
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot build the readiness client")
			return err
		}
		return probe.Poll(ctx, readyPoll, func(ctx context.Context) error {
			var code int
			client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
			if code != http.StatusOK {
				return fmt.Errorf("/readyz: %d", code)
			}
			return nil
		})
	}
}

// Ready blocks until the apiserver's /readyz has answered 200 over
// loopback TLS, with the server's own loopback client configuration (the
// server's loopback serving certificate and a privileged loopback token it
// makes for itself at start), so it needs no user-supplied client
// certificate and works with --anonymous-auth=false.
func (a *APIServer) Ready(ctx context.Context) error { return a.lifecycle.Ready(ctx) }

// LoopbackClientConfig returns a copy of the server's loopback client
// configuration (privileged; loopback only), or nil before Run built the
// server. Its requests are fenced as the server's own (package
// internal/fence): once the
// server was asked to stop, each gets a second to answer, and a second
// after the stop they fail at once — a client of a stopped apiserver gets
// a new configuration from the instance that replaced it.
func (a *APIServer) LoopbackClientConfig() *rest.Config {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.loopback == nil {
		return nil
	}
	return rest.CopyConfig(a.loopback)
}

// applyCapabilities sets the process-wide capabilities from this start's
// --allow-privileged and --max-connection-bytes-per-sec. Upstream's
// CreateKubeAPIServerConfig calls capabilities.Setup, which only the first
// call in a process sets: a later start would silently keep an earlier
// start's values. The privileged pod sources, which the apiserver does not
// set (a kubelet in the same process does), are kept. Only one APIServer
// runs at a time in a process (its informer name), so no other apiserver
// reads them meanwhile.
func applyCapabilities(allowPrivileged bool, perConnectionBytesPerSec int64) {
	prev := capabilities.Get()
	want := capabilities.Capabilities{
		AllowPrivileged:                        allowPrivileged,
		PrivilegedSources:                      prev.PrivilegedSources,
		PerConnectionBandwidthLimitBytesPerSec: perConnectionBytesPerSec,
	}
	// A Get by another goroutine between the reset and Initialize would
	// initialize the defaults first (upstream takes no lock around both):
	// then do it again.
	for range 3 {
		capabilities.ResetForTest() // the only way upstream offers to set them again
		capabilities.Initialize(want)
		if got := capabilities.Get(); got.AllowPrivileged == allowPrivileged && got.PerConnectionBandwidthLimitBytesPerSec == perConnectionBytesPerSec {
			return
		}
	}
}
