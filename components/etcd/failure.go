package etcd

import (
	"fmt"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// DataDirError is what the embedded etcd gave up with: a zap Panic or Fatal
// entry of its server logger, which etcd logs where it cannot go on, with
// the entry's "error" field. Most such entries name no file ("failed to
// create WAL", "failed to save Raft hard state and entries": "no space
// left on device"), so the data dir is added. Run returns one when etcd
// gives up while starting; match it with errors.As. Example message:
//
//	embedded etcd: data dir /var/lib/k3s-like/etcd: failed to create WAL: no space left on device
type DataDirError struct {
	DataDir string // Config.DataDir
	Message string // etcd's message
	Err     error  // the entry's "error" field; nil if it has none
}

func (f *DataDirError) Error() string {
	if f.Err == nil {
		return fmt.Sprintf("embedded etcd: data dir %s: %s", f.DataDir, f.Message)
	}
	return fmt.Sprintf("embedded etcd: data dir %s: %s: %v", f.DataDir, f.Message, f.Err)
}

// Unwrap returns the entry's error (syscall.ENOSPC for a full disk, say).
func (f *DataDirError) Unwrap() error { return f.Err }

func newFailure(dataDir string, ce *zapcore.CheckedEntry, fields []zapcore.Field) *DataDirError {
	f := &DataDirError{DataDir: dataDir, Message: ce.Message}
	for _, field := range fields {
		if field.Type == zapcore.ErrorType && field.Key == "error" {
			f.Err, _ = field.Interface.(error)
			break
		}
	}
	return f
}

// failureHooks are the server logger's options for etcd's Panic and Fatal
// entries, logged once etcd's own line is written:
//
//   - Panic (etcd's start, e.g. "failed to create WAL" on a full disk)
//     panics with a *DataDirError, which catchFailure returns as Run's error: the
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
// error, or the *DataDirError etcd's server logger panicked with meanwhile
// (panicHook). Any other panic goes on.
func catchFailure(start func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*DataDirError)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return start()
}
