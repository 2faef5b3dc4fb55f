package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"

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
// barrier passed nothing is configured: a flag error or a conflict is one
// plain line on stderr, the last.

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

// heldLogs is a logr.LogSink that holds what is logged until release, then
// writes it, and everything after, through klog.Background() as it is then.
// The harness logs its parse phase before the barrier configures klog; held
// until then, those lines come out in the format the barrier chose, not in
// klog's default text ahead of a JSON stream.
type heldLogs struct {
	shared *heldShared
	names  []string
	values []any
}

type heldShared struct {
	mu       sync.Mutex
	released bool
	held     []heldEntry
}

type heldEntry struct {
	names  []string
	values []any
	level  int
	err    error
	isErr  bool
	msg    string
	kv     []any
}

// newHeldLogger returns the logger and the function that releases it: the
// held lines are written in order, and later ones directly.
func newHeldLogger() (logr.Logger, func()) {
	s := &heldShared{}
	release := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.released {
			return
		}
		s.released = true
		for _, e := range s.held {
			e.write()
		}
		s.held = nil
	}
	return logr.New(&heldLogs{shared: s}), release
}

// write logs e through klog. Written directly (after release), the caller
// klog reports is the one that logged: four frames up (logr's Info or
// Error, heldLogs' Info or Error, heldLogs.log, write); a held line reports
// where it was released.
func (e heldEntry) write() {
	l := klog.Background().WithCallDepth(4)
	for _, n := range e.names {
		l = l.WithName(n)
	}
	l = l.WithValues(e.values...)
	if e.isErr {
		l.Error(e.err, e.msg, e.kv...)
		return
	}
	l.V(e.level).Info(e.msg, e.kv...)
}

func (h *heldLogs) log(e heldEntry) {
	e.names, e.values = h.names, h.values
	h.shared.mu.Lock()
	if !h.shared.released {
		h.shared.held = append(h.shared.held, e)
		h.shared.mu.Unlock()
		return
	}
	h.shared.mu.Unlock()
	e.write()
}

// Init is logr.LogSink's; call depths are klog's own after release.
func (h *heldLogs) Init(logr.RuntimeInfo) {}

// Enabled holds every level until release (the verbosity is not known
// yet), then asks klog.
func (h *heldLogs) Enabled(level int) bool {
	h.shared.mu.Lock()
	released := h.shared.released
	h.shared.mu.Unlock()
	return !released || klog.V(klog.Level(level)).Enabled()
}

// Info is logr.LogSink's.
func (h *heldLogs) Info(level int, msg string, kv ...any) {
	h.log(heldEntry{level: level, msg: msg, kv: kv})
}

// Error is logr.LogSink's.
func (h *heldLogs) Error(err error, msg string, kv ...any) {
	h.log(heldEntry{isErr: true, err: err, msg: msg, kv: kv})
}

// WithValues is logr.LogSink's. A pair it already has, the same key with
// the same value, is not added again: the harness names each component's
// logger ("component") and so does the component's adapter.
func (h *heldLogs) WithValues(kv ...any) logr.LogSink {
	values := slices.Clip(h.values)
	for i := 0; i+1 < len(kv); i += 2 {
		if !hasPair(values, kv[i], kv[i+1]) {
			values = append(values, kv[i], kv[i+1])
		}
	}
	if len(kv)%2 == 1 {
		values = append(values, kv[len(kv)-1])
	}
	return &heldLogs{shared: h.shared, names: h.names, values: values}
}

// hasPair reports whether kv has key with value, both strings (values of
// other types are never the same: == on them could panic).
func hasPair(kv []any, key, value any) bool {
	k, ok := key.(string)
	v, ok2 := value.(string)
	if !ok || !ok2 {
		return false
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if k2, ok := kv[i].(string); ok && k2 == k {
			if v2, ok := kv[i+1].(string); ok && v2 == v {
				return true
			}
		}
	}
	return false
}

// WithName is logr.LogSink's.
func (h *heldLogs) WithName(name string) logr.LogSink {
	return &heldLogs{shared: h.shared, names: append(slices.Clip(h.names), name), values: h.values}
}
