package managedledger

import (
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func TestCursorAcksAndMarkDelete(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/c", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	ps := addN(t, ml, 10, "x") // ledgers of 3,3,3,1 entries
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	if c.Backlog() != 10 {
		t.Fatalf("backlog %d", c.Backlog())
	}
	// Out of order individual acks, then fill the gap: the mark-delete position moves over
	// the acked spans across ledger boundaries.
	must(t, c.Delete(ps[5], ps[3], ps[4], ps[1]))
	wantPos(t, "mark-delete", c.MarkDeletePosition(), prevPosition(ps[0]))
	must(t, c.Delete(ps[0]))
	wantPos(t, "mark-delete after gap filled", c.MarkDeletePosition(), ps[1])
	must(t, c.Delete(ps[2]))
	wantPos(t, "mark-delete across ledgers", c.MarkDeletePosition(), ps[5])
	if c.Backlog() != 4 || len(c.IndividuallyDeletedRanges()) != 0 {
		t.Fatalf("backlog %d ranges %v", c.Backlog(), c.IndividuallyDeletedRanges())
	}
	// Reads skip individually acked entries.
	must(t, c.Delete(ps[7]))
	var got []Position
	for _, en := range readAll(t, c) {
		got = append(got, en.Position)
	}
	if len(got) != 3 || got[0] != ps[6] || got[1] != ps[8] || got[2] != ps[9] {
		t.Fatalf("read %v", got)
	}
	// Cumulative ack is a no-op backwards, an error beyond the end.
	must(t, c.MarkDelete(ps[2]))
	wantPos(t, "mark-delete", c.MarkDeletePosition(), ps[5])
	if err := c.MarkDelete(Position{ps[9].LedgerID, ps[9].EntryID + 5}); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("mark-delete beyond end: %v", err)
	}
	must(t, c.MarkDelete(ps[8]))
	if c.Backlog() != 1 || c.MessagesConsumed() != 9 {
		t.Fatalf("backlog %d consumed %d", c.Backlog(), c.MessagesConsumed())
	}
}

func TestCursorSkipResetRewindReplay(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/c", func(c *Config) { c.MaxEntriesPerLedger = 4 })
	ps := addN(t, ml, 12, "x")
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	must(t, c.Delete(ps[1], ps[2], ps[6]))
	// Skip 4 unacked entries: 0,3,4,5 -> mark-delete at 5, then 6 is folded in.
	must(t, c.Skip(4))
	wantPos(t, "after skip", c.MarkDeletePosition(), ps[6])
	if c.Backlog() != 5 {
		t.Fatalf("backlog after skip %d", c.Backlog())
	}
	es, err := c.ReadEntries(ctxT(t), 2, 0)
	must(t, err)
	if len(es) != 2 || es[0].Position != ps[7] {
		t.Fatalf("read after skip %v", es)
	}
	c.Rewind()
	wantPos(t, "read position after rewind", c.ReadPosition(), ps[7])
	// Replay specific positions: acked ones are left out.
	rs, err := c.ReadPositions(ctxT(t), []Position{ps[9], ps[2], ps[8], ps[9]})
	must(t, err)
	if len(rs) != 2 || rs[0].Position != ps[8] || rs[1].Position != ps[9] {
		t.Fatalf("replay %v", rs)
	}
	must(t, c.ResetCursor(ctxT(t), ps[3]))
	wantPos(t, "mark-delete after reset", c.MarkDeletePosition(), ps[2])
	wantPos(t, "read position after reset", c.ReadPosition(), ps[3])
	if c.Backlog() != 9 {
		t.Fatalf("backlog after reset %d", c.Backlog())
	}
	c.Seek(ps[10])
	es, err = c.ReadEntries(ctxT(t), 10, 0)
	must(t, err)
	if len(es) != 2 || es[0].Position != ps[10] {
		t.Fatalf("read after seek %v", es)
	}
	must(t, c.SkipToEnd())
	if c.Backlog() != 0 || c.HasMoreEntries() {
		t.Fatalf("backlog after skip to end %d", c.Backlog())
	}
	must(t, c.ResetCursor(ctxT(t), Earliest))
	if c.Backlog() != 12 {
		t.Fatalf("backlog after reset to earliest %d", c.Backlog())
	}
}

func TestReadBatchLimits(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/c", nil)
	for i := 0; i < 10; i++ {
		_, err := ml.Add(ctxT(t), make([]byte, 100))
		must(t, err)
	}
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	es, err := c.ReadEntries(ctxT(t), 10, 250)
	must(t, err)
	if len(es) != 2 {
		t.Fatalf("maxBytes 250 gave %d entries of 100 bytes", len(es))
	}
	es, err = c.ReadEntries(ctxT(t), 10, 1)
	must(t, err)
	if len(es) != 1 {
		t.Fatalf("maxBytes 1 gave %d entries, want at least one", len(es))
	}
	es, err = c.ReadEntries(ctxT(t), 3, 0)
	must(t, err)
	if len(es) != 3 || es[0].Position.EntryID != 3 {
		t.Fatalf("third read %v", es)
	}
}

func TestNonDurableCursor(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/nd", nil)
	ps := addN(t, ml, 5, "x")
	r, err := ml.NewNonDurableCursor(ps[2], true)
	must(t, err)
	es := readAll(t, r)
	if len(es) != 3 || es[0].Position != ps[2] {
		t.Fatalf("inclusive reader read %v", es)
	}
	r2, err := ml.NewNonDurableCursor(ps[2], false)
	must(t, err)
	if es := readAll(t, r2); len(es) != 2 {
		t.Fatalf("exclusive reader read %d", len(es))
	}
	r3, err := ml.NewNonDurableCursor(Latest, false)
	must(t, err)
	if r3.HasMoreEntries() {
		t.Fatal("latest reader has entries")
	}
	if len(ml.Cursors()) != 0 {
		t.Fatal("non-durable cursors listed as durable")
	}
	if _, err := e.store.Get(ctxT(t), ml.f.cursorKey(ml.name, r.Name())); err == nil {
		t.Fatal("non-durable cursor persisted")
	}
	must(t, r.Close(ctxT(t)))
	if _, err := r.ReadEntries(ctxT(t), 1, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("read on closed reader: %v", err)
	}
}

func publishTimeOf(b []byte) (time.Time, error) {
	if len(b) < 8 {
		return time.Time{}, errors.New("short entry")
	}
	return time.UnixMilli(int64(binary.BigEndian.Uint64(b))), nil
}

func stamped(ms int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(ms)) }

func TestResetToPublishTimeAndTTL(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/time", func(c *Config) { c.MaxEntriesPerLedger = 7 })
	base := e.clock.Now().UnixMilli()
	var ps []Position
	for i := 0; i < 30; i++ {
		p, err := ml.Add(ctxT(t), stamped(base+int64(i)*1000))
		must(t, err)
		ps = append(ps, p)
	}
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionLatest)
	must(t, err)
	must(t, c.ResetToPublishTime(ctxT(t), time.UnixMilli(base+12_500), publishTimeOf))
	wantPos(t, "read position after reset by time", c.ReadPosition(), ps[13])
	// TTL of 10s at base+29s: entries published before base+19s expire.
	e.clock.Advance(29 * time.Second)
	n, err := ml.Retention().ExpireMessages(ctxT(t), 10*time.Second, publishTimeOf)
	must(t, err)
	wantPos(t, "mark-delete after TTL", c.MarkDeletePosition(), ps[18])
	if n != 6 {
		t.Fatalf("expired %d, want 6", n)
	}
	pos, err := ml.FindByPublishTime(ctxT(t), time.UnixMilli(base+100_000), publishTimeOf)
	must(t, err)
	wantPos(t, "find past the end", pos, ml.normalize(Position{ps[29].LedgerID, ps[29].EntryID + 1}))
}

func TestMarkDeleteRateLimitBoundsMetadataWrites(t *testing.T) {
	e := newEnv(t)
	e.cfg.MarkDeleteRateLimit = 10
	e.cfg.CursorSnapshotIntervalSeconds = 1
	ml := open(t, e.factory(), "t/rate", nil)
	ps := addN(t, ml, 2000, "x")
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	key := ml.f.cursorKey(ml.name, "s")
	before := e.store.count(key)
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, i := range rng.Perm(len(ps)) {
		must(t, c.Delete(ps[i]))
		e.clock.Advance(time.Millisecond)
	}
	wantPos(t, "mark-delete after all acks", c.MarkDeletePosition(), ps[len(ps)-1])
	must(t, c.Flush(ctxT(t)))
	elapsed := time.Since(start)
	// Flushes run at most 10/s; each writes metadata at most once. The bound grows with
	// elapsed time, so a slow machine cannot fail it.
	bound := int(elapsed.Seconds()*10) + 3
	if got := e.store.count(key) - before; got > bound {
		t.Fatalf("%d metadata writes for 2000 acks in %v, bound %d", got, elapsed, bound)
	}
}

func TestDeleteCursorReleasesLedgers(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/dc", func(c *Config) { c.MaxEntriesPerLedger = 2 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	addN(t, ml, 6, "x")
	waitFor(t, "rollovers", func() bool { return len(ml.LedgerIDs()) == 4 && !ml.rollingNow() })
	must(t, c.Delete(Position{ml.LedgerIDs()[0], 0}))
	must(t, c.Flush(ctxT(t)))
	cl := c.p.ledger.ID()
	must(t, ml.Retention().Trim(ctxT(t)))
	if len(ml.LedgerIDs()) != 4 {
		t.Fatalf("trimmed with an unconsumed cursor: %v", ml.LedgerIDs())
	}
	must(t, ml.DeleteCursor(ctxT(t), "s"))
	if e.lc.Exists(cl) {
		t.Fatal("cursor ledger survived DeleteCursor")
	}
	if err := ml.DeleteCursor(ctxT(t), "s"); !errors.Is(err, ErrCursorNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	must(t, ml.Retention().Trim(ctxT(t)))
	if len(ml.LedgerIDs()) != 1 {
		t.Fatalf("no cursors and no retention should leave only the current ledger: %v", ml.LedgerIDs())
	}
}

func TestManagedLedgerDelete(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/del", func(c *Config) { c.MaxEntriesPerLedger = 2 })
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	ps := addN(t, ml, 5, "x")
	must(t, c.MarkDelete(ps[1]))
	must(t, c.Flush(ctxT(t)))
	must(t, f.Delete(ctxT(t), "t/del"))
	if ids := e.lc.LedgerIDs(); len(ids) != 0 {
		t.Fatalf("ledgers left after delete: %v", ids)
	}
	if kvs, _ := e.store.List(context.Background(), DefaultMetadataRoot+"/"); len(kvs) != 0 {
		t.Fatalf("metadata left after delete: %v", kvs)
	}
	if err := f.Delete(ctxT(t), "t/del"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a deleted ledger: %v", err)
	}
}

func TestCursorExpireMessagesByLedgerAge(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/ttl", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	c1, err := ml.OpenCursor(ctxT(t), "a", InitialPositionEarliest)
	must(t, err)
	c2, err := ml.OpenCursor(ctxT(t), "b", InitialPositionEarliest)
	must(t, err)
	ps := addN(t, ml, 6, "x") // two closed ledgers of 3
	waitFor(t, "rollover", func() bool { return len(ml.LedgerIDs()) == 3 && !ml.rollingNow() })
	e.clock.Advance(time.Hour)
	n, err := c1.ExpireMessages(ctxT(t), 30*time.Minute, nil)
	must(t, err)
	if n != 6 || c1.Backlog() != 0 || c2.Backlog() != 6 {
		t.Fatalf("expired %d; backlogs %d and %d", n, c1.Backlog(), c2.Backlog())
	}
	wantPos(t, "expired cursor", c1.MarkDeletePosition(), ps[5])
}

// TestRewindWakesParkedRead: a dispatcher's read parked at the end must return the
// unacknowledged entries when the cursor is rewound (consumer change), not wait for a new add.
func TestRewindWakesParkedRead(t *testing.T) {
	e := newEnv(t)
	ml := open(t, e.factory(), "t/rewind", nil)
	ps := addN(t, ml, 3, "x")
	c, err := ml.OpenCursor(ctxT(t), "s", InitialPositionEarliest)
	must(t, err)
	readAll(t, c)
	must(t, c.Delete(ps[1]))
	got := make(chan []Entry, 1)
	go func() {
		es, err := c.ReadEntriesOrWait(ctxT(t), 10, 0)
		if err != nil {
			t.Error(err)
		}
		got <- es
	}()
	waitFor(t, "read parked", func() bool { return c.waiting.Load() == 1 })
	c.Rewind()
	es := <-got
	if len(es) != 2 || es[0].Position != ps[0] || es[1].Position != ps[2] {
		t.Fatalf("after rewind read %v", es)
	}
}

func TestOpenCursorAdoptsExistingKey(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	ml := open(t, f, "t/adopt", nil)
	ps := addN(t, ml, 5, "x")
	// Another instance (same store) creates the cursor after ml was opened.
	other, err := NewFactory(FactoryOptions{Ledger: e.lc, Store: e.store, Config: e.cfg, Now: e.clock.Now, DisableBackground: true})
	must(t, err)
	mlo, err := other.Open(ctxT(t), "t/adopt-other", other.DefaultConfig())
	must(t, err)
	_ = mlo
	info := &cursorInfo{CursorsLedgerID: -1, MarkDelete: ps[2], State: encodeCursorState(ps[2], &RangeSet{}, 10)}
	_, err = e.store.Put(ctxT(t), f.cursorKey("t/adopt", "late"), encodeCursorInfo(info), 0)
	must(t, err)
	c, err := ml.OpenCursor(ctxT(t), "late", InitialPositionEarliest)
	must(t, err)
	wantPos(t, "adopted cursor", c.MarkDeletePosition(), ps[2])
	must(t, c.MarkDelete(ps[3]))
	must(t, c.Flush(ctxT(t)))
}
