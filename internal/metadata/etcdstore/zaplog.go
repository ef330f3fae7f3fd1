package etcdstore

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// zapToSlog returns a zap logger that forwards entries at warn and above to logger. etcd's
// server and client log through zap; routing them here keeps one log stream in the process,
// and the warn floor keeps etcd's chatty info lines (raft ticks, member attributes) out of it.
func zapToSlog(logger *slog.Logger) *zap.Logger {
	return zapToSlogQuiet(logger, nil)
}

// zapToSlogQuiet is zapToSlog with a switch: once quiet is set (the member is shutting down)
// everything goes to debug, since etcd reports each listener it closes as a failure.
func zapToSlogQuiet(logger *slog.Logger, quiet *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{logger: logger, min: zapcore.WarnLevel, quiet: quiet})
}

// demoted are etcd warnings that are expected in our setup and say nothing actionable: one
// port for gRPC and HTTP is what we want; the simple auth token is unused (auth is off); the
// schema-version pair is logged once by every fresh member before its first snapshot.
var demoted = map[string]bool{
	"Running http and grpc server on single port. This is not recommended for production.": true,
	"simple token is not cryptographically signed":                                         true,
	"Failed to detect schema version":                                                      true,
	"failed to update storage version":                                                     true,
}

// slogCore is a zapcore.Core writing to a slog.Logger.
type slogCore struct {
	logger *slog.Logger
	min    zapcore.Level
	quiet  *atomic.Bool
	fields []zapcore.Field
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= c.min }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{logger: c.logger, min: c.min, quiet: c.quiet, fields: append(slices.Clip(c.fields), fields...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("etcdLogger", e.LoggerName))
	}
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	level := slogLevel(e.Level)
	if demoted[e.Message] || (c.quiet != nil && c.quiet.Load()) {
		level = slog.LevelDebug
	}
	c.logger.LogAttrs(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }

func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default: // error, dpanic, panic, fatal: zap itself decides whether to panic or exit
		return slog.LevelError
	}
}
