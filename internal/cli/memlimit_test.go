package cli

import (
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestApplyGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	log := slog.New(slog.DiscardHandler)
	applyGCPercent(50, []string{"GOGC=200"}, log) // the operator's GOGC wins
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC set in the environment, yet the target became %d", got)
	}
	applyGCPercent(0, nil, log) // 0 leaves the runtime's value
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("0 changed the target to %d", got)
	}
	applyGCPercent(50, []string{"HOME=/root"}, log)
	if got := debug.SetGCPercent(100); got != 50 {
		t.Fatalf("target %d, want 50", got)
	}
}
