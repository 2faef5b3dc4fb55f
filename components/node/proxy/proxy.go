package proxy

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/configz"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	proxyconfig "k8s.io/kubernetes/pkg/proxy/apis/config"
	proxyconfigscheme "k8s.io/kubernetes/pkg/proxy/apis/config/scheme"
	proxyconfigv1alpha1 "k8s.io/kubernetes/pkg/proxy/apis/config/v1alpha1"

	"github.com/kubeharness/kubeharness/components/internal/flags"
	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/node"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component name of the kube-proxy adapter.
const Name = names.KubeProxy

// kubeProxyConfigzName is the configz name upstream's kube-proxy registers.
const kubeProxyConfigzName = proxyconfig.GroupName

// kubeProxyRefused are kube-proxy's flags that make the command do
// something else than run, and exit: the adapter keeps their names and
// refuses them with the reason.
var kubeProxyRefused = map[string]string{
	"cleanup":         "--cleanup removes kube-proxy's rules and exits the command; a distro calls node.CleanupProxyRules instead",
	"init-only":       "--init-only initialises the host and exits the command, which a component in a shared process cannot do",
	"write-config-to": "--write-config-to writes the configuration and exits the command, which a component in a shared process cannot do",
}

// KubeProxy runs the real kube-proxy of k8s.io/kubernetes as a harness
// component. It takes kube-proxy's flags and its --config file. Create it
// with New; a value runs once, and a process runs one kube-proxy
// once (StartsOnce).
//
// Its feature gates — --feature-gates, or the --config file's
// featureGates (upstream ignores the flag when a file is given, so the
// adapter refuses the two together) — are the kube-proxy scope's requests,
// reconciled at the barrier. Like the kubelet it has no
// --emulated-version and runs at the version the barrier reconciled.
//
// Run waits until the Node named by --hostname-override has an address
// (upstream otherwise falls back to 127.0.0.1 after 30 s and exits the
// process when the addresses then change), then runs upstream's
// Options.Complete, Validate and Run: the values are validated against
// the process gate, so a bad value fails Run, not the parse phase.
type KubeProxy struct {
	ready probe.Readiness

	opts     *proxyapp.Options
	fs       *pflag.FlagSet // upstream's flags, as parsed
	hostname string         // --hostname-override, or the host's name
	ports    []flags.Listen // where it will listen, once Complete ran
	healthz  string         // its /healthz address ("" for none)
	mode     proxyconfig.ProxyMode
}

// New returns a kube-proxy component.
func New() *KubeProxy { return &KubeProxy{} }

// Name returns "kube-proxy".
func (p *KubeProxy) Name() string { return Name }

// StartsOnce says why a process starts its kube-proxy once (harness.Once).
func (p *KubeProxy) StartsOnce() string {
	return "kube-proxy runs informers on wait.NeverStop and a sync loop that never ends, and exits the process when its Node is deleted or changes address"
}

// AddFlags adds kube-proxy's flags to the scope, with upstream's name
// normalisation; --feature-gates sets the scope's gate as it is parsed.
// --cleanup, --init-only and --write-config-to, and the unreconciled
// logging flags, are refused. It has no other effect.
func (p *KubeProxy) AddFlags(s *scoping.Scope) error {
	p.opts = proxyapp.NewOptions()
	p.fs = pflag.NewFlagSet(Name, pflag.ContinueOnError)
	p.opts.AddFlags(p.fs)
	flags.TeeFeatureGates(p.fs, s.FeatureGate())
	flags.AddSets(s, cliflag.NamedFlagSets{Order: []string{Name}, FlagSets: map[string]*pflag.FlagSet{Name: p.fs}})
	for name, why := range kubeProxyRefused {
		flags.Refuse(s.FlagSet(), name, why)
	}
	return nil
}

// Complete reads the --config file, if any, and records its feature gates
// as kube-proxy's requests (named "--config=FILE"); a file that does not
// decode, or --feature-gates beside --config, is a *scoping.FlagError.
// It reads nothing else and writes no process-wide state.
func (p *KubeProxy) Complete(s *scoping.Scope) error {
	if p.opts == nil {
		return fmt.Errorf("%s: Complete before AddFlags", Name)
	}
	// As upstream: the name is trimmed and lowercased, the host's if none.
	p.hostname = strings.ToLower(strings.TrimSpace(p.fs.Lookup("hostname-override").Value.String()))
	if p.hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return &scoping.FlagError{Component: Name, Flag: "--hostname-override", Err: err}
		}
		p.hostname = strings.ToLower(strings.TrimSpace(h))
	}
	file := p.opts.ConfigFile
	if file == "" {
		if mode := p.fs.Lookup("proxy-mode").Value.String(); mode != "" {
			p.mode = proxyconfig.ProxyMode(mode)
		}
		p.setPorts(
			flaggedAddress(p.fs, "healthz-bind-address", "healthz-port"),
			flaggedAddress(p.fs, "metrics-bind-address", "metrics-port"))
		return nil
	}
	if p.fs.Changed("feature-gates") {
		return &scoping.FlagError{Component: Name, Flag: "--feature-gates", Value: p.fs.Lookup("feature-gates").Value.String(),
			Err: fmt.Errorf("kube-proxy ignores --feature-gates when --config=%s is given: set featureGates in the file", file)}
	}
	cfg, err := loadKubeProxyConfig(file)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--config", Value: file, Err: err}
	}
	p.mode = cfg.Mode
	if cfg.HostnameOverride != "" && !p.fs.Changed("hostname-override") {
		p.hostname = strings.ToLower(strings.TrimSpace(cfg.HostnameOverride))
	}
	p.setPorts(cfg.HealthzBindAddress, cfg.MetricsBindAddress)
	if len(cfg.FeatureGates) == 0 {
		return nil
	}
	return s.SetFeatures("--config="+file, cfg.FeatureGates)
}

// setPorts records the healthz and metrics addresses ("" for none).
func (p *KubeProxy) setPorts(healthz, metrics string) {
	p.healthz, p.ports = healthz, nil
	for _, l := range []flags.Listen{{Flag: "--healthz-bind-address", Addr: healthz}, {Flag: "--metrics-bind-address", Addr: metrics}} {
		if l.Addr != "" {
			p.ports = append(p.ports, l)
		}
	}
}

// flaggedAddress is an address flag as upstream's Complete resolves it
// with its deprecated port flag: none when the port is 0, the port added
// when the address has none.
func flaggedAddress(fs *pflag.FlagSet, addrFlag, portFlag string) string {
	addr, port := fs.Lookup(addrFlag).Value.String(), fs.Lookup(portFlag).Value.String()
	if port == "0" {
		return ""
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return net.JoinHostPort(addr, port)
	}
	return addr
}

// loadKubeProxyConfig decodes a KubeProxyConfiguration file as upstream
// does: strictly, then, for a v1alpha1 file with unknown or duplicate
// fields, leniently.
func loadKubeProxyConfig(file string) (*proxyconfig.KubeProxyConfiguration, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	obj, _, err := proxyconfigscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		if !runtime.IsStrictDecodingError(err) {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		lenient := runtime.NewScheme()
		if err := proxyconfig.AddToScheme(lenient); err != nil {
			return nil, err
		}
		if err := proxyconfigv1alpha1.AddToScheme(lenient); err != nil {
			return nil, err
		}
		var lerr error
		if obj, _, lerr = serializer.NewCodecFactory(lenient, serializer.DisableStrict).UniversalDecoder().Decode(data, nil, nil); lerr != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
	}
	cfg, ok := obj.(*proxyconfig.KubeProxyConfiguration)
	if !ok {
		return nil, fmt.Errorf("got %T, want a KubeProxyConfiguration", obj)
	}
	return cfg, nil
}

// Mode is the proxy mode the flags or the file asked for ("" until
// Complete, and when none was given: upstream's default, iptables).
func (p *KubeProxy) Mode() string { return string(p.mode) }

// Run checks that kube-proxy's ports are free, waits for the Node to have
// an address, completes and validates upstream's options against the
// process gate (after the barrier), and runs upstream's
// Options.Run. It returns when ctx ends; upstream's informers and sync
// loop do not (StartsOnce).
func (p *KubeProxy) Run(ctx context.Context) error {
	if p.opts == nil || p.hostname == "" {
		return fmt.Errorf("%s: Run before AddFlags and Complete", Name)
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := flags.PortsFree(Name, p.ports); err != nil {
		return err
	}
	if err := p.waitForNode(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := p.opts.Complete(p.fs); err != nil {
		return &scoping.FlagError{Component: Name, Err: err}
	}
	if err := p.opts.Validate(); err != nil {
		return &scoping.FlagError{Component: Name, Err: fmt.Errorf("invalid configuration: %w", err)}
	}
	defer configz.Delete(kubeProxyConfigzName)
	done := make(chan error, 1)
	go func() { done <- p.opts.Run(ctx) }()
	if p.healthz == "" {
		p.ready.Mark()
	} else {
		stopProbe := p.ready.MarkWhen(ctx, func(ctx context.Context) error {
			return probe.NewHTTP(p.healthz).WaitOK(ctx, "/healthz")
		})
		defer stopProbe()
	}
	select {
	case err := <-done:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%s: %w", Name, err)
	case <-ctx.Done():
		return nil
	}
}

// waitForNode waits until the Node of this kube-proxy has an address,
// using kube-proxy's kubeconfig (--kubeconfig, --master).
func (p *KubeProxy) waitForNode(ctx context.Context) error {
	kubeconfig, master := p.fs.Lookup("kubeconfig").Value.String(), p.fs.Lookup("master").Value.String()
	if kubeconfig == "" && master == "" && os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		return &scoping.FlagError{Component: Name, Flag: "--kubeconfig", Err: fmt.Errorf("neither --kubeconfig nor --master is set and kube-proxy does not run in a Pod")}
	}
	cfg, err := clientcmd.BuildConfigFromFlags(master, kubeconfig)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--kubeconfig", Value: kubeconfig, Err: err}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return &scoping.FlagError{Component: Name, Flag: "--kubeconfig", Value: kubeconfig, Err: err}
	}
	_, err = node.WaitForNode(ctx, client, p.hostname, node.HasAddress)
	return err
}

// Ready blocks until kube-proxy's /healthz answered 200 (it has
// programmed its rules once; upstream answers 503 until then), or with no
// healthz address until Run started it; or until ctx ends.
func (p *KubeProxy) Ready(ctx context.Context) error { return p.ready.Wait(ctx) }
