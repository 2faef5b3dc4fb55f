// Package components adapts the real kube-apiserver, kube-scheduler and
// kube-controller-manager of k8s.io/kubernetes (v1.37.2) to harness
// components, so that one process can run all three:
//
//	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(components.NewScheduler(), schedulerArgs, components.APIServerName)
//	h.Add(components.NewControllerManager(), kcmArgs, components.APIServerName)
//	err := h.Run(ctx) // parse, barrier, start in order with readiness, stop in reverse
//
// Each adapter takes exactly the flags of its upstream binary, parsed into
// its own scope (package scoping): its own pflag.FlagSet and its own
// ComponentGlobalsRegistry, injected into the upstream options before their
// flags are created. AddFlags only creates options and adds flags; nothing
// runs, listens or touches process-wide state before the barrier, so an
// unknown flag, a bad value or a conflicting feature gate in any component
// fails the harness in its parse or barrier phase, naming the component,
// before any port is opened. The adapters build the components the way
// upstream's own test servers do, never through NewXCommand: the commands
// install signal handlers, apply logging, and exit the process. The three
// share one lifecycle — a value runs once; Ready reports readiness, a
// standby, or Run's error; the scheduler and the controller-manager run
// upstream's Run only while they hold their lease — and differ only in
// their upstream wiring.
//
// The scheduler and the controller-manager connect to the apiserver as
// their --kubeconfig says. A distro that holds the controller-manager's
// client configuration in memory gives it with
// ControllerManager.WithRESTConfig instead; the scheduler cannot take one
// (see Scheduler).
//
// Each adapter logs through the logger in the context its Run gets
// (klog.FromContext), with a "component" value; upstream code below it does
// the same where it is contextual. Harness.Logger, when set, is that
// logger; otherwise the caller's context of Harness.Run decides, and klog's
// global logger is the fallback.
//
// A process runs one control plane at a time and can start it again after
// it stopped, with other flags and other feature gates
// (TestThreeStartsInOneProcess starts and stops the real control plane three
// times in one process). What each start leaves behind, and what the
// adapters undo so that the next start is computed afresh, is below.
//
// # Process-wide state
//
// The three upstream components were written as separate processes and
// share, in one process, the state below. For each: what upstream does,
// what the adapters do, and why.
//
// Feature gates and compatibility versions. Each upstream command binds
// --feature-gates, --emulated-version and --min-compatibility-version to
// compatibility.DefaultComponentGlobalsRegistry and calls its Set() in
// PersistentPreRunE, writing utilfeature.DefaultMutableFeatureGate; most
// feature checks then read utilfeature.DefaultFeatureGate. The adapters give
// upstream the scope's registry instead (kube-apiserver:
// GenericServerRunOptions.ComponentGlobalsRegistry before Flags();
// kube-scheduler: NewOptionsWithComponentGlobalsRegistry;
// kube-controller-manager: the ComponentGlobalsRegistry field before Flags),
// so parsing and upstream's own fallbacks (SetFallback in Validate and
// ApplyTo) touch only the scope. The barrier reconciles every scope and
// applies the result once to the process gate and to the default registry's
// "kube" effective version (which the apiserver reads directly for admission
// and CEL), and back into every scope. Why: the process gate is the one
// upstream reads, so two components cannot run with different values of one
// kube feature; the same value twice is fine, different values are a
// conflict reported before anything starts, instead of the last parse
// silently winning. Every start is computed from the process defaults: the
// barrier resets the process gate's explicitly set values before it applies
// a start's plan (package scoping), so a gate an earlier start turned on is
// off again unless this start asks for it.
//
// Logging. Each upstream command calls logsapi.ValidateAndApply with its
// own options (kube-apiserver's RunE, kube-scheduler's runCommand,
// kube-controller-manager's RunE); a second call in one process fails
// ("logging configuration was already applied earlier"), and it sets klog's
// verbosity, vmodule and format for the whole process. The paths the
// adapters use (Complete, Validate, NewConfig, Setup, Config, Run) never call
// it: only the commands do, and the adapters do not use the commands. Each
// component's -v, --vmodule and --logging-format are recorded by its scope,
// reconciled at the barrier (different values are a conflict) and applied
// by scoping.ProcessTarget's ApplyLogging: at the first start; at a later
// start with the same settings it is a no-op, with other settings the
// barrier fails (scoping.ErrLoggingChanged), as klog cannot be changed
// back. Upstream's other logging
// flags (--log-flush-frequency, --log-{text,json}-split-stream,
// --log-{text,json}-info-buffer-size) are just as process-wide but not
// reconciled, so the adapters refuse them at parse time with that reason
// instead of parsing and silently ignoring them. Why: klog is one per
// process; the component that happened to start last must not decide it.
//
// configz. kube-scheduler's Run registers configz "componentconfig" and
// kube-controller-manager's "kubecontrollermanager.config.k8s.io", and
// neither ever deletes it; registering a name twice fails ("register config
// %q twice") and makes Run return an error. The names differ, so the three
// do not clash with each other; the adapters call configz.Delete after
// upstream's Run returned. Why: so that a component can be started again in
// the same process after it stopped.
//
// Metrics. There is one legacyregistry per process: each component's
// /metrics serves every component's metrics. Upstream's registrations are
// guarded by sync.Once or are idempotent, so three components register once,
// and a later start registers nothing again — with one exception that is
// harmless: kube-controller-manager's ReplicaSet controller registers two
// package-level metrics (pkg/controller/replicaset/metrics) each time it is
// built, so from the second start on it logs "unable to register metrics"
// ("duplicate metrics collector registration attempted"); the collectors
// the first start registered are the same variables and keep counting.
// The commands also record the feature-enablement metric
// (kubernetes_feature_enabled) and the compatibility-version metric from
// their own registry; AfterBarrier records both once, from the process gate
// and the process registry, which hold the reconciled values; it runs at
// every start, so the metric shows this start's values (a gate an earlier
// start turned on reads 0 again). Each
// component's --show-hidden-metrics-for-version, --disabled-metrics and
// --allow-metric-labels are applied by its own Config/Setup to the one
// registry and accumulate (a union), as they are not reconciled, and
// outlive the start that set them. The
// package also imports what the upstream main packages import for metrics
// (client-go metrics, kubernetes_build_info), --logging-format=json, and
// time zone data. Why: a metric registered twice panics or is dropped;
// recording the feature metric from the process gate shows what actually
// runs.
//
// Client-go's default warning handler. kube-apiserver and
// kube-controller-manager each call rest.SetDefaultWarningHandler(
// rest.NoWarnings{}) in their PersistentPreRunE. AfterBarrier does it once,
// before any component starts. It applies to every client of the process,
// including kube-scheduler's and the distro's own. Why: it is process-wide
// and should be set once, before clients exist, not by whichever command ran
// last.
//
// Signals. NewAPIServerCommand calls SetupSignalContext when it is
// constructed, kube-scheduler's runCommand installs a signal handler, and
// kube-controller-manager's RunE calls SetupSignalContext when its
// ControllerManagerReleaseLeaderElectionLockOnExit gate is on; a second
// SetupSignalContext panics, and a second signal exits the process. The
// adapters call none of them: the caller of Harness.Run owns signals and
// cancels its context. What remains: scheduler.New installs a SIGUSR2
// signal.Notify for its cache debugger, which stays registered after the
// scheduler stopped (one channel per start, no goroutine).
//
// Process exit. Upstream's leader-election callbacks exit the process
// (kube-scheduler os.Exit(0) when its context ends and klog.FlushAndExit on a
// lost lease; kube-controller-manager FlushAndExit unless the release-on-exit
// gate is on). The adapters turn upstream's elector off and run client-go's
// elector themselves, releasing the lease on stop within a second (a
// datastore that does not answer does not hold up the stop); releasing or
// losing the lease stops only that component (see Scheduler.Run, ControllerManager.Run and
// LeaderElection). kube-apiserver's post-start hooks klog.Fatalf when their
// context is cancelled before they finished; APIServer.Run therefore never
// cancels the server before it was ready once. Other klog.Fatal paths
// upstream remain (for example kube-controller-manager's namespace deleter
// when discovery returns nothing, which is why the controller-manager must
// stop before the apiserver: the harness stops in reverse dependency order).
//
// Informer names. client-go keeps a process-wide set of informer names
// (cache.NewInformerName), and registering a name that is still registered
// fails ("informer name %q is already registered"). APIServer and Scheduler
// create theirs ("kube-apiserver", "kube-scheduler"), give them to
// upstream's options and release them when Run returns.
// kube-controller-manager registers "kube-controller-manager" itself,
// inside CreateControllerContext, and cannot be given one; the informer
// factory's Shutdown releases it, but upstream's Run defers that only once
// every controller was built: when CreateControllerContext fails after
// registering the name (the apiserver not healthy within 10 s) or a
// controller fails to build, the name stays registered for the life of the
// process. ControllerManager.Run therefore checks that the name is free —
// so a second controller-manager while one runs is refused, saying why,
// with client-go's registry as the only record — and holds an InformerName of that name
// of its own, which it releases at once — so that upstream can register the
// name — and again when upstream's Run returned: client-go's Release
// deletes the registry entry by name, which removes upstream's registration
// too if it is still there. Upstream's own InformerName then stays marked
// reserved, but only the stopped informers of that start refer to it. Why:
// so that the controller-manager can start again in the same process after
// it stopped or failed. (Should client-go one day release only its own
// entry, the next start after such a failure fails with the "already
// registered" error, naming the name — never silently.)
//
// Capabilities. kube-apiserver calls capabilities.Setup (allow-privileged,
// connection limits), process-wide and first-caller-wins: a later start
// would silently keep the first start's values. APIServer.Run sets them
// from its own flags before upstream's call (with capabilities.ResetForTest,
// the only reset upstream has), keeping the privileged pod sources, which
// only a kubelet in the same process sets. Why: only the apiserver sets
// them, so its flags — this start's — decide, as in a separate process.
//
// Version. component-base's version (what /version reports, the binary
// version every effective version is derived from) is set by the linker.
// Built from the module it reads v0.0.0-master; build and test with
// -ldflags "-X k8s.io/component-base/version.gitVersion=v1.37.2
// -X k8s.io/component-base/version.gitMajor=1
// -X k8s.io/component-base/version.gitMinor=37" (the Makefile does).
//
// Flags not added. The upstream commands add --version, --help and klog's
// global flags themselves (verflag, globalflag); the adapters take the
// flags of the options only, which are all of the component's flags. Flag
// names are normalised as upstream's cli.Run does (--leader_elect is
// --leader-elect).
//
// # Stopping, or losing a lease, with the datastore gone
//
// With etcd unreachable, every API request waits for the apiserver's
// request timeout (60 s), and some upstream code waits with no bound at
// all. A stop must not wait for it (Harness.StopTimeout names what it
// abandons), and neither must a lost lease, after which the harness may
// start the component again (Harness.Recover). What waits, and what the
// adapters do:
//
//   - kube-controller-manager's per-controller credentials
//     (--use-service-account-credentials) request tokens with context.TODO()
//     and retry with sleeps; a worker blocked there holds its controller, and
//     upstream's Run, until the apiserver answers. The adapter fences the
//     controller-manager's client configuration (fence.go): once it was asked
//     to stop, or lost its lease, each request through it that has not
//     answered within stopGrace (1 s) fails. Requests that answer are not
//     touched, so a stop with the datastore answering runs as before (failing
//     them would make upstream's Run return from building its controllers
//     without shutting down the work queues already made). The token requests
//     and ServiceAccount lookups go through it; the controllers' own requests
//     do not: upstream makes their clients from client-go's
//     AnonymousClientConfig, which drops the fence's WrapTransport. Those that
//     use the controllers' contexts end with the stop; kube-apiserver ends the
//     others once it stops (the requests it serves, below). While upstream
//     builds the controllers (BuildControllers, the first seconds after the
//     lease is taken), a constructor's failed request is a build error, and
//     Run returns it — without shutting down the work queues already made —
//     except in two constructors, which exit the process: the pod certificate
//     request cleaner takes its client through ClientOrDie (klog.Fatal when
//     the ServiceAccount lookup fails;
//     cmd/kube-controller-manager/app/certificates.go, on at 1.37 where
//     PodCertificateRequest is GA), and the namespace controller's deleter
//     calls klog.FlushAndExit when its discovery — through its own
//     ServiceAccount's token, whose fetch retries four times with sleeps of
//     0.5, 1 and 2 s — returns nothing (pkg/controller/namespace/deletion,
//     initOpCache). So a lost lease does not fence the requests until the
//     building is over: the adapter asks the controller-manager's verbose
//     /healthz, where BuildControllers registers a check per controller once
//     it built the last one (waitControllersBuilt); until then the build's
//     requests wait for the datastore, at most the apiserver's request timeout
//     (60 s), as upstream; once it answers, the building ends (the
//     constructors that honour the context, which the lost lease ended, return
//     an error — the node IPAM controller's, for one), the instance returns
//     and its successor campaigns. Measured: etcd paused 15 s from the start
//     of the building, the server stays up and a Deployment's Pods are bound
//     after the resume; before, the fence ended a ServiceAccount create 1 s
//     after the lost lease
//     (TestSurvivesDatastorePauseWhileControllersAreBuilt). Without a secure
//     port there is nothing to ask, and the fence applies at once. What is
//     left: a stop (SIGTERM), which must be bounded, during the building with
//     the datastore gone, and a stall longer than the request timeout during
//     it, exit the process through those two constructors — which one is being
//     built at the fault is chance, the order being a map's. The grace is
//     within the lease's safety margin: a lease is lost at the renew deadline
//     (10 s), and another candidate takes it over only a lease duration (15 s)
//     after it last saw it renewed. --controller-shutdown-timeout defaults to
//     2 s here (upstream: 10 s): the token retries sleep up to 3.5 s whatever
//     the fence does, and upstream's Run then returns without the controllers
//     still running, which it logs by name (the adapter adds a line saying it
//     left them to return on their own).
//   - The scheduler's and the controller-manager's Config read the
//     extension-apiserver-authentication ConfigMap for delegated
//     authentication with context.TODO(): a component restarted after a
//     lost lease while the datastore is still gone waits there. The
//     delegated authentication and authorization clients are fenced too
//     (CustomRoundTripperFn, upstream's hook for it).
//   - The leases' "stopped leading" events are written with a context that
//     never ends; their client has a 2 s timeout (recordLeaderEvents). The
//     release of a lease on stop has 1 s (leaseReleaseBudget).
//   - kube-apiserver's pre-shutdown hooks: the identity lease controller's
//     Stop waits for a renew in flight on a loopback client; the
//     peer-endpoint and kubernetes-service reconcilers hold a lock across
//     an etcd write without a context, which their Stop takes before its
//     own timeout starts. The adapter fences the loopback client
//     configuration (as above, and once the grace after the stop is over,
//     new loopback requests fail at once: the identity lease's renew
//     retries five times in a row) and wraps both reconcilers
//     (apiserver_shutdown.go) so that a write not answered stopGrace after
//     the stop returns an error and their storage is closed. What upstream does not allow:
//     ending that etcd write itself. etcd's client retries it on the closed
//     client for as long as its context — context.Background — lives, so
//     one goroutine per stuck reconciler stays until the process exits;
//     the error the hook logs says so.
//   - kube-apiserver's graceful stop waits until every request in flight
//     has returned, each bounded only by the request timeout (60 s); with
//     the datastore gone, any client's write in flight at the stop (a
//     kubelet's heartbeat, kubectl's create) waits in etcd's client for
//     that long. The adapter puts a filter in front of the server chain's
//     API handler (the aggregator's BuildHandlerChainFunc, upstream's
//     hook for it) that cancels the context of a request still being
//     served servedGrace (3 s) after the stop (requestFence.handler): the
//     etcd call ends, the client gets an error (504, "context canceled"),
//     and the drain completes. A request that answers within the grace is
//     not touched. Before, one such create made SIGTERM end in exit 1
//     after 11 s, kube-apiserver abandoned.
//   - A leader whose process was paused (SIGSTOP, a stalled host or VM)
//     past the lease duration finds, on resume, its lease taken by
//     another server; client-go starts a new round of renew retries and
//     gives the lease up only a renew deadline (10 s) later, its work
//     running all that time beside the new leader's. The elector also
//     watches the lease itself (watchLease, every 250 ms, through
//     client-go's IsLeader and Check): once its last renewal is older
//     than the renew deadline, or a renew read another holder, the work's
//     context ends with ErrLeaseLost at once. Measured with two servers
//     (TestTwoServersHandOverFromPausedLeader, a 20 s SIGSTOP of the
//     leader): the resumed instance's work returned 0–0.1 s after the
//     resume, where it ran for 10 s before.
//   - A stall can also begin while a component that holds its lease still
//     starts: kube-scheduler waiting for its informers to sync, or
//     kube-controller-manager in upstream's 10 s wait for a healthy
//     apiserver before it builds any controller (CreateControllerContext,
//     which returns "failed to wait for apiserver being healthy" with the
//     lease, renewed moments before, still held). Upstream exits. Here the
//     first is a lost lease before the component was ready, which the
//     harness's Recover keeps as it keeps one after (the scheduler starts
//     again once every component started; examples/k3s-like's
//     TestSurvivesDatastorePauseWhileSchedulerStarts pauses etcd as the
//     scheduler takes its lease); the second is an error wrapping
//     ErrAPIServerUnhealthy, which RecoverLostLease keeps too.
//
// At 1.36 one blocker stays: the identity lease controller of
// k8s.io/component-helpers v0.36 retries creating its lease while holding
// the lock its Stop (a pre-shutdown hook) takes, until a context that ends
// only after the pre-shutdown hooks: with the datastore gone, once its
// renew has failed into those retries, kube-apiserver's stop never ends,
// and the harness abandons it at StopTimeout, naming it. v0.37 fixed it (a
// channel Stop closes); no 1.36 patch release has the fix.
//
// Measured (examples/k3s-like, TestStopWithoutDatastore and
// TestExitOnLeaseLoss): SIGTERM with the external etcd killed or paused,
// a client's create in flight, exits 0 in 4-6 s, where it took more than
// 16 s and exited 1 before; a stop in the middle of a recovery, the
// datastore still paused, is as quick.
package components
