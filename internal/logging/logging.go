package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Formats accepted by --log-format.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// ParseLevel maps a --log-level value to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: must be one of debug, info, warn, error", s)
}

// New returns a logger writing to w in the given format ("text" or "json") at the given level.
func New(w io.Writer, format, level string) (*slog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(format) {
	case FormatText, "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case FormatJSON:
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q: must be text or json", format)
}

// Component returns the logger one component of the process uses.
func Component(l *slog.Logger, name string) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return l.With("component", name)
}

// Discard is a logger that drops everything; for tests that do not look at logs.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
