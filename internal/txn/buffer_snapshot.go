package txn

import (
	"context"
	"slices"
	"time"
)

// Snapshots and recovery of the transaction buffer.

// snapshotLocked is the buffer's state as a snapshot; aborted transactions whose marker is
// no longer stored (retention trimmed them with their entries) are forgotten first.
func (b *Buffer) snapshotLocked() *snapshot {
	first := b.ml.FirstPosition()
	s := &snapshot{maxRead: b.maxReadLocked(), lowWater: map[uint64]uint64{}}
	for id, p := range b.aborted {
		if p.Less(first) {
			delete(b.aborted, id)
			continue
		}
		s.aborted = append(s.aborted, abortedTxn{id: id, marker: p})
	}
	slices.SortFunc(s.aborted, func(a, c abortedTxn) int { return a.marker.Compare(c.marker) })
	for tc, lw := range b.lowWater {
		s.lowWater[tc] = lw
	}
	return s
}

// maybeSnapshotLocked takes a snapshot once transactionBufferSnapshotMaxTransactionCount
// transactions ended since the last, or transactionBufferSnapshotMinTimeInMillis after the
// last if any did.
func (b *Buffer) maybeSnapshotLocked() {
	if b.closed || !b.ready || !b.st.prepared() || b.endedSinceSnap == 0 {
		return
	}
	if b.endedSinceSnap >= b.st.o.Config.BufferSnapshotMaxTransactionCount {
		if b.snapTimer != nil {
			b.snapTimer.Stop()
			b.snapTimer = nil
		}
		go b.snapshot()
		return
	}
	if b.snapTimer == nil {
		minGap := time.Duration(b.st.o.Config.BufferSnapshotMinTimeInMillis) * time.Millisecond
		wait := max(minGap-b.now().Sub(b.lastSnap), 0)
		b.snapTimer = time.AfterFunc(wait, func() {
			b.mu.Lock()
			b.snapTimer = nil
			b.mu.Unlock()
			b.snapshot()
		})
	}
}

// snapshot writes a snapshot to the state log and, once it is durable, drops the previous.
func (b *Buffer) snapshot() {
	b.mu.Lock()
	if b.snapping || b.closed || !b.ready || b.endedSinceSnap == 0 {
		b.mu.Unlock()
		return
	}
	b.snapping = true
	s := b.snapshotLocked()
	ended := b.endedSinceSnap
	b.endedSinceSnap, b.lastSnap = 0, b.now()
	b.mu.Unlock()
	err := b.st.appendState(encodeState(&stateRecord{kind: stSnapshot, snap: s}), func(p recPos, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.snapping = false
		if err != nil {
			b.lg.Warn("writing a transaction buffer snapshot failed; the next one covers it", "err", err)
			b.endedSinceSnap += ended
			return
		}
		old, had := b.snapPos, b.hasSnap
		b.snapPos, b.hasSnap = p, true
		if had {
			b.st.dropState(old)
		}
		b.maybeSnapshotLocked()
	})
	if err != nil {
		b.mu.Lock()
		b.snapping = false
		b.endedSinceSnap += ended
		b.mu.Unlock()
		b.lg.Warn("writing a transaction buffer snapshot failed; the next one covers it", "err", err)
	}
}

// recover loads snap and replays the topic after its maxRead: transactions still open come
// back with their first entry, ends after the snapshot take effect. Until it returns,
// everything after maxRead is hidden.
func (b *Buffer) recover(ctx context.Context, snap *snapshot, snapPos recPos) error {
	b.mu.Lock()
	b.recMax = snap.maxRead
	for _, a := range snap.aborted {
		b.aborted[a.id] = a.marker
	}
	for tc, lw := range snap.lowWater {
		b.lowWater[tc] = lw
	}
	b.snapPos, b.hasSnap, b.lastSnap = snapPos, true, b.now()
	b.applyLocked()
	b.mu.Unlock()
	r, err := b.ml.NewUnlimitedReader(snap.maxRead, false)
	if err != nil {
		return err
	}
	defer func() { _ = r.Close(ctx) }()
	n := 0
	for {
		es, err := r.ReadEntries(ctx, replayBatch, 8<<20)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			break
		}
		b.mu.Lock()
		for _, e := range es {
			b.replayLocked(e.Position, ParseEntryInfo(e.Data))
		}
		b.mu.Unlock()
		n += len(es)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ready = true
	b.stats.replayed = n
	b.stats.recoverEnd = b.now()
	b.applyLocked()
	b.lg.Info("transaction buffer recovered", "replayed", n, "open", len(b.ongoing), "aborted", len(b.aborted),
		"took", b.stats.recoverEnd.Sub(b.stats.recoverStart).Round(time.Millisecond))
	return nil
}

// replayLocked applies one entry of the topic during recovery.
func (b *Buffer) replayLocked(p Position, info EntryInfo) {
	id := info.Txn
	switch {
	case info.Marker == MarkerTxnCommit || info.Marker == MarkerTxnAbort:
		if e := b.ongoing[id]; e != nil {
			b.order.Remove(e)
			delete(b.ongoing, id)
		}
		if info.Marker == MarkerTxnAbort {
			b.aborted[id] = p
		} else if lw, ok := b.lowWater[id.Most]; !ok || id.Least > lw {
			b.committed[id] = struct{}{}
		}
	case info.Marker != 0 || !info.InTxn:
	default:
		if _, ok := b.aborted[id]; ok {
			return
		}
		if e := b.ongoing[id]; e != nil {
			e.Value.(*openTxn).entries++
			return
		}
		b.ongoing[id] = b.order.PushBack(&openTxn{id: id, first: p, entries: 1})
	}
}

// close stops the buffer; ends and appends in flight fail with ErrClosed.
func (b *Buffer) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.snapTimer != nil {
		b.snapTimer.Stop()
		b.snapTimer = nil
	}
}

// BufferStats is Pulsar's TransactionBufferStats.
type BufferStats struct {
	State                    string
	MaxReadPosition          Position
	LastSnapshot             time.Time
	Ongoing                  int
	Aborted                  int
	Committed, Ended         int64
	RecoverStart, RecoverEnd time.Time
}

// Stats returns the buffer's state.
func (b *Buffer) Stats() BufferStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	state := "Ready"
	switch {
	case b.closed:
		state = "Close"
	case !b.ready:
		state = "Initializing"
	case !b.st.prepared():
		state = "NoSnapshot"
	}
	return BufferStats{
		State: state, MaxReadPosition: b.maxReadLocked(), LastSnapshot: b.lastSnap,
		Ongoing: len(b.ongoing), Aborted: len(b.aborted), Committed: b.stats.committed,
		Ended:        b.stats.committed + b.stats.aborted,
		RecoverStart: b.stats.recoverStart, RecoverEnd: b.stats.recoverEnd,
	}
}

// TxnStats is Pulsar's TransactionInBufferStats: where id's first entry is here and
// whether it was aborted; ok false when the buffer knows nothing of it.
func (b *Buffer) TxnStats(id ID) (start Position, aborted, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.ongoing[id]; e != nil {
		return e.Value.(*openTxn).first, false, true
	}
	if p, ok := b.aborted[id]; ok {
		return p, true, true
	}
	return Position{}, false, false
}
