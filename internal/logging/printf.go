package logging

import (
	"fmt"
	"log/slog"
)

// Printf adapts a slog.Logger to the Infof/Errorf/Fatalf logger of libraries such as Pebble
// (it satisfies pebble.Logger without this package importing Pebble): Infof goes to debug,
// Errorf to error, and Fatalf, which such a library calls on a broken invariant of its own
// and does not expect to return from, logs and panics.
type Printf struct{ Log *slog.Logger }

// Infof logs at debug level.
func (l Printf) Infof(format string, args ...any) { l.Log.Debug(fmt.Sprintf(format, args...)) }

// Errorf logs at error level.
func (l Printf) Errorf(format string, args ...any) { l.Log.Error(fmt.Sprintf(format, args...)) }

// Fatalf logs at error level and panics.
func (l Printf) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.Log.Error("fatal library error", "msg", msg)
	panic(msg)
}
