package flags

import (
	"errors"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubeharness/kubeharness/scoping"
)

// unreconciledLoggingFlags are upstream's logging flags (logsapi.AddFlags)
// other than -v, --vmodule and --logging-format: process-wide settings that
// the barrier does not reconcile and no adapter applies. Rather than parse
// them and silently ignore them, an adapter refuses them at parse time.
var unreconciledLoggingFlags = []string{
	"log-flush-frequency",
	"log-text-split-stream", "log-text-info-buffer-size",
	"log-json-split-stream", "log-json-info-buffer-size",
}

// AddSets adds upstream's named flag sets to the scope's flag set in
// upstream's order, with upstream's name normalisation (cli.Run's
// WordSepNormalizeFunc: --leader_elect is --leader-elect). It leaves out
// nothing: the commands' extra "global" flags (--version, --help, klog's
// flags) are added by NewXCommand, which the adapters do not use.
func AddSets(s *scoping.Scope, nfs cliflag.NamedFlagSets) {
	fs := s.FlagSet()
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	for _, name := range nfs.Order {
		fs.AddFlagSet(nfs.FlagSets[name])
	}
	for _, name := range unreconciledLoggingFlags {
		Refuse(fs, name, "--"+name+" is a process-wide logging setting that a single binary cannot give per component, and the barrier reconciles only -v, --vmodule and --logging-format")
	}
}

// Refuse keeps the flag name in fs, if it exists, as upstream has it,
// but makes it refuse every value with reason.
func Refuse(fs *pflag.FlagSet, name, reason string) {
	if f := fs.Lookup(name); f != nil {
		f.Value = &refusedFlag{Value: f.Value, reason: reason}
	}
}

// refusedFlag is a flag that exists, as upstream's does, but refuses every
// value with the reason.
type refusedFlag struct {
	pflag.Value
	reason string
}

// Set refuses every value, saying why.
func (r *refusedFlag) Set(string) error { return errors.New(r.reason) }
