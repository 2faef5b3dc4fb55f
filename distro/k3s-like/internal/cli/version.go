package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/component-base/version"
)

// versionText is what `k3s-like --version` prints: the Kubernetes version
// the binary carries (stamped by make build: v0.0.0-master means it was
// built without the version ldflags and emulates nothing right), the
// kubeharness commit it was built from (from the Go build information;
// "+dirty" when the work tree had changes), and the Go toolchain.
//
//	k3s-like version v1.36.3
//	  kubernetes:  v1.36.3
//	  kubeharness: 51eeb6c1a2b3+dirty
//	  go:          go1.26.0 linux/amd64
func versionText() string {
	k8s := version.Get().GitVersion
	return fmt.Sprintf("k3s-like version %s\n  kubernetes:  %s\n  kubeharness: %s\n  go:          %s %s/%s\n",
		k8s, k8s, kubeharnessVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// kubeharnessVersion is the module version of kubeharness in the build, or,
// when it is built from this repository (a replace to the work tree), the
// VCS revision Go stamped into the binary; "unknown" without either.
func kubeharnessVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/kubeharness/kubeharness" && d.Replace == nil && d.Version != "" && d.Version != "(devel)" {
			return d.Version
		}
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "unknown"
	}
	return rev[:min(12, len(rev))] + dirty
}

// VersionPrinted is what VersionRequested returns once it printed the
// version: main exits 0 without running the command.
type VersionPrinted struct{}

func (VersionPrinted) Error() string { return "version printed" }

// versionFlag is --version: bare (true), raw, false, or anything else,
// which VersionRequested refuses. It replaces component-base's verflag flag,
// which the upstream packages declare on pflag.CommandLine and whose Set of
// --version=vX.Y.Z sets the process's reported Kubernetes version
// (version.SetDynamicVersion) while the flag is parsed; setting this one
// changes nothing.
type versionFlag string

func (v *versionFlag) String() string { return string(*v) }

// Set stores s, a boolean as pflag's (1, t, TRUE, …) normalized to true or
// false.
func (v *versionFlag) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		s = strconv.FormatBool(b)
	}
	*v = versionFlag(s)
	return nil
}

func (v *versionFlag) Type() string     { return "version" }
func (v *versionFlag) IsBoolFlag() bool { return true }

// UseVersionFlag swaps verflag's --version on pflag.CommandLine, which cobra
// adds to every command, for a versionFlag: pflag cannot remove a flag, so
// pflag.CommandLine becomes a copy of itself without verflag's. Call it
// before any flag is parsed. Nothing in the binary reads verflag's value
// (verflag.PrintAndExitIfRequested is upstream's commands', which it does
// not run).
func UseVersionFlag() {
	fs := pflag.NewFlagSet(pflag.CommandLine.Name(), pflag.ExitOnError)
	pflag.CommandLine.VisitAll(func(f *pflag.Flag) {
		if f.Name != "version" {
			fs.AddFlag(f)
		}
	})
	v := versionFlag("false")
	fs.AddFlag(&pflag.Flag{
		Name:        "version",
		Usage:       "Print k3s-like's version, the Kubernetes version it carries and the Go version, and quit; --version=raw prints Kubernetes' version information in full",
		Value:       &v,
		DefValue:    "false",
		NoOptDefVal: "true",
	})
	pflag.CommandLine = fs
}

// VersionRequested handles --version (versionFlag, on every command) before
// any command runs:
//   - --version (=true) prints versionText and stops (VersionPrinted);
//   - --version=raw prints version.Get() as upstream does, then the
//     kubeharness version;
//   - any other value but false, e.g. component-base's --version=vX.Y.Z
//     (which sets the reported version), is refused: a control plane that
//     reports a version it is not must not start.
func VersionRequested(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("version")
	if f == nil || !f.Changed {
		return nil
	}
	switch v := f.Value.String(); v {
	case "false":
		return nil
	case "true":
		fmt.Fprint(cmd.OutOrStdout(), versionText())
	case "raw":
		fmt.Fprintf(cmd.OutOrStdout(), "%#v\nkubeharness: %s\n", version.Get(), kubeharnessVersion())
	default:
		return fmt.Errorf("--version=%s: k3s-like does not change the Kubernetes version it reports (%s is stamped at build); use --version or --version=raw", v, version.Get().GitVersion)
	}
	return VersionPrinted{}
}
