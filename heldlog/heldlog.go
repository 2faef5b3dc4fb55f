package heldlog

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// New returns the logger and the function that releases it: the held
// lines are written in order through klog.Background() as it is then, and
// later ones directly. Calling release again does nothing.
func New() (logger logr.Logger, release func()) {
	s := &shared{}
	return logr.New(&sink{shared: s}), s.release
}

// sink is the logr.LogSink of New's logger: its names and values, and the
// state every logger derived from it shares.
type sink struct {
	shared *shared
	names  []string
	values []any
}

type shared struct {
	mu       sync.Mutex
	released bool
	held     []entry
}

// entry is one line logged: by which logger (names, values), and what.
type entry struct {
	names  []string
	values []any
	level  int
	err    error
	isErr  bool
	msg    string
	kv     []any
}

func (s *shared) release() {
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

// write logs e through klog. Written directly (after release), the caller
// klog reports is the one that logged: four frames up (logr's Info or
// Error, sink's Info or Error, sink.log, write); a held line reports where
// it was released.
func (e entry) write() {
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

func (h *sink) log(e entry) {
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
func (h *sink) Init(logr.RuntimeInfo) {}

// Enabled holds every level until release (the verbosity is not known
// yet), then asks klog.
func (h *sink) Enabled(level int) bool {
	h.shared.mu.Lock()
	released := h.shared.released
	h.shared.mu.Unlock()
	return !released || klog.V(klog.Level(level)).Enabled()
}

// Info is logr.LogSink's.
func (h *sink) Info(level int, msg string, kv ...any) {
	h.log(entry{level: level, msg: msg, kv: kv})
}

// Error is logr.LogSink's.
func (h *sink) Error(err error, msg string, kv ...any) {
	h.log(entry{isErr: true, err: err, msg: msg, kv: kv})
}

// WithValues is logr.LogSink's. A pair it already has, the same key with
// the same value, is not added again.
func (h *sink) WithValues(kv ...any) logr.LogSink {
	values := slices.Clip(h.values)
	for i := 0; i+1 < len(kv); i += 2 {
		if !hasPair(values, kv[i], kv[i+1]) {
			values = append(values, kv[i], kv[i+1])
		}
	}
	if len(kv)%2 == 1 {
		values = append(values, kv[len(kv)-1])
	}
	return &sink{shared: h.shared, names: h.names, values: values}
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
func (h *sink) WithName(name string) logr.LogSink {
	return &sink{shared: h.shared, names: append(slices.Clip(h.names), name), values: h.values}
}
