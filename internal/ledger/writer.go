package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// writer is the Writer of a ledger this client created.
//
// Design (the add pipeline):
//
//  1. AppendAsync takes an in-flight slot (blocking at MaxAddsInProgress), assigns the next
//     entry id under mu, builds the digest payload once (carrying the LAC of that moment)
//     and sends it to the Qw bookies of the entry's write set in the current ensemble.
//     sendMu is held from assigning ids until the requests are handed to the bookie client,
//     so each bookie connection sees its adds in entry order.
//  2. Each bookie answer is matched to the ensemble position it was sent to. An ack counts
//     only while that position still holds the same bookie: when a bookie is replaced, its
//     acks of unfinished entries are forgotten (the entry may drop back below Qa, BookKeeper
//     #3005) and the entries are sent to the replacement.
//  3. An entry completes when Qa positions acked it and every earlier entry completed; the
//     LAC advances and the caller's callback is queued. Callbacks run in entry order on one
//     delivery goroutine at a time, never on a bookie client goroutine.
//  4. A failed or timed-out add (anything but ErrFenced) starts an ensemble change: replace
//     the bookie, CAS the new fragment (starting at LAC+1) into metadata, and only then
//     resend and let entries complete again. No entry completes while the change is in
//     progress, so the fragment boundary LAC+1 is exact and the metadata always describes
//     where every acknowledged entry lives before the caller hears of it (§2.6).
//  5. ErrFenced (from a bookie, or a metadata state other than OPEN) fails the writer:
//     every pending and later add fails with ErrFenced, and nothing more is acknowledged.
//
// Lock order: sendMu before mu. No bookie client call is made while mu is held.
type writer struct {
	c        *client
	id       int64
	logger   *slog.Logger
	digest   DigestType
	key      []byte
	e, w, a  int           // ensemble size, write quorum, ack quorum
	inflight chan struct{} // one token per add not yet finished

	sendMu sync.Mutex

	mu         sync.Mutex
	meta       *ledgerMetadata
	version    metadata.Version
	ensemble   []string // the last fragment's bookies, as stored in meta
	pending    []*pendingAdd
	nextEntry  int64
	lac        int64
	length     int64          // data bytes through lac
	lengthAll  int64          // data bytes through nextEntry-1 (the header's length)
	failedPos  map[int]string // positions whose bookie failed, waiting for an ensemble change
	excluded   map[string]bool
	changing   bool
	err        error // sticky: once set, every add fails with it
	closing    bool
	closed     bool
	cbq        []callback
	delivering bool
	changed    chan struct{} // closed and replaced when pending/changing/delivery state moves
}

type pendingAdd struct {
	start   time.Time // AppendAsync, for the add latency metric
	entryID int64
	prefix  []byte // digest header, sent before data (entryPrefix)
	data    []byte
	dataLen int
	done    func(int64, error)
	acked   uint64 // ensemble positions whose current bookie confirmed the entry
	sent    bool   // sent to the write set of the current ensemble
	over    bool   // completed or failed
}

type callback struct {
	done    func(int64, error)
	entryID int64
	err     error
}

// addSend is one add request to one bookie.
type addSend struct {
	p    *pendingAdd
	pos  int
	addr string
	lac  int64
}

func newWriter(c *client, id int64, m *ledgerMetadata, version metadata.Version) *writer {
	return &writer{
		c:         c,
		id:        id,
		logger:    c.logger.With("ledger", id),
		digest:    m.digestType(),
		key:       m.MasterKey,
		e:         m.EnsembleSize,
		w:         m.WriteQuorum,
		a:         m.AckQuorum,
		inflight:  make(chan struct{}, c.cfg.MaxAddsInProgress),
		meta:      m,
		version:   version,
		ensemble:  slices.Clone(m.Fragments[len(m.Fragments)-1].Ensemble),
		lac:       -1,
		failedPos: map[int]string{},
		excluded:  map[string]bool{},
		changed:   make(chan struct{}),
	}
}

func (w *writer) ID() int64 { return w.id }

func (w *writer) LastAddConfirmed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lac
}

func (w *writer) Append(ctx context.Context, data []byte) (int64, error) {
	type result struct {
		id  int64
		err error
	}
	ch := make(chan result, 1)
	w.AppendAsync(data, func(id int64, err error) { ch <- result{id, err} })
	select {
	case r := <-ch:
		return r.id, r.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

func (w *writer) AppendAsync(data []byte, done func(int64, error)) {
	w.inflight <- struct{}{}
	w.sendMu.Lock()
	defer w.sendMu.Unlock()
	w.mu.Lock()
	if err := w.refuseLocked(); err != nil {
		<-w.inflight
		w.enqueueLocked(callback{done: done, entryID: -1, err: err})
		w.mu.Unlock()
		return
	}
	w.lengthAll += int64(len(data))
	p := &pendingAdd{start: time.Now(), entryID: w.nextEntry, dataLen: len(data), done: done}
	p.prefix = entryPrefix(w.digest, entryHeader{LedgerID: w.id, EntryID: p.entryID, LAC: w.lac, Length: w.lengthAll}, data)
	p.data = data
	w.nextEntry++
	w.pending = append(w.pending, p)
	var sends []addSend
	if !w.changing {
		sends = w.sendsLocked(p, nil)
	}
	w.mu.Unlock()
	w.issue(sends)
}

func (w *writer) refuseLocked() error {
	switch {
	case w.err != nil:
		return w.err
	case w.closing || w.closed:
		return fmt.Errorf("%w: ledger %d is closing", ErrClosed, w.id)
	}
	return nil
}

// sendsLocked lists the adds of p to its write set in the current ensemble; with only set,
// just to those positions.
func (w *writer) sendsLocked(p *pendingAdd, only map[int]bool) []addSend {
	var out []addSend
	for _, pos := range writeSet(p.entryID, w.e, w.w) {
		if only == nil || only[pos] {
			out = append(out, addSend{p: p, pos: pos, addr: w.ensemble[pos], lac: w.lac})
		}
	}
	p.sent = true
	return out
}

// issue hands adds to the bookie client. Called with sendMu held and mu not held.
func (w *writer) issue(sends []addSend) {
	for _, s := range sends {
		ctx, cancel := context.WithTimeout(context.Background(), w.c.cfg.AddEntryTimeout)
		req := bookieproto.AddRequest{LedgerID: w.id, EntryID: s.p.entryID, MasterKey: w.key, LAC: s.lac, Prefix: s.p.prefix, Payload: s.p.data}
		w.c.bk.AddEntry(ctx, s.addr, req, func(err error) {
			cancel()
			w.onAddResult(s, err)
		})
	}
}

func (w *writer) onAddResult(s addSend, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ensemble[s.pos] != s.addr {
		return // that bookie was replaced; its answer no longer counts either way
	}
	switch {
	case err == nil:
		if !s.p.over {
			s.p.acked |= 1 << s.pos
			w.completeLocked()
		}
	case errors.Is(err, bookieproto.ErrFenced):
		// Another client is recovering the ledger. Never an ensemble change (§2.6).
		w.failLocked(fmt.Errorf("%w: ledger %d: %v", ErrFenced, w.id, err))
	case errors.Is(err, bookieproto.ErrUnauthorized):
		w.failLocked(fmt.Errorf("ledger %d: bookie %s refused the master key: %w", w.id, s.addr, err))
	default:
		if w.err != nil || w.closed {
			return // a closed ledger needs no new fragment
		}
		if _, seen := w.failedPos[s.pos]; !seen {
			w.logger.Warn("add to bookie failed; replacing it with an ensemble change",
				"bookie", s.addr, "entry", s.p.entryID, "err", err)
		}
		w.failedPos[s.pos] = s.addr
		if !w.changing {
			w.changing = true
			go w.changeEnsemble()
		}
	}
}

// completeLocked finishes entries in order from the head of pending.
func (w *writer) completeLocked() {
	if w.changing {
		return
	}
	n := 0
	for _, p := range w.pending {
		if bits.OnesCount64(p.acked) < w.a {
			break
		}
		p.over = true
		w.lac = p.entryID
		w.length += int64(p.dataLen)
		w.c.metrics.addLatency.Observe(time.Since(p.start).Seconds())
		<-w.inflight
		w.enqueueLocked(callback{done: p.done, entryID: p.entryID})
		n++
	}
	if n > 0 {
		// Reslice rather than shift: O(1) per completion; append reallocates (copying only
		// the live tail) once the spare capacity is used up. Clear the popped slots so the
		// payloads can be collected now.
		clear(w.pending[:n])
		w.pending = w.pending[n:]
		w.notifyLocked()
	}
}

// failLocked makes err sticky and fails every pending add with it, in entry order.
func (w *writer) failLocked(err error) {
	if w.err == nil {
		w.err = err
		w.logger.Warn("ledger writer failed; every pending and later add fails", "err", err, "lac", w.lac)
	}
	for _, p := range w.pending {
		p.over = true
		<-w.inflight
		w.enqueueLocked(callback{done: p.done, entryID: -1, err: w.err})
	}
	w.pending = nil
	w.notifyLocked()
}

func (w *writer) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// enqueueLocked queues a callback; one delivery goroutine at a time drains the queue, so
// callbacks run in the order queued and never on a bookie client goroutine (a callback may
// call AppendAsync again).
func (w *writer) enqueueLocked(cb callback) {
	w.cbq = append(w.cbq, cb)
	if !w.delivering {
		w.delivering = true
		go w.deliver()
	}
}

func (w *writer) deliver() {
	for {
		w.mu.Lock()
		q := w.cbq
		w.cbq = nil
		if len(q) == 0 {
			w.delivering = false
			w.notifyLocked()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for _, cb := range q {
			cb.done(cb.entryID, cb.err)
		}
	}
}

// changeEnsemble replaces failed bookies until none is left failed, one metadata CAS per
// round. It runs on its own goroutine while w.changing is set.
func (w *writer) changeEnsemble() {
	for {
		w.mu.Lock()
		if w.err != nil || len(w.failedPos) == 0 {
			w.changing = false
			w.completeLocked()
			w.notifyLocked()
			w.mu.Unlock()
			return
		}
		failed := make(map[int]string, len(w.failedPos))
		for pos, addr := range w.failedPos {
			failed[pos] = addr
			w.excluded[addr] = true
		}
		old := slices.Clone(w.ensemble)
		exclude := make(map[string]bool, len(w.excluded))
		for a := range w.excluded {
			exclude[a] = true
		}
		first := w.lac + 1
		meta, version := w.meta, w.version
		w.mu.Unlock()

		ens, err := w.chooseReplacements(old, failed, exclude)
		var next *ledgerMetadata
		var nextVersion metadata.Version
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), w.c.cfg.AddEntryTimeout)
			next, nextVersion, err = updateMetadata(ctx, w.c.store, w.id, meta, version, func(m *ledgerMetadata) error {
				if m.State != stateOpen {
					return fmt.Errorf("%w: ledger %d is %s", ErrFenced, w.id, m.State)
				}
				last := &m.Fragments[len(m.Fragments)-1]
				if !slices.Equal(last.Ensemble, old) {
					return fmt.Errorf("%w: ledger %d: last fragment changed by another client", ErrFenced, w.id)
				}
				if last.FirstEntry >= first {
					last.Ensemble = slices.Clone(ens)
				} else {
					m.Fragments = append(m.Fragments, fragment{FirstEntry: first, Ensemble: slices.Clone(ens)})
				}
				return nil
			})
			cancel()
		}

		w.sendMu.Lock()
		w.mu.Lock()
		if err != nil {
			w.failLocked(fmt.Errorf("ledger %d: ensemble change: %w", w.id, err))
			w.mu.Unlock()
			w.sendMu.Unlock()
			continue
		}
		w.meta, w.version = next, nextVersion
		replaced := map[int]bool{}
		var forget uint64
		for pos := range old {
			if old[pos] != ens[pos] {
				replaced[pos] = true
				forget |= 1 << pos
				if w.failedPos[pos] == old[pos] {
					delete(w.failedPos, pos)
				}
			}
		}
		w.ensemble = ens
		w.c.metrics.ensembleChanges.Inc()
		w.logger.Info("ensemble changed", "from_entry", first, "ensemble", ens, "replaced", failed)
		var sends []addSend
		for _, p := range w.pending {
			p.acked &^= forget
			if !p.sent {
				sends = append(sends, w.sendsLocked(p, nil)...)
			} else {
				sends = append(sends, w.sendsLocked(p, replaced)...)
			}
		}
		w.mu.Unlock()
		w.issue(sends)
		w.sendMu.Unlock()
	}
}

// chooseReplacements picks a new bookie for every failed position, waiting (up to the add
// timeout) for a spare bookie to register when there is none.
func (w *writer) chooseReplacements(old []string, failed map[int]string, exclude map[string]bool) ([]string, error) {
	deadline := time.Now().Add(w.c.cfg.AddEntryTimeout)
	for {
		ens := slices.Clone(old)
		var err error
		pl := w.c.placement()
		for pos, addr := range failed {
			if ens[pos] != addr {
				continue
			}
			var r string
			if r, err = pl.replacement(ens, pos, w.w, exclude); err != nil {
				break
			}
			ens[pos] = r
		}
		if err == nil || time.Now().After(deadline) {
			return ens, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Close waits for pending adds to finish, then records the last entry in metadata.
func (w *writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closing = true
	for len(w.pending) > 0 || w.changing || w.delivering {
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	lac, length, err := w.lac, w.length, w.err
	meta, version := w.meta, w.version
	w.mu.Unlock()
	if errors.Is(err, ErrFenced) {
		return err // the recovering client owns the metadata now
	}
	_, _, err = updateMetadata(ctx, w.c.store, w.id, meta, version, func(m *ledgerMetadata) error {
		if m.State == stateClosed && m.LastEntryID == lac {
			return nil
		}
		if m.State != stateOpen {
			return fmt.Errorf("%w: ledger %d is %s", ErrFenced, w.id, m.State)
		}
		m.State, m.LastEntryID, m.Length = stateClosed, lac, length
		return nil
	})
	if err != nil {
		return fmt.Errorf("ledger %d: close: %w", w.id, err)
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.logger.Debug("ledger closed", "last_entry", lac, "length", length)
	return nil
}
