package txn

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func batchedLogs(o *CoordinatorOptions) {
	o.Config.LogBatchedWriteEnabled = true
	o.Config.LogBatchedWriteMaxRecords = 16
	o.Config.LogBatchedWriteMaxDelayInMillis = 20
}

// TestBatchedCoordinatorLog: with transactionLogBatchedWriteEnabled concurrent operations
// share log entries; each is answered once durable; a new owner (fencing the old one
// without a close, as after a crash) replays the batched entries: open transactions come
// back with their participants, ended ones do not, ending ones are ended again; once all
// ended every entry is acknowledged, and a log written batched reads back unbatched.
func TestBatchedCoordinatorLog(t *testing.T) {
	cl := newCluster(t)
	fp := &fakeParticipants{}
	old := openCoord(t, cl.factory(), fp, batchedLogs)
	ctx := ctxT(t)

	const n = 64
	ids := make([]ID, n)
	for i := range ids {
		id, err := old.New(ctx, time.Hour, "")
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	// Every other transaction gets a partition and, of those, every other one commits.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				return
			}
			if err := old.AddPartitions(ctx, id, []string{fmt.Sprintf("p%d", i)}); err != nil {
				errs <- err
				return
			}
			if i%4 == 0 {
				errs <- old.End(ctx, id, Commit)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if recs, ents := old.Stats().Appends, old.log.ml.NumberOfEntries(); ents >= recs {
		t.Fatalf("%d records in %d entries: nothing was batched", recs, ents)
	}
	// One more ends but never reaches its participant before the crash.
	ending := ids[2]
	fp.mu.Lock()
	fp.block = make(chan struct{})
	fp.mu.Unlock()
	endCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_ = old.End(endCtx, ending, Commit)
	cancel()

	fp2 := &fakeParticipants{}
	c := openCoord(t, cl.factory(), fp2, batchedLogs)
	eventually(t, "the ending transaction to be committed again", func() bool { return fp2.count(ending, Commit) == 1 })
	var open []ID
	for i, id := range ids {
		md, ok := c.Get(id)
		switch {
		case id == ending:
		case i%4 == 0:
			if ok {
				t.Fatalf("committed %s came back: %+v", id, md)
			}
		case i%2 == 0:
			if !ok || md.Status != Open || !slices.Equal(md.Partitions, []string{fmt.Sprintf("p%d", i)}) {
				t.Fatalf("%s after recovery: %+v %v", id, md, ok)
			}
			open = append(open, id)
		default:
			if !ok || md.Status != Open || len(md.Partitions) != 0 {
				t.Fatalf("%s after recovery: %+v %v", id, md, ok)
			}
			open = append(open, id)
		}
	}
	close(fp.block)

	// End the rest concurrently: every entry goes once nothing in it is needed.
	errs = make(chan error, len(open))
	for _, id := range open {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- c.End(ctx, id, Abort)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every entry to be acknowledged", func() bool { return c.log.cur.Backlog() == 0 })
	last := c.Stats().Sequence
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	plain := openCoord(t, cl.factory(), &fakeParticipants{}, nil)
	if l := plain.List(); len(l) != 0 {
		t.Fatalf("transactions after every one ended: %+v", l)
	}
	if id, err := plain.New(ctx, time.Hour, ""); err != nil || id.Least <= last {
		t.Fatalf("New after reopening unbatched: %v %v (last %d)", id, err, last)
	}
}

// TestRecordTrackerAcknowledgesOldestFirst: an entry goes once all its records are
// dropped, and a drop's later entries wait for its earlier ones, so a replay never sees a
// transaction's first records without its last.
func TestRecordTrackerAcknowledgesOldestFirst(t *testing.T) {
	var tr recordTracker
	e1, e2, e3 := Position{LedgerID: 1, EntryID: 1}, Position{LedgerID: 1, EntryID: 2}, Position{LedgerID: 1, EntryID: 3}
	tr.added(e1, 2) // a (T1), c (T2)
	tr.added(e2, 2) // b (T1), d (T3)
	// e3 is a plain entry: e (T2)
	if got := tr.drop([]recPos{{e3, 0}}); !slices.Equal(got, []Position{e3}) {
		t.Fatalf("a plain entry dropped alone: %v", got)
	}
	if got := tr.drop([]recPos{{e1, 0}, {e2, 0}}); len(got) != 0 {
		t.Fatalf("T1 dropped while c and d are needed: %v", got)
	}
	if got := tr.drop([]recPos{{e2, 1}}); len(got) != 0 {
		t.Fatalf("e2 went before e1, which holds T1's first record: %v", got)
	}
	if got := tr.drop([]recPos{{e1, 1}, {e1, 1}}); !slices.Equal(got, []Position{e1, e2}) {
		t.Fatalf("after c: %v, want e1 then e2", got)
	}
	if len(tr.entries) != 0 {
		t.Fatalf("still tracked: %v", tr.entries)
	}
}

func TestBatchEntryRoundTrip(t *testing.T) {
	recs := [][]byte{encodeRecord(&record{kind: recNew, least: 1, timeout: time.Second, owner: "o"}),
		encodeRecord(&record{kind: recStatus, least: 1, status: Committing})}
	got, err := decodeBatch(encodeBatch(recs))
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], recs[0]) || !bytes.Equal(got[1], recs[1]) {
		t.Fatalf("%q %v", got, err)
	}
	// A single record is written plain, and a plain entry is one record.
	if one := encodeBatch(recs[:1]); !bytes.Equal(one, recs[0]) {
		t.Fatalf("one record: %x", one)
	}
	for _, bad := range [][]byte{{batchMagic}, {batchMagic, 1, 1, 1}, {batchMagic, 2, 1, 1}, {batchMagic, 2, 1, 1, 0, 1}, {batchMagic, 2, 1, 1, 1, 1, 9}} {
		if _, err := decodeBatch(bad); !isErr(err, ErrCorrupt) {
			t.Fatalf("%x: %v", bad, err)
		}
	}
}

// FuzzDecodeBatch: the batched entry decoder never panics, and what it accepts encodes
// back to entries with the same records.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch([][]byte{{1, 2, 3}, {1, 4}}))
	f.Add(encodeBatch([][]byte{{1}, {1}, {1, 5, 6, 7}}))
	f.Add([]byte{1, 1, 1})
	f.Add([]byte{batchMagic, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := decodeBatch(data)
		if err != nil {
			return
		}
		if len(recs) == 0 {
			t.Fatal("no records")
		}
		again, err := decodeBatch(encodeBatch(recs))
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-decoding: %d records, %v", len(again), err)
		}
		for i := range recs {
			if !bytes.Equal(recs[i], again[i]) {
				t.Fatalf("record %d: %x then %x", i, recs[i], again[i])
			}
		}
	})
}

func batchedState(o *TopicStateOptions) {
	o.Config.PendingAckBatchedWriteEnabled = true
	o.Config.PendingAckBatchedWriteMaxRecords = 16
	o.Config.PendingAckBatchedWriteMaxDelayInMillis = 20
}

// TestBatchedPendingAckLog: with transactionPendingAckBatchedWriteEnabled concurrent
// transactional acknowledgements and ends share state log entries; after a restart the
// open ones are held again, committed ones applied, aborted ones gone; once all ended and
// persisted, only the buffer's snapshot is left.
func TestBatchedPendingAckLog(t *testing.T) {
	cl := newCluster(t)
	tp := openTopic(t, cl, batchedState)
	ctx := ctxT(t)
	const n = 12
	var ps []Position
	for range n {
		ps = append(ps, tp.mustPublish(nil))
	}
	pa, _ := tp.pending(t, 0)
	id := func(i int) ID { return ID{1, uint64(i + 1)} }
	parallel := func(f func(i int) error) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- f(i)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	parallel(func(i int) error { return pa.Ack(ctx, id(i), whole(ps[i]), false) })
	parallel(func(i int) error {
		switch i % 3 {
		case 0:
			return pa.End(ctx, id(i), Commit, 0)
		case 1:
			return pa.End(ctx, id(i), Abort, 0)
		}
		return nil
	})
	l := tp.st.logv.Load()
	if recs, ents := int64(1+n+2*n/3), l.ml.NumberOfEntries(); ents >= recs {
		t.Fatalf("%d records in %d entries: nothing was batched", recs, ents)
	}

	tp2 := openTopic(t, cl, batchedState)
	pa2, _ := tp2.pending(t, 0)
	for i := range n {
		err := pa2.Ack(ctx, ID{2, uint64(i + 1)}, whole(ps[i]), false)
		switch i % 3 {
		case 0:
			if !isErr(err, ErrConflict) || !tp2.sub.IsAcknowledged(ps[i]) {
				t.Fatalf("%d: the logged commit was not applied again: %v", i, err)
			}
		case 1:
			if err != nil {
				t.Fatalf("%d: the aborted acknowledgement came back: %v", i, err)
			}
			if err := pa2.End(ctx, ID{2, uint64(i + 1)}, Abort, 0); err != nil {
				t.Fatal(err)
			}
		default:
			if !isErr(err, ErrConflict) {
				t.Fatalf("%d: an entry held before the restart: %v", i, err)
			}
		}
	}
	parallel(func(i int) error {
		if i%3 != 2 {
			return nil
		}
		return pa2.End(ctx, id(i), Commit, 0)
	})
	for i := range n {
		if acked := tp2.sub.IsAcknowledged(ps[i]); acked != (i%3 != 1) {
			t.Fatalf("%d acknowledged %v", i, acked)
		}
	}
	if err := tp2.sub.MarkDelete(ps[n-1]); err != nil {
		t.Fatal(err)
	}
	l2 := tp2.st.logv.Load()
	eventually(t, "every record but the snapshot to be dropped", func() bool { return l2.cur.Backlog() == 1 })
}
