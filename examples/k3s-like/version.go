package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
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

// versionPrinted is what versionRequested returns once it printed the
// version: main exits 0 without running the command.
type versionPrinted struct{}

func (versionPrinted) Error() string { return "version printed" }

// versionRequested handles --version, which is not ours: component-base's
// verflag declares it on pflag.CommandLine when the upstream commands are
// linked in, and cobra adds pflag.CommandLine to every command. Upstream
// commands act on it through verflag.PrintAndExitIfRequested; this binary
// acts on it before any command runs, for the root and every subcommand:
//   - --version (=true) prints versionText and stops (versionPrinted);
//   - --version=raw prints version.Get() as upstream does, then the
//     kubeharness version;
//   - --version=vX.Y.Z is refused: verflag has already set it as the
//     process's reported Kubernetes version (version.SetDynamicVersion) when
//     the flag was parsed, and a control plane that reports a version it is
//     not must not start.
func versionRequested(cmd *cobra.Command) error {
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
	return versionPrinted{}
}
