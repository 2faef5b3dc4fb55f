package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/kubeargs"
)

// One log stream. Every line the server writes after its barrier goes
// through klog, which the barrier configures once for the process from the
// components' -v, --vmodule and --logging-format (package scoping: one
// setting, different values are a conflict): the server's own messages
// (Logger), the harness and the components (klog.FromContext), embedded
// etcd (its zap logger bridged to that logger, components/etcd), and
// Go's standard log package (logs.InitLogs in main). The server's -v,
// --vmodule and --logging-format are shorthands passed to every component,
// as --feature-gates is, so that they are one setting; a component's own
// --kube-*-arg=v=N that differs is reported as a conflict. Before the
// barrier passed nothing is configured: the harness's lines wait for it
// (package heldlog), and a flag error or a conflict is one plain line on
// stderr, the last.

// Logging are the logging flags of server and agent.
type Logging struct {
	Verbosity string // -v; "" passes none
	VModule   string
	Format    string // --logging-format; "" passes none
	File      string // --log
}

// AddFlags adds -v, --vmodule, --logging-format and --log.
func (l *Logging) AddFlags(f *pflag.FlagSet) {
	f.StringVarP(&l.Verbosity, "v", "v", "", "Log verbosity (a number) for the whole process: passed to every component, which must not ask for another")
	f.StringVar(&l.VModule, "vmodule", "", "Per-file log verbosity, pattern=N,... (klog's), for the whole process")
	f.StringVar(&l.Format, "logging-format", "", "Log format for the whole process, text or json: the process's own lines, the harness, the components and embedded etcd (default text)")
	f.StringVarP(&l.File, "log", "l", "", "Write the log here (appended, created 0600) instead of stderr")
}

// Shorthands are the logging flags every component gets, after checking
// them: each error names the flag and its value.
func (l Logging) Shorthands() ([]kubeargs.Arg, error) {
	var out []kubeargs.Arg
	if l.Verbosity != "" {
		if n, err := strconv.ParseUint(l.Verbosity, 10, 31); err != nil {
			return nil, fmt.Errorf("-v=%s: want a log level, a number 0 or more", l.Verbosity)
		} else {
			out = append(out, kubeargs.Arg{Key: "v", Value: strconv.FormatUint(n, 10)})
		}
	}
	if l.VModule != "" {
		out = append(out, kubeargs.Arg{Key: "vmodule", Value: l.VModule})
	}
	switch l.Format {
	case "":
	case "text", "json":
		out = append(out, kubeargs.Arg{Key: "logging-format", Value: l.Format})
	default:
		return nil, fmt.Errorf("--logging-format=%s: want text or json", l.Format)
	}
	return out, nil
}

// Redirect sends the process's stderr, everything klog, etcd and the Go
// runtime write, to --log FILE (appended), as k3s's --log does; nothing
// without --log. FILE is opened by openLog; when that made it 0600, a
// warning says so on the stderr it replaces.
func (l Logging) Redirect() error {
	if l.File == "" {
		return nil
	}
	f, was, err := openLog(l.File)
	if err != nil {
		return err
	}
	defer f.Close()
	if was != 0 {
		fmt.Fprintf(os.Stderr, "Warning: --log=%s was open to group or others (mode %04o): made it 0600\n", l.File, was)
	}
	if err := dupStderr(f); err != nil {
		return fmt.Errorf("--log=%s: %w", l.File, err)
	}
	return nil
}

// openLog opens the log file for appending, never through a symbolic link
// at path (O_NOFOLLOW: one there is an error naming it, and what it points
// to is neither created nor written), creating it 0600. The log may carry
// what only root should read, so an existing regular file that group or
// others had any permission on is made 0600 (fchmod on what was opened, not
// the path again); was is its mode then, 0 when nothing changed. A device
// or a FIFO (--log=/dev/null) keeps its mode.
func openLog(path string) (f *os.File, was os.FileMode, err error) {
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|NoFollow, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, 0, fmt.Errorf("--log=%s: is a symbolic link: refusing to follow it; give the file it points to, or remove the link", path)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("--log=%s: %w", path, UnwrapPath(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("--log=%s: %w", path, UnwrapPath(err))
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o077 == 0 {
		return f, 0, nil
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("--log=%s: was open to group or others (mode %04o) and cannot be made 0600: %w", path, st.Mode().Perm(), UnwrapPath(err))
	}
	return f, st.Mode().Perm(), nil
}

// Logger is the binary's own: klog's, named k3s-like, configured by the
// barrier with the components' settings.
func Logger() logr.Logger { return klog.Background().WithName("k3s-like") }
