package etcd

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// NewZapLogger returns a zap logger that writes into logger, for etcd's
// server and client (which take a *zap.Logger): entries below level
// (debug, info, warn, error, dpanic, panic, fatal) are dropped; error and
// above become logger.Error (with the entry's "error" field as the error),
// warn and info logger.Info, debug logger.V(4).Info. A zap logger's name
// becomes a logr name, its fields key/value pairs. Caller and stack are
// left to logger; the caller logged is etcd's, for its zap.Logger's Debug,
// Info, Warn and Error.
func NewZapLogger(logger logr.Logger, level string) (*zap.Logger, error) {
	return newZapLogger(logger, level, nil)
}

// newZapLogger is NewZapLogger; once closing is true, the warnings and
// errors etcd logs about its own listeners being closed (net.ErrClosed,
// http.ErrServerClosed) are logged as logger.V(2).Info: Close logs them as
// errors on every clean stop. opts are the zap logger's (failureHooks).
func newZapLogger(logger logr.Logger, level string, closing *atomic.Bool, opts ...zap.Option) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("etcd: log level: %w", err)
	}
	// Write, CheckedEntry.Write, zap.Logger.Warn (say), then etcd's caller.
	return zap.New(&logrCore{LevelEnabler: lvl, logger: logger.WithCallDepth(3), closing: closing}, opts...), nil
}

// logrCore is a zapcore.Core that forwards entries to a logr.Logger.
type logrCore struct {
	zapcore.LevelEnabler
	logger  logr.Logger
	fields  []zapcore.Field // from With
	closing *atomic.Bool    // nil: never closing
}

func (c *logrCore) With(fields []zapcore.Field) zapcore.Core {
	return &logrCore{LevelEnabler: c.LevelEnabler, logger: c.logger, fields: slices.Concat(c.fields, fields), closing: c.closing}
}

func (c *logrCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *logrCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	l := c.logger
	if ent.LoggerName != "" {
		l = l.WithName(ent.LoggerName)
	}
	var (
		kv  []any
		err error
	)
	for _, f := range slices.Concat(c.fields, fields) {
		if f.Type == zapcore.ErrorType && f.Key == "error" && err == nil {
			err, _ = f.Interface.(error)
			continue
		}
		enc := zapcore.NewMapObjectEncoder()
		f.AddTo(enc)
		for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
			kv = append(kv, k, enc.Fields[k])
		}
	}
	switch {
	case ent.Level >= zapcore.WarnLevel && c.closing != nil && c.closing.Load() && closedListener(err):
		l.V(2).Info(ent.Message, append(kv, "err", err)...)
	case ent.Level >= zapcore.ErrorLevel:
		l.Error(err, ent.Message, kv...)
	case ent.Level >= zapcore.InfoLevel:
		if err != nil {
			kv = append(kv, "err", err)
		}
		l.Info(ent.Message, kv...)
	default:
		if err != nil {
			kv = append(kv, "err", err)
		}
		l.V(4).Info(ent.Message, kv...)
	}
	return nil
}

func (c *logrCore) Sync() error { return nil }

// closedListener reports whether err says that a listener or server was
// closed.
func closedListener(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, http.ErrServerClosed)
}

// nopZap is a zap logger that discards, for etcd code whose log says
// nothing its caller's error does not.
func nopZap() *zap.Logger { return zap.NewNop() }
