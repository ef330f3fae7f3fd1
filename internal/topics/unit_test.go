package topics

import (
	"fmt"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
)

func TestMurmur3(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint32
	}{
		{"", 0},
		{"hello", 0x248bfa47},
		{"The quick brown fox jumps over the lazy dog", 0x2e4ff723},
	} {
		if got := murmur3(tc.in, 0); got != tc.want {
			t.Errorf("murmur3(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

// rateMeter measures over the time between observations, at least rateMinInterval apart,
// and treats a counter that went backwards (a reloaded topic) as a restart.
func TestRateMeter(t *testing.T) {
	var m rateMeter
	t0 := time.Unix(1000, 0)
	if r := m.observe(t0, [4]int64{100, 0, 1000, 0}); r != ([4]float64{}) {
		t.Fatalf("first observation: %v, want zeros", r)
	}
	r := m.observe(t0.Add(2*time.Second), [4]int64{300, 50, 5000, 10})
	if r != ([4]float64{100, 25, 2000, 5}) {
		t.Fatalf("rates over 2 s: %v", r)
	}
	// Too close to measure: the previous rates again, and the baseline stays.
	if r2 := m.observe(t0.Add(2500*time.Millisecond), [4]int64{10000, 50, 5000, 10}); r2 != r {
		t.Fatalf("observation 0.5 s later: %v, want %v", r2, r)
	}
	r = m.observe(t0.Add(4*time.Second), [4]int64{20, 50, 5000, 30})
	if r != ([4]float64{0, 0, 0, 10}) {
		t.Fatalf("after a counter restart: %v", r)
	}
}

func TestDelayedTrackerOrder(t *testing.T) {
	d := &delayedTracker{set: map[Position]bool{}}
	d.add(Position{LedgerID: 1, EntryID: 5}, 300)
	d.add(Position{LedgerID: 1, EntryID: 2}, 100)
	d.add(Position{LedgerID: 1, EntryID: 9}, 100)
	d.add(Position{LedgerID: 1, EntryID: 2}, 100) // duplicate: ignored
	if d.len() != 3 || !d.has(Position{LedgerID: 1, EntryID: 9}) {
		t.Fatalf("len %d", d.len())
	}
	if due := d.popDue(50, 10, false); len(due) != 0 {
		t.Fatalf("due before time: %v", due)
	}
	due := d.popDue(200, 10, false)
	if len(due) != 2 || due[0].pos != (Position{LedgerID: 1, EntryID: 2}) || due[1].pos != (Position{LedgerID: 1, EntryID: 9}) || d.has(Position{LedgerID: 1, EntryID: 2}) {
		t.Fatalf("due %v", due)
	}
	if all := d.popDue(0, 10, true); len(all) != 1 || d.len() != 0 {
		t.Fatalf("forced %v", all)
	}
	var nilTracker *delayedTracker
	if nilTracker.len() != 0 || nilTracker.has(Position{}) {
		t.Fatal("nil tracker not empty")
	}
}

// TestDedupVerdicts covers the decision table without storage.
func TestDedupVerdicts(t *testing.T) {
	cfg := config.DefaultBrokerConfig()
	cfg.Policies.BrokerDeduplicationMaxNumberOfProducers = 2
	tp := &Topic{s: &Service{cfg: cfg}, logg: testLogger(t), full: "persistent://public/default/verdicts"}
	d := newDedup(tp)
	if v := d.check("p", 0, 0); v != dedupNew {
		t.Fatalf("disabled: %v", v)
	}
	d.enabled = true
	d.on.Store(true)
	want := func(what string, got, exp dedupVerdict) {
		t.Helper()
		if got != exp {
			t.Fatalf("%s: verdict %d, want %d", what, got, exp)
		}
	}
	want("first", d.check("p", 0, 4), dedupNew)         // batch 0..4
	want("in flight", d.check("p", 0, 4), dedupUnknown) // not persisted yet
	d.appended("p", 4, Position{LedgerID: 1, EntryID: 0}, nil)
	want("persisted", d.check("p", 2, 2), dedupDuplicate)
	want("partly new batch stored whole", d.check("p", 3, 7), dedupNew)
	d.appended("p", 7, Position{LedgerID: 1, EntryID: 1}, fmt.Errorf("bookies down"))
	want("failed append can be resent", d.check("p", 5, 7), dedupNew)
	d.appended("p", 7, Position{LedgerID: 1, EntryID: 2}, nil)
	if got := d.lastSequence("p"); got != 7 {
		t.Fatalf("lastSequence %d", got)
	}
	if got := d.lastSequence("nobody"); got != -1 {
		t.Fatalf("lastSequence of unknown producer %d", got)
	}
	d.check("q", 0, 0)
	d.check("r", 0, 0) // evicts the least recently used ("p")
	if len(d.producers) != 2 || d.producers["p"] != nil {
		t.Fatalf("producers after eviction: %v", d.producers)
	}
	var nilDedup *dedup
	if nilDedup.check("p", 1, 1) != dedupNew || nilDedup.lastSequence("p") != -1 {
		t.Fatal("nil dedup must let everything through")
	}
}

// TestKeyBlockedRules checks the two ordering rules and allow_out_of_order_delivery
// directly on the subscription's state.
func TestKeyBlockedRules(t *testing.T) {
	s := &Subscription{}
	old, newcomer, relaxed := &Consumer{}, &Consumer{}, &Consumer{outOfOrder: true}
	s.holdSlotLocked(old, 7)
	s.holdSlotLocked(old, 7)
	if !s.keyBlockedLocked(newcomer, 7, Position{LedgerID: 1, EntryID: 1}) || s.keyBlockedLocked(old, 7, Position{LedgerID: 1, EntryID: 1}) {
		t.Fatal("draining slot: only its holder may receive")
	}
	if s.keyBlockedLocked(relaxed, 7, Position{LedgerID: 1, EntryID: 1}) || s.keyBlockedLocked(newcomer, 8, Position{LedgerID: 1, EntryID: 1}) {
		t.Fatal("out-of-order consumer or another slot blocked")
	}
	s.releaseSlotLocked(7)
	if !s.keyBlockedLocked(newcomer, 7, Position{LedgerID: 1, EntryID: 1}) {
		t.Fatal("slot free while one entry is still pending")
	}
	s.releaseSlotLocked(7)
	if s.keyBlockedLocked(newcomer, 7, Position{LedgerID: 1, EntryID: 1}) || !s.slotFreed {
		t.Fatal("slot still held after draining")
	}
}
