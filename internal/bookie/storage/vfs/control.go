package vfs

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Fault control for tests over real processes. `magnetar bookie --test-fault-control FILE`
// (a hidden, test-only flag) opens the storage on a FaultFS and applies what FILE says,
// re-read every 100 ms: a line "full" makes the disk full, "syncfail" makes every sync fail,
// "index" scopes those two to the Pebble index's files (SetOnly), "lazy" records unsynced
// writes in undoDir so that RevertUnsynced can drop them after a kill (undo.go); anything
// else (or no file) is a healthy disk. The chaos harness writes the file.

// ApplyFaultFile applies the faults path names now and returns the words it applied.
func ApplyFaultFile(path, undoDir string, f *FaultFS, log *slog.Logger) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	full, sync, lazy, index := false, false, false, false
	for _, w := range strings.Fields(s) {
		full = full || w == "full"
		sync = sync || w == "syncfail"
		lazy = lazy || w == "lazy"
		index = index || w == "index"
	}
	if index {
		f.SetOnly(InIndexDir)
	} else {
		f.SetOnly(nil)
	}
	f.SetFull(full)
	f.SetSyncFails(sync)
	dir := ""
	if lazy {
		dir = undoDir
	}
	if err := f.SetUndoDir(dir); err != nil {
		log.Error("test fault control: undo directory", "dir", dir, "err", err)
	}
	if s != "" {
		log.Warn("test fault control: disk faults", "full", full, "syncfail", sync, "lazy", lazy, "index_only", index)
	}
	return s
}

// InIndexDir tells whether name is in a directory named index: the Pebble index's files
// (the storage keeps them in <ledgers>/index).
func InIndexDir(name string) bool {
	return strings.Contains(filepath.ToSlash(name), "/index/")
}

// ControlFaults re-applies path every 100 ms, when it changed, until ctx ends.
func ControlFaults(ctx context.Context, path, undoDir string, f *FaultFS, log *slog.Logger) {
	last := ApplyFaultFile(path, undoDir, f, log)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if b, _ := os.ReadFile(path); strings.TrimSpace(string(b)) != last {
			last = ApplyFaultFile(path, undoDir, f, log)
		}
	}
}
