package ledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
)

// reader is the Reader of an open or closed ledger.
type reader struct {
	c      *client
	id     int64
	logger *slog.Logger

	mu     sync.Mutex
	meta   *ledgerMetadata
	lac    int64
	closed bool // the Reader, not the ledger
}

func newReader(c *client, id int64, m *ledgerMetadata) *reader {
	r := &reader{c: c, id: id, logger: c.logger.With("ledger", id), meta: m, lac: -1}
	if m.State == stateClosed {
		r.lac = m.LastEntryID
	}
	return r
}

func (r *reader) ID() int64 { return r.id }

func (r *reader) LastAddConfirmed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lac
}

func (r *reader) IsClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.meta.State == stateClosed
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

func (r *reader) snapshot() (*ledgerMetadata, int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, 0, fmt.Errorf("%w: reader of ledger %d", ErrClosed, r.id)
	}
	return r.meta, r.lac, nil
}

// learn raises the LAC (never lowers it) and, when given, adopts newer metadata.
func (r *reader) learn(lac int64, m *ledgerMetadata) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m != nil {
		r.meta = m
		if m.State == stateClosed {
			r.lac = m.LastEntryID
			return r.lac
		}
	}
	if lac > r.lac {
		r.lac = lac
	}
	return r.lac
}

// refresh re-reads the metadata. Called after learning a LAC from bookies: the writer
// stores a fragment before any entry in it is acknowledged, so metadata read after the LAC
// was learned describes every entry up to it.
func (r *reader) refresh(ctx context.Context, lac int64) (int64, error) {
	m, _, err := readMetadata(ctx, r.c.store, r.id)
	if err != nil {
		return r.learn(-1, nil), err
	}
	return r.learn(lac, m), nil
}

func (r *reader) Read(ctx context.Context, first, last int64) ([]Entry, error) {
	m, lac, err := r.snapshot()
	if err != nil {
		return nil, err
	}
	if first < 0 || first > last || last > lac {
		return nil, fmt.Errorf("%w: read %d..%d of ledger %d, last add confirmed %d", ErrBadArgument, first, last, r.id, lac)
	}
	out := make([]Entry, 0, last-first+1)
	for e := first; e <= last; {
		fi := m.fragmentIndex(e)
		end := min(last, m.fragmentLast(fi))
		var got []Entry
		if m.WriteQuorum == m.EnsembleSize && end > e {
			got, err = r.c.readBatch(ctx, m, r.id, fi, e, end)
		} else {
			got, err = r.c.readParallel(ctx, m, r.id, e, end)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		e = end + 1
	}
	return out, nil
}

func (r *reader) ReadLastAddConfirmed(ctx context.Context) (int64, error) {
	m, lac, err := r.snapshot()
	if err != nil {
		return -1, err
	}
	if m.State == stateClosed {
		return lac, nil
	}
	ens := m.Fragments[len(m.Fragments)-1].Ensemble
	type res struct {
		lac int64
		err error
	}
	ch := make(chan res, len(ens))
	for _, addr := range ens {
		go func() {
			rctx, cancel := context.WithTimeout(ctx, r.c.cfg.ReadEntryTimeout)
			defer cancel()
			l, err := r.c.bk.ReadLAC(rctx, addr, r.id, false, nil)
			if errors.Is(err, bookieproto.ErrNoSuchLedger) {
				l, err = -1, nil // no entry reached this bookie yet
			}
			ch <- res{l, err}
		}()
	}
	// A lower LAC is always safe to read up to, so any answer counts; the highest wins.
	best, ok := int64(-1), false
	var lastErr error
	for range ens {
		x := <-ch
		if x.err != nil {
			lastErr = x.err
			continue
		}
		ok = true
		best = max(best, x.lac)
	}
	lac, err = r.refresh(ctx, best)
	if err != nil {
		return lac, err
	}
	if !ok && !r.IsClosed() {
		return lac, fmt.Errorf("ledger %d: no bookie of the last ensemble answered for its LAC: %w", r.id, lastErr)
	}
	return lac, nil
}

// WaitLastAddConfirmed long-polls the last ensemble until one bookie reports a LAC above
// previous. On a closed ledger whose last entry is not above previous it returns ErrClosed,
// since the LAC can never grow again.
func (r *reader) WaitLastAddConfirmed(ctx context.Context, previous int64) (int64, error) {
	backoff := 20 * time.Millisecond
	for {
		m, lac, err := r.snapshot()
		if err != nil {
			return -1, err
		}
		if lac > previous {
			return lac, nil
		}
		if m.State == stateClosed {
			return lac, fmt.Errorf("%w: ledger %d ended at entry %d", ErrClosed, r.id, lac)
		}
		got, ok := r.pollOnce(ctx, m, previous)
		if ctx.Err() != nil {
			return lac, ctx.Err()
		}
		if _, err := r.refresh(ctx, got); err != nil && !errors.Is(err, ErrCorrupt) {
			r.logger.Debug("metadata refresh during LAC wait failed", "err", err)
		}
		if !ok {
			select {
			case <-ctx.Done():
				return lac, ctx.Err()
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
		}
	}
}

// pollOnce asks every bookie of the last ensemble to wait for a LAC above previous and
// returns the first such LAC; ok is false when no bookie answered at all.
func (r *reader) pollOnce(ctx context.Context, m *ledgerMetadata, previous int64) (int64, bool) {
	ens := m.Fragments[len(m.Fragments)-1].Ensemble
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type res struct {
		lac int64
		err error
	}
	ch := make(chan res, len(ens))
	for _, addr := range ens {
		go func() {
			l, err := r.c.bk.WaitLAC(pctx, addr, r.id, previous, r.c.cfg.LACLongPollTimeout)
			ch <- res{l, err}
		}()
	}
	best, ok := int64(-1), false
	for range ens {
		x := <-ch
		if x.err != nil {
			continue
		}
		ok = true
		best = max(best, x.lac)
		if best > previous {
			return best, true
		}
	}
	return best, ok
}

// readResult is one bookie's answer to a read.
type readResult struct {
	addr string
	ent  bookieproto.Entry
	err  error
}

// readEntry reads entry e from its write set in read order (c.reads: bookies that stopped
// answering go last): the first replica, then the next one after the speculative timeout
// or at once on an error. A replica overtaken by another one's answer is taken out of the
// read order. A payload that fails its digest counts as that replica failing. The result
// is ErrCorrupt if any replica returned a damaged copy and none a good one, ErrNoSuchEntry
// only if every replica said so.
func (c *client) readEntry(ctx context.Context, m *ledgerMetadata, id, e int64) ([]byte, entryHeader, error) {
	ens := m.ensembleFor(e)
	ws := c.reads.order(ens, writeSet(e, m.EnsembleSize, m.WriteQuorum))
	for _, i := range ws {
		c.reads.maybeProbe(c.bk, ens[i], id, e)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan readResult, len(ws))
	next, outstanding := 0, 0
	pending := map[string]bool{} // asked, not answered
	var slow []string            // pending when a speculative read was sent past them
	launch := func() {
		addr := ens[ws[next]]
		next++
		outstanding++
		pending[addr] = true
		go func() {
			qctx, qcancel := context.WithTimeout(rctx, c.cfg.ReadEntryTimeout)
			defer qcancel()
			ent, err := c.bk.ReadEntry(qctx, addr, bookieproto.ReadRequest{LedgerID: id, EntryID: e})
			c.reads.result(addr, err)
			results <- readResult{addr, ent, err}
		}()
	}
	launch()
	var spec <-chan time.Time
	if c.cfg.SpeculativeReadTimeout > 0 {
		t := time.NewTicker(c.cfg.SpeculativeReadTimeout)
		defer t.Stop()
		spec = t.C
	}
	corrupt, noSuch := 0, 0
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return nil, entryHeader{}, ctx.Err()
		case <-spec:
			if next < len(ws) {
				for a := range pending {
					slow = append(slow, a)
				}
				c.metrics.specReads.Inc()
				launch()
			}
		case res := <-results:
			outstanding--
			delete(pending, res.addr)
			if res.err == nil {
				h, _, err := decodeEntry(m.digestType(), res.ent.Payload, id, e)
				if err == nil {
					for _, a := range slow {
						if pending[a] {
							c.reads.takeOut(a, "a speculative read to another replica answered first")
						}
					}
					return res.ent.Payload, h, nil
				}
				res.err = err
			}
			switch {
			case errors.Is(res.err, ErrCorrupt) || errors.Is(res.err, bookieproto.ErrCorrupt):
				corrupt++
				c.logger.Warn("replica returned a corrupt entry; trying another", "ledger", id, "entry", e, "bookie", res.addr, "err", res.err)
			case errors.Is(res.err, bookieproto.ErrNoSuchEntry) || errors.Is(res.err, bookieproto.ErrNoSuchLedger):
				noSuch++
			}
			lastErr = res.err
			if next < len(ws) {
				launch()
			} else if outstanding == 0 {
				switch {
				case corrupt > 0:
					return nil, entryHeader{}, fmt.Errorf("%w: ledger %d entry %d: no good replica (%d corrupt): %w", ErrCorrupt, id, e, corrupt, lastErr)
				case noSuch == len(ws):
					return nil, entryHeader{}, fmt.Errorf("%w: ledger %d entry %d", ErrNoSuchEntry, id, e)
				}
				return nil, entryHeader{}, fmt.Errorf("ledger %d entry %d: no replica answered: %w", id, e, lastErr)
			}
		}
	}
}

// readParallel reads first..last one entry at a time, MaxReadsInProgress at once.
func (c *client) readParallel(ctx context.Context, m *ledgerMetadata, id, first, last int64) ([]Entry, error) {
	out := make([]Entry, last-first+1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, c.cfg.MaxReadsInProgress)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for e := first; e <= last; e++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p, _, err := c.readEntry(ctx, m, id, e)
			if err != nil {
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			out[e-first] = Entry{LedgerID: id, EntryID: e, Data: p[entryHeaderSize:]}
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// readBatch reads first..last of fragment fi, where every bookie holds every entry
// (Qw == E), with range reads from one bookie at a time, rotating bookies between batches
// and skipping those out of the read order. A range read that has not answered within the
// speculative timeout is raced by the same range read to the next bookie (the slow one is
// taken out of the read order if the other answers first). Whatever a range read does not
// deliver intact is read on its own with readEntry, which has the full replica fallback.
func (c *client) readBatch(ctx context.Context, m *ledgerMetadata, id int64, fi int, first, last int64) ([]Entry, error) {
	ens := m.Fragments[fi].Ensemble
	out := make([]Entry, 0, last-first+1)
	turn := int(first % int64(len(ens)))
	for e := first; e <= last; {
		order := c.batchOrder(ens, turn)
		turn++
		for _, addr := range order {
			c.reads.maybeProbe(c.bk, addr, id, e)
		}
		addr, ents, err := c.readRangeSpeculative(ctx, order, id, e, last)
		n := 0
		if err == nil {
			for _, ent := range ents {
				if ent.EntryID != e+int64(n) {
					break
				}
				_, data, derr := decodeEntry(m.digestType(), ent.Payload, id, ent.EntryID)
				if derr != nil {
					c.logger.Warn("range read returned a corrupt entry; reading it from another replica", "ledger", id, "entry", ent.EntryID, "bookie", addr, "err", derr)
					break
				}
				out = append(out, Entry{LedgerID: id, EntryID: ent.EntryID, Data: data})
				n++
			}
		}
		e += int64(n)
		if n == 0 && e <= last {
			p, _, err := c.readEntry(ctx, m, id, e)
			if err != nil {
				return nil, err
			}
			out = append(out, Entry{LedgerID: id, EntryID: e, Data: p[entryHeaderSize:]})
			e++
		}
	}
	return out, nil
}

// batchOrder is the ensemble rotated to start at turn, with the bookies out of the read
// order moved to the end.
func (c *client) batchOrder(ens []string, turn int) []string {
	idx := make([]int, len(ens))
	for i := range idx {
		idx[i] = (turn + i) % len(ens)
	}
	idx = c.reads.order(ens, idx)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = ens[j]
	}
	return out
}

// readRangeSpeculative sends the range read to order[0], and to the next bookie of order
// each time the speculative timeout passes without an answer (or at once on an error),
// returning the first successful answer and the bookie that gave it. Bookies that were
// raced and lost are taken out of the read order.
func (c *client) readRangeSpeculative(ctx context.Context, order []string, id, first, last int64) (string, []bookieproto.Entry, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type rangeResult struct {
		addr string
		ents []bookieproto.Entry
		err  error
	}
	results := make(chan rangeResult, len(order))
	next, outstanding := 0, 0
	pending := map[string]bool{}
	var slow []string
	launch := func() {
		addr := order[next]
		next++
		outstanding++
		pending[addr] = true
		go func() {
			qctx, qcancel := context.WithTimeout(rctx, c.cfg.ReadEntryTimeout)
			defer qcancel()
			ents, err := c.bk.ReadRange(qctx, addr, id, first, last, c.cfg.ReadBatchMaxBytes)
			c.reads.result(addr, err)
			results <- rangeResult{addr, ents, err}
		}()
	}
	launch()
	var spec <-chan time.Time
	if c.cfg.SpeculativeReadTimeout > 0 {
		t := time.NewTicker(c.cfg.SpeculativeReadTimeout)
		defer t.Stop()
		spec = t.C
	}
	var lastErr error
	for {
		select {
		case <-ctx.Done():
			return "", nil, ctx.Err()
		case <-spec:
			if next < len(order) {
				for a := range pending {
					slow = append(slow, a)
				}
				c.metrics.specReads.Inc()
				launch()
			}
		case res := <-results:
			outstanding--
			delete(pending, res.addr)
			if res.err == nil && len(res.ents) > 0 {
				for _, a := range slow {
					if pending[a] {
						c.reads.takeOut(a, "a speculative range read to another replica answered first")
					}
				}
				return res.addr, res.ents, nil
			}
			lastErr = res.err
			if next < len(order) {
				launch()
			} else if outstanding == 0 {
				return res.addr, nil, lastErr
			}
		}
	}
}
