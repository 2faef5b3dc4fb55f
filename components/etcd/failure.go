package etcd

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// failure is what the embedded etcd gave up with: a zap Panic or Fatal
// entry of its server logger, which etcd logs where it cannot go on, with
// the entry's "error" field; most name no file ("failed to create WAL",
// "failed to save Raft hard state and entries": "no space left on
// device"), so the data dir is added.
type failure struct {
	dataDir string
	msg     string
	err     error // the entry's "error" field; nil if it has none
}

func (f *failure) Error() string {
	if f.err == nil {
		return fmt.Sprintf("embedded etcd: data dir %s: %s", f.dataDir, f.msg)
	}
	return fmt.Sprintf("embedded etcd: data dir %s: %s: %v", f.dataDir, f.msg, f.err)
}

func (f *failure) Unwrap() error { return f.err }

func newFailure(dataDir string, ce *zapcore.CheckedEntry, fields []zapcore.Field) *failure {
	f := &failure{dataDir: dataDir, msg: ce.Message}
	for _, field := range fields {
		if field.Type == zapcore.ErrorType && field.Key == "error" {
			f.err, _ = field.Interface.(error)
			break
		}
	}
	return f
}

// failureHooks are the server logger's options for etcd's Panic and Fatal
// entries, logged once etcd's own line is written:
//
//   - Panic (etcd's start, e.g. "failed to create WAL" on a full disk)
//     panics with a *failure, which catchFailure returns as Run's error: the
//     harness stops the control plane and the process exits 1 with a line
//     that names the data dir, not with a stack trace. A Panic in another
//     goroutine of etcd's still crashes the process, with that error as
//     the panic's value.
//   - Fatal (mostly at run time, e.g. "failed to commit tx" or "failed to
//     save Raft hard state and entries" on a full disk) still exits the
//     process at once with status 1, as etcd means it to: the goroutine
//     that logged it must not go on, and nothing else may persist after
//     it. Before that it logs the failure naming the data dir through
//     logger and flushes klog (zap's default exit flushes nothing).
//
// exit is os.Exit but in tests.
func failureHooks(dataDir string, logger logr.Logger, exit func(int)) []zap.Option {
	return []zap.Option{
		zap.WithPanicHook(panicHook{dataDir: dataDir}),
		zap.WithFatalHook(fatalHook{dataDir: dataDir, logger: logger, exit: exit}),
	}
}

type panicHook struct{ dataDir string }

func (h panicHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	panic(newFailure(h.dataDir, ce, fields))
}

type fatalHook struct {
	dataDir string
	logger  logr.Logger
	exit    func(int)
}

func (h fatalHook) OnWrite(ce *zapcore.CheckedEntry, fields []zapcore.Field) {
	h.logger.Error(newFailure(h.dataDir, ce, fields), "Exiting: embedded etcd cannot go on")
	klog.Flush()
	h.exit(1)
}

// catchFailure runs start (embed.StartEtcd, in Run) and returns its
// error, or the *failure etcd's server logger panicked with meanwhile
// (panicHook). Any other panic goes on.
func catchFailure(start func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*failure)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return start()
}
