package cli

import (
	"context"
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
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

func TestLimitFloor(t *testing.T) {
	const mib = 1 << 20
	base := int64(208 * mib)
	// Mostly caches: what is live fits under the configured limit with slack to spare.
	if got := limitFloor(base, memSample{live: 100 * mib, unused: 8 * mib, nonHeap: 20 * mib, gcPercent: 50}); got != base {
		t.Fatalf("small live heap: limit %d MiB, want the configured %d", got/mib, base/mib)
	}
	// 10,000 topics: 150 MiB live, 40 MiB of stacks. The configured limit is below what is
	// live; the floor keeps a quarter of the live heap (GOGC 50 / 2) as slack.
	got := limitFloor(base, memSample{live: 150 * mib, unused: 10 * mib, nonHeap: 40 * mib, gcPercent: 50})
	if want := int64((40 + 10 + 150 + 150/4) * mib); got < want-mib || got > want+mib {
		t.Fatalf("large live heap: limit %d MiB, want about %d", got/mib, want/mib)
	}
	// GOGC=off reports a negative target: Go's default slack is taken.
	if got := limitFloor(0, memSample{live: 100 * mib, gcPercent: -1}); got != 150*mib {
		t.Fatalf("GOGC off: limit %d MiB, want 150", got/mib)
	}
}

// TestMemoryGovernor runs the governor against this process's real heap: a live heap far
// above the configured limit lifts the limit over it, and releasing it brings the limit back.
func TestMemoryGovernor(t *testing.T) {
	const mib = 1 << 20
	prev := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(prev)
	base := int64(48 * mib)
	debug.SetMemoryLimit(base)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		governMemoryLimit(ctx, base, time.Millisecond, slog.New(slog.DiscardHandler))
	}()
	defer func() { cancel(); <-done }()

	// 128 MiB live in pointer-free blocks, as a broker's per-topic state would be.
	live := make([][]byte, 128)
	for i := range live {
		live[i] = make([]byte, mib)
		live[i][0] = byte(i)
	}
	waitLimit := func(what string, ok func(int64) bool) int64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			runtime.GC()
			l := debug.SetMemoryLimit(-1)
			if ok(l) {
				return l
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: soft memory limit still %d MiB", what, l/mib)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	got := waitLimit("128 MiB live over a 48 MiB limit", func(l int64) bool { return l >= 160*mib })
	runtime.KeepAlive(live)
	t.Logf("limit with 128 MiB live: %d MiB", got/mib)

	live = nil
	waitLimit("live heap released", func(l int64) bool { return l == base })
}
