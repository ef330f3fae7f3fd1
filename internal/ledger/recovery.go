package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// Ledger recovery (open with recovery), reliability.md §2.4-2.5. The steps:
//
//  1. CAS the metadata to IN_RECOVERY. From then on the writer's ensemble changes fail
//     (they require OPEN), so the last fragment is fixed.
//  2. Fence: a fencing read-LAC to every bookie of the last fragment's ensemble; continue
//     once (E-Qa)+1 confirmed, the point where no ack quorum of unfenced bookies is left.
//  3. Recovery reads from max(highest LAC returned, last fragment's first entry - 1) + 1,
//     each with the fence flag (BookKeeper #2614: a bookie that answered "no such entry"
//     must never take that entry afterwards), sent to the entry's whole write set. One good
//     copy recovers the entry; it is absent only after (Qw-Qa)+1 NoSuchEntry answers; any
//     other outcome (corrupt copies, unreachable bookies) is undecidable and aborts with
//     ErrRecoveryIncomplete: recovery never truncates on doubt.
//  4. Write each recovered entry back to its full write set with recovery adds (allowed on a
//     fenced ledger). A bookie failing here is replaced in a local copy of the fragments
//     only; that copy is published by the closing CAS and not before (§2.5).
//  5. CAS to CLOSED with the last recovered entry and the ledger length.
//
// A recovery that fails leaves the ledger IN_RECOVERY; opening it with recovery again starts
// over, which is safe because every step is idempotent on the bookies.

// errAlreadyClosed stops a metadata update when another client closed the ledger first.
var errAlreadyClosed = errors.New("ledger: already closed")

func (c *client) recover(ctx context.Context, id int64, m *ledgerMetadata, version metadata.Version) (*ledgerMetadata, error) {
	logger := c.logger.With("ledger", id)
	m, version, err := updateMetadata(ctx, c.store, id, m, version, func(m *ledgerMetadata) error {
		if m.State == stateClosed {
			return errAlreadyClosed
		}
		m.State = stateInRecovery
		return nil
	})
	if errors.Is(err, errAlreadyClosed) {
		m, _, err = readMetadata(ctx, c.store, id)
		return m, err
	}
	if err != nil {
		return nil, err
	}
	last := m.Fragments[len(m.Fragments)-1]
	maxLAC, err := c.fence(ctx, id, m, last.Ensemble)
	if err != nil {
		return nil, err
	}
	start := max(maxLAC, last.FirstEntry-1) + 1
	logger.Info("recovering ledger", "fenced_lac", maxLAC, "first_entry_to_read", start, "ensemble", last.Ensemble)

	// The length recorded at close is cumulative; it is carried in every entry's header.
	length := int64(0)
	if start > 0 {
		_, h, err := c.readEntry(ctx, m, id, start-1)
		if err != nil {
			return nil, fmt.Errorf("%w: ledger %d: reading entry %d for the ledger length: %w", ErrRecoveryIncomplete, id, start-1, err)
		}
		length = h.Length
	}

	frags := m.clone().Fragments // the local copy write-back may change
	lastEntry := start - 1
	for more := true; more; {
		// Entries are decided in windows of MaxReadsInProgress parallel recovery reads;
		// the ledger ends before the first absent entry (anything a writer got onto a
		// bookie past it was never acknowledged, because an earlier entry was not).
		first := lastEntry + 1
		results := make([]recoveryResult, c.cfg.MaxReadsInProgress)
		var wg sync.WaitGroup
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := &results[i]
				r.payload, r.h, r.found, r.err = c.recoveryRead(ctx, id, m, last.Ensemble, first+int64(i))
			}()
		}
		wg.Wait()
		var payloads [][]byte
		for _, r := range results {
			if r.err != nil {
				return nil, r.err
			}
			if !r.found {
				more = false
				break
			}
			payloads = append(payloads, r.payload)
			length = r.h.Length
		}
		if len(payloads) > 0 {
			if frags, err = c.writeBackBatch(ctx, id, m, frags, first, payloads); err != nil {
				return nil, err
			}
			lastEntry += int64(len(payloads))
		}
	}

	closed, _, err := updateMetadata(ctx, c.store, id, m, version, func(cur *ledgerMetadata) error {
		if cur.State == stateClosed {
			return errAlreadyClosed
		}
		if cur.State != stateInRecovery || !sameFragments(cur.Fragments, m.Fragments) {
			return fmt.Errorf("%w: ledger %d changed during recovery", ErrRecoveryIncomplete, id)
		}
		cur.State, cur.LastEntryID, cur.Length, cur.Fragments = stateClosed, lastEntry, length, frags
		return nil
	})
	if errors.Is(err, errAlreadyClosed) {
		m, _, err = readMetadata(ctx, c.store, id)
		return m, err
	}
	if err != nil {
		return nil, err
	}
	logger.Info("ledger recovered and closed", "last_entry", lastEntry, "length", length)
	return closed, nil
}

func sameFragments(a, b []fragment) bool {
	return slices.EqualFunc(a, b, func(x, y fragment) bool {
		return x.FirstEntry == y.FirstEntry && slices.Equal(x.Ensemble, y.Ensemble)
	})
}

// fence sends a fencing read-LAC to every bookie of ensemble and returns the highest LAC
// among the first (E-Qa)+1 confirmations.
func (c *client) fence(ctx context.Context, id int64, m *ledgerMetadata, ensemble []string) (int64, error) {
	need := len(ensemble) - m.AckQuorum + 1
	type res struct {
		addr string
		lac  int64
		err  error
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan res, len(ensemble))
	for _, addr := range ensemble {
		go func() {
			rctx, rcancel := context.WithTimeout(fctx, c.cfg.ReadEntryTimeout)
			defer rcancel()
			lac, err := c.bk.ReadLAC(rctx, addr, id, true, m.MasterKey)
			ch <- res{addr, lac, err}
		}()
	}
	maxLAC, ok := int64(-1), 0
	var errs []error
	for range ensemble {
		var r res
		select {
		case r = <-ch:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.addr, r.err))
			continue
		}
		ok++
		maxLAC = max(maxLAC, r.lac)
		if ok >= need {
			return maxLAC, nil
		}
	}
	return -1, fmt.Errorf("%w: ledger %d: fenced on %d bookies, need %d: %w", ErrRecoveryIncomplete, id, ok, need, errors.Join(errs...))
}

// recoveryRead decides entry e of the last fragment: found with its payload, or absent.
// Undecidable is ErrRecoveryIncomplete.
func (c *client) recoveryRead(ctx context.Context, id int64, m *ledgerMetadata, ensemble []string, e int64) ([]byte, entryHeader, bool, error) {
	ws := writeSet(e, m.EnsembleSize, m.WriteQuorum)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan readResult, len(ws))
	for _, pos := range ws {
		addr := ensemble[pos]
		go func() {
			qctx, qcancel := context.WithTimeout(rctx, c.cfg.ReadEntryTimeout)
			defer qcancel()
			ent, err := c.bk.ReadEntry(qctx, addr, bookieproto.ReadRequest{LedgerID: id, EntryID: e, MasterKey: m.MasterKey, Fence: true})
			ch <- readResult{addr, ent, err}
		}()
	}
	needAbsent := m.WriteQuorum - m.AckQuorum + 1
	noSuch := 0
	var errs []error
	for range ws {
		var r readResult
		select {
		case r = <-ch:
		case <-ctx.Done():
			return nil, entryHeader{}, false, ctx.Err()
		}
		if r.err == nil {
			h, _, err := decodeEntry(m.digestType(), r.ent.Payload, id, e)
			if err == nil {
				return r.ent.Payload, h, true, nil
			}
			r.err = err // corrupt: neither present nor absent
		}
		if errors.Is(r.err, bookieproto.ErrNoSuchEntry) || errors.Is(r.err, bookieproto.ErrNoSuchLedger) {
			if noSuch++; noSuch >= needAbsent {
				return nil, entryHeader{}, false, nil
			}
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %w", r.addr, r.err))
	}
	return nil, entryHeader{}, false, fmt.Errorf("%w: ledger %d entry %d: %d of %d needed no-such-entry answers: %w",
		ErrRecoveryIncomplete, id, e, noSuch, needAbsent, errors.Join(errs...))
}

type recoveryResult struct {
	payload []byte
	h       entryHeader
	found   bool
	err     error
}

// writeBackBatch writes recovered entries first, first+1, ... back in parallel to the
// current local ensemble; from the first entry that failed anywhere on, it falls back to
// writeBack one entry at a time, which replaces bookies (re-adding an entry a bookie already
// has is harmless).
func (c *client) writeBackBatch(ctx context.Context, id int64, m *ledgerMetadata, frags []fragment, first int64, payloads [][]byte) ([]fragment, error) {
	ens := frags[len(frags)-1].Ensemble
	failed := make([]bool, len(payloads))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, p := range payloads {
		e := first + int64(i)
		for _, pos := range writeSet(e, m.EnsembleSize, m.WriteQuorum) {
			wg.Add(1)
			actx, cancel := context.WithTimeout(ctx, c.cfg.AddEntryTimeout)
			req := bookieproto.AddRequest{LedgerID: id, EntryID: e, MasterKey: m.MasterKey, LAC: e - 1, Payload: p, Recovery: true}
			c.bk.AddEntry(actx, ens[pos], req, func(err error) {
				cancel()
				if err != nil {
					mu.Lock()
					failed[i] = true
					mu.Unlock()
				}
				wg.Done()
			})
		}
	}
	wg.Wait()
	k := slices.Index(failed, true)
	if k < 0 {
		return frags, nil
	}
	var err error
	for i := k; i < len(payloads); i++ {
		if frags, err = c.writeBack(ctx, id, m, frags, first+int64(i), payloads[i]); err != nil {
			return nil, err
		}
	}
	return frags, nil
}

// writeBack stores a recovered entry on its whole write set with recovery adds, replacing
// (in frags only) bookies that fail. It returns the possibly changed fragments.
func (c *client) writeBack(ctx context.Context, id int64, m *ledgerMetadata, frags []fragment, e int64, payload []byte) ([]fragment, error) {
	ens := slices.Clone(frags[len(frags)-1].Ensemble)
	todo := writeSet(e, m.EnsembleSize, m.WriteQuorum)
	excluded := map[string]bool{}
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt > m.EnsembleSize+2 {
			return nil, fmt.Errorf("%w: ledger %d entry %d: write-back failed on too many bookies", ErrRecoveryIncomplete, id, e)
		}
		errs := make([]error, len(todo))
		done := make(chan int, len(todo))
		for i, pos := range todo {
			actx, cancel := context.WithTimeout(ctx, c.cfg.AddEntryTimeout)
			req := bookieproto.AddRequest{LedgerID: id, EntryID: e, MasterKey: m.MasterKey, LAC: e - 1, Payload: payload, Recovery: true}
			c.bk.AddEntry(actx, ens[pos], req, func(err error) {
				cancel()
				errs[i] = err
				done <- i
			})
		}
		for range todo {
			select {
			case <-done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var failed []int
		for i, pos := range todo {
			if errs[i] == nil {
				continue
			}
			if errors.Is(errs[i], bookieproto.ErrUnauthorized) {
				return nil, fmt.Errorf("ledger %d: write-back to %s: %w", id, ens[pos], errs[i])
			}
			c.logger.Warn("recovery write-back failed; replacing bookie in the recovered metadata", "ledger", id, "entry", e, "bookie", ens[pos], "err", errs[i])
			excluded[ens[pos]] = true
			r, err := c.placement().replacement(ens, pos, m.WriteQuorum, excluded)
			if err != nil {
				return nil, fmt.Errorf("%w: ledger %d entry %d: %w", ErrRecoveryIncomplete, id, e, err)
			}
			ens[pos] = r
			failed = append(failed, pos)
		}
		if len(failed) > 0 {
			if last := &frags[len(frags)-1]; last.FirstEntry == e {
				last.Ensemble = slices.Clone(ens)
			} else {
				frags = append(frags, fragment{FirstEntry: e, Ensemble: slices.Clone(ens)})
			}
		}
		todo = failed
	}
	return frags, nil
}
