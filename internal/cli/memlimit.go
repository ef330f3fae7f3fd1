package cli

import (
	"log/slog"
	"runtime/debug"
	"strings"
)

// codeReserve is the part of a process's resident memory the Go runtime does not count
// against its memory limit: file-backed pages, mostly the executable's code and read-only
// data (42 MiB resident in a busy bookie, /proc/<pid>/status RssFile), plus a few MiB for
// what Pebble allocates outside the Go heap (cgo). The bookie's limit leaves room for them
// so its whole RSS, not only its heap, stays within the caches plus memoryHeadroom: with
// 40 MiB the peak was 202-207 MiB against the 200 MiB bound, with 48 MiB 189 MiB.
const codeReserve = 48 << 20

// applyGCPercent sets the garbage collector's target to percent unless it is 0 or GOGC is
// set in environ (the operator's value wins).
func applyGCPercent(percent int, environ []string, logger *slog.Logger) {
	if percent == 0 || envSet(environ, "GOGC") {
		return
	}
	debug.SetGCPercent(percent)
	logger.Debug("garbage collector target", "percent", percent)
}

// applyMemoryLimit sets the Go runtime's soft memory limit to limit bytes unless GOMEMLIMIT
// is set in environ (the operator's value wins).
func applyMemoryLimit(limit int64, environ []string, logger *slog.Logger) {
	if envSet(environ, "GOMEMLIMIT") {
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Debug("soft memory limit", "bytes", limit)
}

// envSet reports whether environ (os.Environ's form) sets name.
func envSet(environ []string, name string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}
