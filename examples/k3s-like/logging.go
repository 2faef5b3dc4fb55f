package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/kubeargs"
)

// One log stream. Every line the server writes after its barrier goes
// through klog, which the barrier configures once for the process from the
// components' -v, --vmodule and --logging-format (package scoping: one
// setting, different values are a conflict): the server's own messages
// (logger), the harness and the components (klog.FromContext), embedded
// etcd (its zap logger bridged to that logger, components/etcd), and
// Go's standard log package (logs.InitLogs in main). The server's -v,
// --vmodule and --logging-format are shorthands passed to every component,
// as --feature-gates is, so that they are one setting; a component's own
// --kube-*-arg=v=N that differs is reported as a conflict. Before the
// barrier passed nothing is configured: the harness's lines wait for it
// (package heldlog), and a flag error or a conflict is one plain line on
// stderr, the last.

// logging are the server's logging flags.
type logging struct {
	verbosity string // -v; "" passes none
	vmodule   string
	format    string // --logging-format; "" passes none
	file      string // --log
}

// shorthands are the logging flags every component gets, after checking
// them: each error names the flag and its value.
func (l logging) shorthands() ([]kubeargs.Arg, error) {
	var out []kubeargs.Arg
	if l.verbosity != "" {
		if n, err := strconv.ParseUint(l.verbosity, 10, 31); err != nil {
			return nil, fmt.Errorf("-v=%s: want a log level, a number 0 or more", l.verbosity)
		} else {
			out = append(out, kubeargs.Arg{Key: "v", Value: strconv.FormatUint(n, 10)})
		}
	}
	if l.vmodule != "" {
		out = append(out, kubeargs.Arg{Key: "vmodule", Value: l.vmodule})
	}
	switch l.format {
	case "":
	case "text", "json":
		out = append(out, kubeargs.Arg{Key: "logging-format", Value: l.format})
	default:
		return nil, fmt.Errorf("--logging-format=%s: want text or json", l.format)
	}
	return out, nil
}

// redirect sends the process's stderr, everything klog, etcd and the Go
// runtime write, to --log FILE (appended, created 0600), as k3s's --log
// does; nothing without --log.
func (l logging) redirect() error {
	if l.file == "" {
		return nil
	}
	f, err := os.OpenFile(l.file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("--log=%s: %w", l.file, unwrapPath(err))
	}
	defer f.Close()
	if err := dupStderr(f); err != nil {
		return fmt.Errorf("--log=%s: %w", l.file, err)
	}
	return nil
}

// logger is the server's own: klog's, named k3s-like, configured by the
// barrier with the components' settings.
func logger() logr.Logger { return klog.Background().WithName("k3s-like") }
