package managedledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// The add pipeline.
//
// AddEntry appends an addOp to ml.add.pending (the queue of adds not yet completed, in call
// order) and submit hands every op not yet given to the current writer to
// Writer.AppendAsync, in queue order (submitMu keeps the calls ordered even though they run
// outside mu). The writer calls back in entry order, so a success always completes the head
// of pending. Completions are queued on cbQueue under mu and run by drainCallbacks, one
// goroutine at a time, so callers see their callbacks in add order even when completions of
// two ledgers race around a rollover.
//
// Rollover (rollover): once the current ledger is full or old (shouldRollLocked), or its
// writer failed, ml.add.rolling stops submission. When the last op submitted to that writer has
// called back (inflight == 0), rollover closes the writer, creates a new ledger, writes the
// new ledger list by CAS, and resubmits whatever is pending: ops that failed on the old
// writer were never acknowledged, so they go to the new ledger (a failed add may still be on
// some bookies of the old ledger beyond its last confirmed entry; readers never see it,
// because the old ledger is closed at its last acknowledged entry).
//
// Failures that end the managed ledger instead: ledger.ErrFenced (a newer owner recovered the
// ledger) and a lost CAS on the ledger list (a newer owner rewrote it) move to the fenced
// state and fail every pending add. Failing to create a ledger fails the pending adds with
// ErrLedgerUnavailable; the next add tries again.

// addPipeline is the add pipeline of one managed ledger: the queue of adds in call order,
// the current writer and what was handed to it, the tail of the current ledger, and the
// callbacks waiting to run in order. Its fields are guarded by ml.mu, the lock of the
// ledger list its rollovers extend; submitMu orders the calls into the writer.
type addPipeline struct {
	ml *ManagedLedger

	writer        ledger.Writer
	writerCreated time.Time
	writerErr     error
	rolling       bool // do not submit to writer; a rollover will run once inflight is 0
	rollStarted   bool
	inflight      int
	submitted     int   // pending[:submitted] went to writer
	subEntries    int64 // entries handed to the current writer
	subBytes      int64
	ackedEntry    int64       // newest acknowledged entry of the current ledger
	tail          []tailEntry // see below: entries bookies may not know are confirmed
	tailLedger    int64
	pending       []*addOp
	cbQueue       []completion
	cbSpare       []completion
	draining      bool
}

// completion is one queued AddEntry callback.
type completion struct {
	cb  func(Position, error)
	pos Position
	err error
}

type addOp struct {
	data []byte
	meta EntryMeta
	cb   func(Position, error)
	// done is set once the op's callback is queued (success or failure). A writer callback
	// for a done op is a late one: the op was failed already (Close gave up waiting, or a lost
	// CAS fenced the managed ledger) and the result is dropped.
	done bool
	// visibleLAC is the newest entry of the current ledger acknowledged when this op was
	// handed to the writer; the writer sends at least this LAC to the bookies with the op.
	visibleLAC int64
}

// The tail of the current ledger.
//
// A reader learns a ledger's LAC from the bookies, who know it only from the LAC piggybacked
// on later adds: the newest entries of the ledger being written are confirmed to us but not
// readable through a ledger.Reader until more adds arrive or the ledger closes (Pulsar reads
// them through its write handle, which our ledger API has no read for). So the managed
// ledger keeps, outside the evictable cache, every entry of the current ledger that the
// bookies may not know to be confirmed: once an op carrying visibleLAC = X completes, the
// bookies know LAC >= X and entries up to X leave the tail. The tail holds at most the adds
// in flight plus one, bounded by MaxPendingAddEntries.
type tailEntry struct {
	entryID int64
	data    []byte
	meta    EntryMeta
}

// AddEntry appends data asynchronously. cb is called exactly once, with the entry's position
// once it is durable on the ack quorum, or with an error; callbacks come in AddEntry call
// order. If AddEntry itself returns an error (closed, fenced, terminated, too busy) cb is
// never called. The managed ledger keeps data (for the entry cache): the caller must not
// modify it afterwards.
func (ml *ManagedLedger) AddEntry(data []byte, cb func(Position, error)) error {
	return ml.AddEntryMeta(data, EntryMeta{}, cb)
}

// AddEntryMeta is AddEntry with what the caller knows about the entry, kept with it in the
// cache and returned with it by reads (Entry.Meta).
func (ml *ManagedLedger) AddEntryMeta(data []byte, meta EntryMeta, cb func(Position, error)) error {
	ml.mu.Lock()
	if err := ml.stateErrLocked(); err != nil {
		ml.mu.Unlock()
		return err
	}
	if ml.terminating || ml.terminated {
		ml.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrTerminated, ml.name)
	}
	if len(ml.add.pending) >= ml.cfg.MaxPendingAddEntries {
		ml.mu.Unlock()
		return fmt.Errorf("%w: %s has %d adds in flight", ErrTooBusy, ml.name, len(ml.add.pending))
	}
	ml.add.pending = append(ml.add.pending, &addOp{data: data, meta: meta, cb: cb})
	ml.mu.Unlock()
	ml.add.submit()
	return nil
}

// Add is AddEntry waiting for the result. If ctx ends first the add may still complete.
func (ml *ManagedLedger) Add(ctx context.Context, data []byte) (Position, error) {
	type res struct {
		p   Position
		err error
	}
	ch := make(chan res, 1)
	if err := ml.AddEntry(data, func(p Position, err error) { ch <- res{p, err} }); err != nil {
		return Position{}, err
	}
	select {
	case r := <-ch:
		return r.p, r.err
	case <-ctx.Done():
		return Position{}, ctx.Err()
	}
}

// submit gives every pending op not yet submitted to the current writer, in order.
func (p *addPipeline) submit() {
	ml := p.ml
	ml.submitMu.Lock()
	defer ml.submitMu.Unlock()
	ml.mu.Lock()
	if p.writer == nil {
		// No ledger (creation failed earlier): start one if there is work.
		start := ml.state == stateOpen && !p.rollStarted && !ml.terminated && len(p.pending) > 0
		if start {
			p.rolling, p.rollStarted = true, true
		}
		ml.mu.Unlock()
		if start {
			go p.rollover(nil)
		}
		return
	}
	if p.rolling || p.writerErr != nil || ml.state != stateOpen || p.submitted == len(p.pending) {
		ml.mu.Unlock()
		return
	}
	w := p.writer
	var buf [16]*addOp // the usual batch is one op: no allocation
	batch := buf[:0]
	for p.submitted < len(p.pending) {
		if p.shouldRollLocked() {
			// The ledger is full by what was already handed to it: keep the rest queued
			// for the next ledger.
			p.rolling = true
			break
		}
		op := p.pending[p.submitted]
		op.visibleLAC = p.ackedEntry
		batch = append(batch, op)
		p.submitted++
		p.inflight++
		p.subEntries++
		p.subBytes += int64(len(op.data))
	}
	start := p.rolling && !p.rollStarted && p.inflight == 0
	if start {
		p.rollStarted = true
	}
	ml.mu.Unlock()
	for _, op := range batch {
		op := op
		w.AppendAsync(op.data, func(eid int64, err error) { p.addDone(w, op, eid, err) })
	}
	if start {
		go p.rollover(w)
	}
}

func (p *addPipeline) addDone(w ledger.Writer, op *addOp, eid int64, err error) {
	ml := p.ml
	ml.mu.Lock()
	p.inflight--
	head := len(p.pending) > 0 && p.pending[0] == op
	switch {
	case op.done:
		// Late result of an op already failed to its caller: if it succeeded the entry is in
		// the ledger but nobody was told (at-least-once, as with any failed send).
		ml.log.Debug("dropping the late result of an add already failed", "ledger", w.ID(), "entry", eid, "err", err)
	case err == nil && head:
		// (The writer may already be detached by a Close that stopped waiting; the entry is
		// durable all the same, so it completes as a success.)
		op.done = true
		pos := Position{w.ID(), eid}
		p.pending[0] = nil
		p.pending = p.pending[1:]
		p.submitted--
		if n := len(ml.ledgers); n > 0 && ml.ledgers[n-1].LedgerID == pos.LedgerID {
			ml.ledgers[n-1].Entries = eid + 1
			ml.ledgers[n-1].Size += int64(len(op.data))
		}
		ml.entriesAdded++
		ml.numberOfEntries++
		ml.totalSize += int64(len(op.data))
		if ml.hasActiveCursors() {
			// Without an active cursor nobody reads this soon: the tail and the bookies
			// serve a consumer that connects later (cursor_active.go).
			ml.f.cache.insert(pos, op.data, op.meta)
		}
		p.ackedEntry = eid
		p.tail = append(p.tail, tailEntry{eid, op.data, op.meta})
		k := 0
		for k < len(p.tail) && p.tail[k].entryID <= op.visibleLAC {
			p.tail[k].data = nil
			k++
		}
		p.tail = p.tail[k:]
		p.cbQueue = append(p.cbQueue, completion{cb: op.cb, pos: pos})
		ml.notifyLocked()
		if !p.rolling && p.shouldRollLocked() {
			p.rolling = true
		}
	case err == nil:
		// A success for a live op that is not the head of the queue means the ledger client
		// broke its ordering contract: entry ids would go out of order. Crash rather than
		// acknowledge out of order.
		panic(fmt.Sprintf("managedledger: %s: out-of-order add completion for entry %d of ledger %d", ml.name, eid, w.ID()))
	case errors.Is(err, ledger.ErrFenced):
		ml.fenceLocked(err)
	default:
		if p.writerErr == nil && p.writer == w {
			p.writerErr = err
			p.rolling = true
			ml.log.Warn("add failed; rolling over to a new ledger and retrying pending adds", "ledger", w.ID(), "err", err)
		}
	}
	start := p.rolling && !p.rollStarted && p.inflight == 0 && p.writer == w && ml.state == stateOpen
	if start {
		p.rollStarted = true
	}
	ml.mu.Unlock()
	if start {
		go p.rollover(w)
	}
	p.drainCallbacks()
}

// shouldRollLocked applies the rollover rule to what was handed to the current writer: it
// has entries and is older than the max rollover time, or is full (entries or bytes) and
// older than the min rollover time. Counting submitted rather than acknowledged adds keeps a
// deep pipeline from overfilling a ledger.
func (p *addPipeline) shouldRollLocked() bool {
	ml := p.ml
	if p.writer == nil || p.subEntries == 0 {
		return false
	}
	age := ml.f.now().Sub(p.writerCreated)
	if age >= ml.cfg.MaxLedgerRolloverTime {
		return true
	}
	if age < ml.cfg.MinLedgerRolloverTime {
		return false
	}
	return p.subEntries >= ml.cfg.MaxEntriesPerLedger || p.subBytes >= ml.cfg.MaxSizePerLedgerBytes
}

// CheckRollover rolls the current ledger over if it is due by age (size and count are
// checked on every add). The factory's background pass calls it; tests call it directly.
func (ml *ManagedLedger) CheckRollover() {
	ml.mu.Lock()
	w := ml.add.writer
	if ml.state != stateOpen || ml.closing || ml.add.rolling || !ml.add.shouldRollLocked() {
		ml.mu.Unlock()
		return
	}
	ml.add.rolling = true
	start := ml.add.inflight == 0
	if start {
		ml.add.rollStarted = true
	}
	ml.mu.Unlock()
	if start {
		go ml.add.rollover(w)
	}
}

func (p *addPipeline) failPendingLocked(err error) {
	ml := p.ml
	ml.addErrors += int64(len(p.pending))
	for _, op := range p.pending {
		op.done = true
		p.cbQueue = append(p.cbQueue, completion{cb: op.cb, err: err})
	}
	p.pending, p.submitted = nil, 0
}

// drainCallbacks runs queued completions in order, on one goroutine at a time.
func (p *addPipeline) drainCallbacks() {
	ml := p.ml
	ml.mu.Lock()
	if p.draining {
		ml.mu.Unlock()
		return
	}
	p.draining = true
	for len(p.cbQueue) > 0 {
		// Swap in the spare slice so that completions queued meanwhile need no allocation.
		q := p.cbQueue
		p.cbQueue, p.cbSpare = p.cbSpare, nil
		ml.mu.Unlock()
		for i := range q {
			q[i].cb(q[i].pos, q[i].err)
			q[i] = completion{}
		}
		ml.mu.Lock()
		p.cbSpare = q[:0]
	}
	p.draining = false
	ml.mu.Unlock()
}

// rollover replaces old (nil: there is no ledger) by a new ledger; see the pipeline comment.
func (p *addPipeline) rollover(old ledger.Writer) {
	ml := p.ml
	ctx, cancel := context.WithTimeout(context.Background(), ledgerOpTimeout)
	defer cancel()
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	defer p.drainCallbacks()

	abort := func() bool {
		// Fencing, or Close/Terminate with nothing left to write, got here first. With adds
		// still pending, Close and Terminate wait for them, so the rollover must go on.
		ending := ml.closing || ml.terminating || ml.terminated
		if ml.state != stateOpen || p.writer != old || (ending && len(p.pending) == 0) {
			p.rolling, p.rollStarted = false, false
			return true
		}
		return false
	}
	ml.mu.Lock()
	if abort() {
		ml.mu.Unlock()
		return
	}
	ml.mu.Unlock()
	if old != nil {
		if err := old.Close(ctx); err != nil {
			if errors.Is(err, ledger.ErrFenced) {
				ml.mu.Lock()
				ml.fenceLocked(err)
				p.rolling, p.rollStarted = false, false
				ml.mu.Unlock()
				return
			}
			ml.log.Warn("closing full ledger failed; it is recovered when read", "ledger", old.ID(), "err", err)
		}
	}
	w, createErr := ml.createLedger(ctx)

	ml.mu.Lock()
	now := ml.f.now()
	list := append([]ledgerInfo(nil), ml.ledgers...)
	if old != nil && len(list) > 0 {
		list[len(list)-1].Timestamp = now.UnixMilli()
	}
	if createErr != nil || abort() {
		if createErr == nil {
			ml.mu.Unlock()
			ml.deleteLedgerQuietly(w.ID())
			return
		}
		ml.ledgers = list
		p.writer, p.writerErr = nil, nil
		p.rolling, p.rollStarted = false, false
		p.failPendingLocked(createErr)
		ml.notifyLocked()
		ml.mu.Unlock()
		ml.log.Warn("ledger creation failed; pending adds failed, the next add retries", "err", createErr)
		return
	}
	list = append(list, ledgerInfo{LedgerID: w.ID(), Timestamp: now.UnixMilli()})
	ver := ml.version
	ml.mu.Unlock()

	nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(&mlInfo{Ledgers: list}), ver)

	ml.mu.Lock()
	if err != nil {
		ml.mu.Unlock()
		ml.deleteLedgerQuietly(w.ID())
		ml.mu.Lock()
		if errors.Is(err, metadata.ErrBadVersion) {
			ml.fenceLocked(err)
		} else {
			p.writer, p.writerErr = nil, nil
			p.failPendingLocked(fmt.Errorf("%w: %s: writing ledger list: %w", ErrLedgerUnavailable, ml.name, err))
			ml.notifyLocked()
		}
		ml.ledgers = list[:len(list)-1]
		p.rolling, p.rollStarted = false, false
		ml.mu.Unlock()
		return
	}
	ml.version, ml.ledgers = nv, list
	p.resetTailLocked()
	p.tailLedger = w.ID()
	p.writer, p.writerErr, p.writerCreated, ml.lastCreated = w, nil, now, now
	p.rolling, p.rollStarted = false, false
	p.submitted, p.inflight = 0, 0
	p.subEntries, p.subBytes = 0, 0
	ml.notifyLocked()
	ml.mu.Unlock()
	if old != nil {
		ml.log.Debug("ledger rolled over", "old", old.ID(), "new", w.ID())
	}
	// resetTailLocked cached the old ledger's tail again, including entries every active
	// cursor already read (and evicted) while it was the tail: drop those now, or they stay
	// until the age bound when no further read comes.
	ml.evictConsumed()
	p.submit()
}

// resetTailLocked is called when the current ledger changes: the old one is closed (so all
// its entries are readable), and its tail entries go to the ordinary cache.
func (p *addPipeline) resetTailLocked() {
	ml := p.ml
	for _, t := range p.tail {
		if !ml.hasActiveCursors() {
			break
		}
		ml.f.cache.insert(Position{p.tailLedger, t.entryID}, t.data, t.meta)
	}
	p.tail = nil
	p.ackedEntry = -1
}

// tailGet returns an entry of the current ledger's tail. Caller holds mu.
func (p *addPipeline) tailGetLocked(pos Position) (Entry, bool) {
	if pos.LedgerID != p.tailLedger || len(p.tail) == 0 {
		return Entry{}, false
	}
	i := pos.EntryID - p.tail[0].entryID
	if i < 0 || i >= int64(len(p.tail)) {
		return Entry{}, false
	}
	t := &p.tail[i]
	return Entry{Position: pos, Data: t.data, Meta: t.meta}, true
}
