package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
	kubeletopts "k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/volume/util/hostutil"

	"github.com/kubeharness/kubeharness/components/internal/flags"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component name of the kubelet adapter.
const Name = names.Kubelet

// kubeletConfigzName is the configz name the kubelet's run registers.
const kubeletConfigzName = "kubeletconfig"

// kubeletProcessFlags are the kubelet command's flags that set process-wide
// Go flag globals (cadvisor's, added by options.AddGlobalFlags): the adapter
// keeps their names and refuses them, rather than let one component's
// parse write process-wide state before the barrier.
var kubeletProcessFlags = []string{"housekeeping-interval"}

// Kubelet runs the real kubelet of k8s.io/kubernetes as a harness
// component. It takes the kubelet's flags (those of options.KubeletFlags
// and options.AddKubeletConfigFlags) and its configuration files (--config
// and --config-dir, merged as upstream merges them, flags last). Create it
// with New; a value runs once, and a process runs one kubelet once
// (StartsOnce).
//
// Its feature gates — --feature-gates and the files' featureGates — are
// the kubelet scope's requests, reconciled at the barrier with the other
// components' (a file's gate is named by its file). The kubelet has no
// --emulated-version: it runs at the emulation version the barrier
// reconciled for the process, which is the control plane's, so a kubelet
// in the same process is never newer than its apiserver (the skew policy);
// a gate not available at that version is refused at the barrier.
//
// It uses options.NewKubeletFlags, options.NewKubeletConfiguration,
// app.UnsecuredDependencies and app.Run, never NewKubeletCommand (which
// installs signal handlers, applies logging and writes the process gate).
type Kubelet struct {
	// Profiling turns on the kubelet's /debug/pprof and /debug/flags/v
	// (enableProfilingHandler, enableDebugFlagsHandler; upstream's
	// defaults, for anyone with nodes/proxy). In one process they profile,
	// and set the verbosity of, every component of it, so they are off
	// unless Profiling is set; a configuration file that turns one on
	// without it is an error. Logs, exec, attach and port-forward
	// (enableDebuggingHandlers) are not affected.
	Profiling bool

	ready probe.Readiness
	csi   csiNodeInfo

	flags  *kubeletopts.KubeletFlags
	config *kubeletconfig.KubeletConfiguration
	replay *kubeletReplay
	server *kubeletopts.KubeletServer // set by Complete
}

// New returns a kubelet component.
func New() *Kubelet { return &Kubelet{} }

// Name returns "kubelet".
func (k *Kubelet) Name() string { return Name }

// StartsOnce says why a process starts its kubelet once (harness.Once).
func (k *Kubelet) StartsOnce() string {
	return "the kubelet runs informers on wait.NeverStop and servers that ignore their context, and exits the process when its port is taken"
}

// AddFlags adds the kubelet's flags to the scope: its KubeletFlags and
// configuration flags, with upstream's name normalisation; the feature
// gates given by flag are set on the scope's gate as they are parsed.
// cadvisor's process-wide --housekeeping-interval and the unreconciled
// logging flags are refused; the command's own --version and --help are
// not added. It has no other effect.
func (k *Kubelet) AddFlags(s *scoping.Scope) error {
	config, err := kubeletopts.NewKubeletConfiguration()
	if err != nil {
		return err
	}
	k.flags, k.config, k.replay = kubeletopts.NewKubeletFlags(), config, &kubeletReplay{}
	own := pflag.NewFlagSet(Name, pflag.ContinueOnError)
	k.flags.AddFlags(own)
	cfg := pflag.NewFlagSet(Name+"-config", pflag.ContinueOnError)
	kubeletopts.AddKubeletConfigFlags(cfg, k.config)
	k.replay.record(cfg)
	flags.TeeFeatureGates(cfg, s.FeatureGate())
	for _, name := range kubeletProcessFlags {
		cfg.String(name, "", "cadvisor's process-wide setting")
	}
	flags.AddSets(s, cliflag.NamedFlagSets{Order: []string{"kubelet", "config"}, FlagSets: map[string]*pflag.FlagSet{"kubelet": own, "config": cfg}})
	for _, name := range kubeletProcessFlags {
		flags.Refuse(s.FlagSet(), name, "--"+name+" sets a process-wide Go flag of cadvisor's, which a component's flags cannot set")
	}
	return nil
}

// Complete validates the flags, merges the configuration files over them
// (see config.go), records the files' feature gates as the
// kubelet's requests (scoping.Scope.SetFeatures, named by their file) and
// validates the configuration against the scope's gate, all before the
// barrier: a bad file or value fails the parse phase.
func (k *Kubelet) Complete(s *scoping.Scope) error {
	if k.flags == nil {
		return fmt.Errorf("%s: Complete before AddFlags", Name)
	}
	if err := kubeletopts.ValidateKubeletFlags(k.flags); err != nil {
		return &scoping.FlagError{Component: Name, Err: err}
	}
	files, err := mergeKubeletFiles(context.Background(), k.flags, k.config, k.replay)
	if err != nil {
		return err
	}
	for _, origin := range sortedOrigins(files.gates) {
		if err := s.SetFeatures(origin, files.gates[origin]); err != nil {
			return err
		}
	}
	if !k.Profiling {
		if len(files.debug) > 0 {
			d := files.debug[0]
			return &scoping.FlagError{Component: Name, Flag: d.flag, Value: d.file, Err: fmt.Errorf("%s: true: the kubelet's debug handlers cover the whole process (every component's profiles, its arguments, its verbosity); the distro turns them on (Kubelet.Profiling)", d.key)}
		}
		files.config.EnableProfilingHandler = false
		files.config.EnableDebugFlagsHandler = false
		files.config.EnableContentionProfiling = false // acts only with profiling
	}
	if err := kubeletvalidation.ValidateKubeletConfiguration(files.config, s.FeatureGate()); err != nil {
		return &scoping.FlagError{Component: Name, Err: fmt.Errorf("invalid configuration: %w", err)}
	}
	k.server = &kubeletopts.KubeletServer{KubeletFlags: *k.flags, KubeletConfiguration: *files.config}
	return nil
}

// sortedOrigins returns the origins in a stable order: --config first.
func sortedOrigins(m map[string]map[string]bool) []string {
	out := make([]string, 0, len(m))
	for _, prefix := range []string{"--config=", "--config-dir="} {
		for origin := range m {
			if len(origin) > len(prefix) && origin[:len(prefix)] == prefix {
				out = append(out, origin)
			}
		}
	}
	return out
}

// Server returns the kubelet's merged configuration, once Complete ran
// (nil before): what Run will run.
func (k *Kubelet) Server() *kubeletopts.KubeletServer { return k.server }

// Run checks that the kubelet's ports are free (upstream exits the process
// when one is taken), builds its dependencies (app.UnsecuredDependencies,
// with a volume plugin that supports no volume added after the CSI plugin,
// for ReclaimCSI) and runs it (app.Run) with the process gate, which after the barrier
// holds the reconciled values (upstream's run writes the kubelet's gates
// into it again: the same values). Run returns when ctx ends; the
// kubelet's informers and servers do not (StartsOnce).
func (k *Kubelet) Run(ctx context.Context) error {
	if k.server == nil {
		return fmt.Errorf("%s: Run before AddFlags and Complete", Name)
	}
	if ctx.Err() != nil {
		return nil // stopped before it started
	}
	kc := &k.server.KubeletConfiguration
	if err := flags.PortsFree(Name, kubeletPorts(kc)); err != nil {
		return err
	}
	if err := shareRootDir(k.server.RootDirectory); err != nil {
		return err
	}
	deps, err := kubeletapp.UnsecuredDependencies(ctx, k.server, utilfeature.DefaultFeatureGate)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	deps.VolumePlugins = k.csi.plugins(deps.VolumePlugins)
	defer configz.Delete(kubeletConfigzName)
	kubeconfig := k.server.KubeConfig
	stopProbe := k.ready.MarkWhen(ctx, func(ctx context.Context) error {
		if kc.HealthzPort > 0 {
			if err := probe.NewHTTP(healthzAddr(kc)).WaitOK(ctx, "/healthz"); err != nil {
				return err
			}
		}
		return waitCredential(ctx, kubeconfig)
	})
	defer stopProbe()
	return stoppedWhileStarting(ctx, kubeletapp.Run(ctx, k.server, deps, utilfeature.DefaultFeatureGate))
}

// ReclaimCSI makes the node info manager of upstream's CSI volume plugin
// the kubelet's again: the process-wide record through which the kubelet
// initializes its CSINode and registers the node's CSI drivers, which a
// kube-controller-manager in the same process overwrites with one that has
// no node name each time it builds its volume controllers (see
// ControllerManager.OnControllersBuilt). The new manager gets the Node's
// UID from upstream's CSINode initialization, run again without changing
// the node's readiness; nothing else of the kubelet is touched. Called
// before the kubelet initialized its volume plugins, it takes effect once
// it has. Safe for concurrent use.
func (k *Kubelet) ReclaimCSI() { k.csi.reclaim() }

// shareRootDir makes the kubelet's --root-dir a shared mount, with
// upstream's code, before upstream's Run: the kubelet does it itself once
// running (setupDataDirs), while its pods API server already makes its
// socket in that directory; a bind mount stacked between the socket's
// creation and its rename fails the rename (EXDEV), and upstream exits
// the process. Done here, the kubelet's own call finds it shared and
// mounts nothing. The mount stays until the node's cleanup removes it.
func shareRootDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("%s: --root-dir=%s: %w", Name, dir, err)
	}
	if err := hostutil.NewHostUtil().MakeRShared(dir); err != nil {
		return fmt.Errorf("%s: --root-dir=%s: making it a shared mount: %w", Name, dir, err)
	}
	return nil
}

// stoppedWhileStarting is nil for the error upstream's Run returns when
// its context ends while it starts (a cancelled CRI call, or the context's
// own error): that is the stop asked for, not a failure. Other errors,
// and every error while ctx runs, are returned as they are.
func stoppedWhileStarting(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || status.Code(err) == codes.Canceled {
		return nil
	}
	return err
}

// Ready blocks until the kubelet's /healthz (--healthz-bind-address,
// --healthz-port) answered 200 (with --healthz-port=0: until Run started
// it) and its --kubeconfig has its client certificate (a bootstrapping
// kubelet writes it once its request is signed; what shares its
// credential, kube-proxy, needs it); or until ctx ends.
func (k *Kubelet) Ready(ctx context.Context) error { return k.ready.Wait(ctx) }

// waitCredential waits until kubeconfig loads and the client certificate
// file it names, if any, exists: a bootstrapping kubelet writes its
// kubeconfig first, the certificate once it is signed.
func waitCredential(ctx context.Context, kubeconfig string) error {
	return probe.Poll(ctx, 200*time.Millisecond, func(context.Context) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		if cfg.CertFile != "" {
			if _, err := os.Stat(cfg.CertFile); err != nil {
				return err
			}
		}
		return nil
	})
}

// kubeletPorts returns the ports the kubelet will listen on: its API
// (--address, --port), its read-only port if set, its /healthz if set.
func kubeletPorts(kc *kubeletconfig.KubeletConfiguration) []flags.Listen {
	ports := []flags.Listen{{Flag: "--port", Addr: net.JoinHostPort(kc.Address, strconv.Itoa(int(kc.Port)))}}
	if kc.ReadOnlyPort > 0 {
		ports = append(ports, flags.Listen{Flag: "--read-only-port", Addr: net.JoinHostPort(kc.Address, strconv.Itoa(int(kc.ReadOnlyPort)))})
	}
	if kc.HealthzPort > 0 {
		ports = append(ports, flags.Listen{Flag: "--healthz-port", Addr: healthzAddr(kc)})
	}
	return ports
}

// healthzAddr is the address of the kubelet's /healthz.
func healthzAddr(kc *kubeletconfig.KubeletConfiguration) string {
	return net.JoinHostPort(kc.HealthzBindAddress, strconv.Itoa(int(kc.HealthzPort)))
}
