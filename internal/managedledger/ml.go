package managedledger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
)

// ledgerOpTimeout bounds background ledger and metadata operations (rollover, cursor
// flushes) that have no caller context.
const ledgerOpTimeout = 30 * time.Second

type mlState int

const (
	stateOpen mlState = iota
	stateFenced
	stateClosed
	stateDeleted
)

// ManagedLedger is the log of one topic: an ordered list of ledgers, the last of which is
// open for writes, plus the cursors of its subscriptions. All methods are safe for
// concurrent use.
//
// Lock order: metaMu (serializes ledger-list writes, rollover, trim, cursor create/delete)
// before any Cursor.mu before mu. Code holding mu never takes a cursor lock: it copies the
// cursor list, unlocks, then asks each cursor.
type ManagedLedger struct {
	f    *Factory
	name string
	key  string
	log  *slog.Logger

	metaMu sync.Mutex

	// submitMu orders AppendAsync calls: ops leave pending for the writer in queue order
	// even though the calls happen outside mu (a ledger client may call back synchronously).
	submitMu sync.Mutex

	mu       sync.Mutex
	cfg      Config
	state    mlState
	fenceErr error
	closing  bool // Close or Delete started: adds are refused
	ledgers  []ledgerInfo
	version  metadata.Version

	terminating bool
	terminated  bool
	termPos     Position

	// add is the add pipeline (ml_add.go), guarded by mu like the ledger list it extends.
	add addPipeline

	entriesAdded    int64
	addErrors       int64 // adds that completed with an error
	readErrors      atomic.Int64
	numberOfEntries int64
	totalSize       int64
	lastCreated     time.Time
	lastCreateFail  time.Time
	notify          chan struct{} // closed and replaced whenever entries arrive or state changes
	notifyTaken     bool          // someone waits on notify

	// cur is the cursor registry (cursor.go), guarded by mu (activeCursors is atomic).
	cur     cursorSet
	readers map[int64]ledger.Reader
	// deleteRetries are ledgers whose deletion failed; Trim retries them.
	deleteRetries []int64
	// offload is the offload run and its status (ml_offload.go).
	offload offloadState
	// readLimit, when limited, hides entries at or after it from cursors (read_limit.go).
	readLimit Position
	limited   bool
}

// Name is the managed ledger's name (for topics, "tenant/namespace/domain/topic").
func (ml *ManagedLedger) Name() string { return ml.name }

// Clock is the clock of the factory that opened the managed ledger (Factory.Clock).
func (ml *ManagedLedger) Clock() clock.Clock { return ml.f.clock }

// Config returns the per-topic config in effect.
func (ml *ManagedLedger) Config() Config {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.cfg
}

// SetConfig replaces the per-topic config (a namespace policy changed). Replication changes
// apply to the next ledger; retention and limits apply at once.
func (ml *ManagedLedger) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.cfg = cfg
	return nil
}

func openManagedLedger(ctx context.Context, f *Factory, name string, cfg Config) (*ManagedLedger, error) {
	ml := &ManagedLedger{
		f:       f,
		name:    name,
		key:     f.mlKey(name),
		log:     f.log.With("ml", name),
		cfg:     cfg,
		notify:  make(chan struct{}),
		cur:     cursorSet{cursors: map[string]*Cursor{}, nonDurable: map[*Cursor]struct{}{}},
		readers: map[int64]ledger.Reader{},
	}
	ml.add.ml = ml
	// A previous owner still running (a zombie) may rewrite the ledger list between our
	// read and our CAS, e.g. by rolling over; then recover again: the next attempt fences
	// its new ledger, after which it cannot change the list any more.
	var err error
	for attempt := 0; ; attempt++ {
		err = ml.recoverLedgerList(ctx)
		if err == nil || !errors.Is(err, metadata.ErrBadVersion) || attempt == 4 {
			break
		}
		ml.log.Info("ledger list changed while opening; recovering again", "attempt", attempt+1)
	}
	if err != nil {
		if errors.Is(err, metadata.ErrBadVersion) {
			return nil, fmt.Errorf("%w: %s keeps being changed by another owner: %w", ErrFenced, name, err)
		}
		return nil, err
	}
	if err := ml.recoverCursors(ctx); err != nil {
		ml.abandon()
		return nil, err
	}
	ml.log.Info("managed ledger opened", "ledgers", len(ml.ledgers), "entries", ml.numberOfEntries,
		"cursors", len(ml.cur.cursors), "lastConfirmed", ml.LastConfirmedEntry().String())
	return ml, nil
}

// recoverLedgerList reads the ledger list, recovers (fences) its last ledger, and writes the
// list with a new ledger of our own by CAS. A lost CAS is returned wrapping
// metadata.ErrBadVersion.
func (ml *ManagedLedger) recoverLedgerList(ctx context.Context) error {
	ml.closeReaders()
	ml.ledgers, ml.numberOfEntries, ml.totalSize, ml.terminated = nil, 0, 0, false
	info, ver, err := ml.loadOrCreateInfo(ctx)
	if err != nil {
		return err
	}
	var drop []int64
	if n := len(info.Ledgers); n > 0 {
		dropped, err := ml.recoverLastLedger(ctx, &info.Ledgers[n-1])
		if err != nil {
			ml.closeReaders()
			return err
		}
		if dropped {
			drop = append(drop, info.Ledgers[n-1].LedgerID)
			info.Ledgers = info.Ledgers[:n-1]
		}
	}
	ml.ledgers, ml.version = info.Ledgers, ver
	if info.Terminated != nil {
		ml.terminated, ml.termPos = true, *info.Terminated
	}
	for _, l := range ml.ledgers {
		ml.numberOfEntries += l.Entries
		ml.totalSize += l.Size
	}
	// A new owner always writes to a ledger of its own; the recovered one is closed.
	if !ml.terminated {
		w, err := ml.createLedger(ctx)
		if err != nil {
			ml.closeReaders()
			return err
		}
		now := ml.f.now()
		list := append(append([]ledgerInfo(nil), ml.ledgers...), ledgerInfo{LedgerID: w.ID(), Timestamp: now.UnixMilli()})
		nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(&mlInfo{Ledgers: list}), ml.version)
		if err != nil {
			ml.deleteLedgerQuietly(w.ID())
			ml.closeReaders()
			return fmt.Errorf("managedledger: %s: writing ledger list: %w", ml.name, err)
		}
		ml.ledgers, ml.version = list, nv
		ml.add.writer, ml.add.writerCreated, ml.lastCreated = w, now, now
		ml.add.tailLedger, ml.add.ackedEntry = w.ID(), -1
	} else if len(drop) > 0 {
		nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(&mlInfo{Ledgers: ml.ledgers, Terminated: info.Terminated}), ml.version)
		if err != nil {
			ml.closeReaders()
			return fmt.Errorf("managedledger: %s: writing ledger list: %w", ml.name, err)
		}
		ml.version = nv
	}
	for _, id := range drop {
		ml.deleteLedgerQuietly(id)
	}
	return nil
}

func (ml *ManagedLedger) loadOrCreateInfo(ctx context.Context) (*mlInfo, metadata.Version, error) {
	for range 3 {
		kv, err := ml.f.store.Get(ctx, ml.key)
		if errors.Is(err, metadata.ErrNotFound) {
			info := &mlInfo{}
			ver, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(info), metadata.NotExists)
			if errors.Is(err, metadata.ErrBadVersion) {
				continue // created concurrently: read theirs
			}
			if err != nil {
				return nil, 0, fmt.Errorf("managedledger: %s: creating: %w", ml.name, err)
			}
			return info, ver, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("managedledger: %s: reading ledger list: %w", ml.name, err)
		}
		info, err := decodeMLInfo(kv.Value)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", ml.name, err)
		}
		return info, kv.Version, nil
	}
	return nil, 0, fmt.Errorf("%w: %s: ledger list keeps changing while opening", ErrFenced, ml.name)
}

// recoverLastLedger opens the previous owner's last ledger with recovery, which fences it on
// the bookies, and fills in its entry count and size. It reports whether the ledger is empty
// (or was never created) and should be dropped from the list.
func (ml *ManagedLedger) recoverLastLedger(ctx context.Context, li *ledgerInfo) (bool, error) {
	r, err := ml.f.lc.Open(ctx, li.LedgerID, ledger.OpenOptions{Recovery: true, Password: ml.cfg.Password})
	if errors.Is(err, ledger.ErrNoSuchLedger) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("managedledger: %s: recovering ledger %d: %w", ml.name, li.LedgerID, err)
	}
	lac := r.LastAddConfirmed()
	if lac < 0 {
		_ = r.Close()
		return true, nil
	}
	if li.Entries != lac+1 || li.Size == 0 {
		size, err := estimateLedgerSize(ctx, r, lac)
		if err != nil {
			_ = r.Close()
			return false, fmt.Errorf("managedledger: %s: sizing recovered ledger %d: %w", ml.name, li.LedgerID, err)
		}
		li.Entries, li.Size = lac+1, size
	}
	li.Timestamp = ml.f.now().UnixMilli()
	ml.readers[li.LedgerID] = r
	return false, nil
}

// estimateLedgerSize returns the byte size of entries 0..lac: exact for small ledgers, and
// extrapolated from the newest entries for big ones (the reader API has no length, and
// reading gigabytes at open would delay a topic takeover; the size only feeds retention,
// quotas and stats).
func estimateLedgerSize(ctx context.Context, r ledger.Reader, lac int64) (int64, error) {
	const exactUpTo, sample = 1024, 256
	first := int64(0)
	if lac+1 > exactUpTo {
		first = lac + 1 - sample
	}
	es, err := r.Read(ctx, first, lac)
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, e := range es {
		sum += int64(len(e.Data))
	}
	if first == 0 || len(es) == 0 {
		return sum, nil
	}
	return sum * (lac + 1) / int64(len(es)), nil
}

func (ml *ManagedLedger) createLedger(ctx context.Context) (ledger.Writer, error) {
	ml.mu.Lock()
	cfg := ml.cfg
	ml.mu.Unlock()
	w, err := ml.f.lc.Create(ctx, ledger.CreateOptions{
		EnsembleSize:   cfg.EnsembleSize,
		WriteQuorum:    cfg.WriteQuorum,
		AckQuorum:      cfg.AckQuorum,
		Digest:         cfg.Digest,
		Password:       cfg.Password,
		CustomMetadata: map[string]string{"application": "magnetar", "component": "managed-ledger", "managedLedger": ml.name},
	})
	if err != nil {
		ml.mu.Lock()
		ml.lastCreateFail = ml.f.now()
		ml.mu.Unlock()
		return nil, fmt.Errorf("%w: %s: creating ledger: %w", ErrLedgerUnavailable, ml.name, err)
	}
	return w, nil
}

// deleteLedgerQuietly deletes a ledger no longer referenced by any metadata. A failure is
// remembered and retried by the next Trim (bounded: beyond maxDeleteRetries ids the oldest
// are given up, logged, and stay on the bookies until deleted by hand).
func (ml *ManagedLedger) deleteLedgerQuietly(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerOpTimeout)
	defer cancel()
	ml.f.cache.invalidateLedger(id)
	err := ml.f.lc.Delete(ctx, id)
	if err == nil || errors.Is(err, ledger.ErrNoSuchLedger) {
		return
	}
	ml.log.Warn("deleting ledger failed; retrying at the next retention check", "ledger", id, "err", err)
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ml.deleteRetries = append(ml.deleteRetries, id)
	if n := len(ml.deleteRetries); n > maxDeleteRetries {
		ml.log.Error("too many ledgers waiting for deletion; giving up on the oldest, which stay on the bookies",
			"ledgers", ml.deleteRetries[:n-maxDeleteRetries])
		ml.deleteRetries = append([]int64(nil), ml.deleteRetries[n-maxDeleteRetries:]...)
	}
}

// maxDeleteRetries bounds the ledgers remembered for another deletion attempt.
const maxDeleteRetries = 1000

// retryDeletes tries again to delete ledgers whose deletion failed.
func (ml *ManagedLedger) retryDeletes() {
	ml.mu.Lock()
	ids := ml.deleteRetries
	ml.deleteRetries = nil
	ml.mu.Unlock()
	for _, id := range ids {
		ml.deleteLedgerQuietly(id)
	}
}

// notifyLocked wakes every waiting read. The channel is replaced only if someone took it,
// so the add path does not allocate a channel per entry when nobody waits.
func (ml *ManagedLedger) notifyLocked() {
	if !ml.notifyTaken {
		return
	}
	close(ml.notify)
	ml.notify = make(chan struct{})
	ml.notifyTaken = false
}

// waitChanLocked returns the channel closed at the next notifyLocked.
func (ml *ManagedLedger) waitChanLocked() <-chan struct{} {
	ml.notifyTaken = true
	return ml.notify
}

// ---- position arithmetic over the ledger list (all *Locked: caller holds mu) ----

// indexLocked returns the index of the first ledger with id >= id.
func (ml *ManagedLedger) indexLocked(id int64) int {
	return sort.Search(len(ml.ledgers), func(i int) bool { return ml.ledgers[i].LedgerID >= id })
}

// endLocked is the position after the last confirmed entry: where a read waits.
func (ml *ManagedLedger) endLocked() Position {
	if len(ml.ledgers) == 0 {
		return Position{0, 0}
	}
	l := ml.ledgers[len(ml.ledgers)-1]
	return Position{l.LedgerID, l.Entries}
}

// normalizeLocked returns the first stored position >= p, or endLocked if there is none.
func (ml *ManagedLedger) normalizeLocked(p Position) Position {
	for i := ml.indexLocked(p.LedgerID); i < len(ml.ledgers); i++ {
		l := ml.ledgers[i]
		e := int64(0)
		if l.LedgerID == p.LedgerID && p.EntryID > 0 {
			e = p.EntryID
		}
		if e < l.Entries {
			return Position{l.LedgerID, e}
		}
	}
	return ml.endLocked()
}

// nextLocked is the first stored position after p (or endLocked).
func (ml *ManagedLedger) nextLocked(p Position) Position {
	return ml.normalizeLocked(Position{p.LedgerID, p.EntryID + 1})
}

// lastConfirmedLocked is the newest stored entry, or (first ledger, -1) when there is none.
func (ml *ManagedLedger) lastConfirmedLocked() Position {
	for i := len(ml.ledgers) - 1; i >= 0; i-- {
		if l := ml.ledgers[i]; l.Entries > 0 {
			return Position{l.LedgerID, l.Entries - 1}
		}
	}
	if len(ml.ledgers) > 0 {
		return Position{ml.ledgers[len(ml.ledgers)-1].LedgerID, -1}
	}
	return Position{0, -1}
}

// firstLocked is the position before the oldest stored entry: a cursor with this mark-delete
// position has consumed nothing.
func (ml *ManagedLedger) firstLocked() Position {
	if len(ml.ledgers) == 0 {
		return Position{0, -1}
	}
	return Position{ml.ledgers[0].LedgerID, -1}
}

// isStoredLocked reports whether p names an entry that exists.
func (ml *ManagedLedger) isStoredLocked(p Position) bool {
	i := ml.indexLocked(p.LedgerID)
	return i < len(ml.ledgers) && ml.ledgers[i].LedgerID == p.LedgerID && p.EntryID >= 0 && p.EntryID < ml.ledgers[i].Entries
}

// countLocked counts stored positions in (from, to].
func (ml *ManagedLedger) countLocked(from, to Position) int64 {
	n, _ := ml.countSizeLocked(from, to)
	return n
}

// countSizeLocked counts stored positions in (from, to] and estimates their bytes from each
// ledger's average entry size.
func (ml *ManagedLedger) countSizeLocked(from, to Position) (int64, int64) {
	var n, size int64
	for i := ml.indexLocked(from.LedgerID); i < len(ml.ledgers); i++ {
		l := ml.ledgers[i]
		if l.LedgerID > to.LedgerID {
			break
		}
		lo, hi := int64(0), l.Entries-1
		if l.LedgerID == from.LedgerID {
			lo = from.EntryID + 1
		}
		if l.LedgerID == to.LedgerID && to.EntryID < hi {
			hi = to.EntryID
		}
		if hi >= lo {
			k := hi - lo + 1
			n += k
			if k == l.Entries {
				size += l.Size
			} else {
				size += l.Size / l.Entries * k
			}
		}
	}
	return n, size
}

// advanceLocked returns the position k stored entries after p (k >= 1), capped at the last
// confirmed entry.
func (ml *ManagedLedger) advanceLocked(p Position, k int64) Position {
	for i := ml.indexLocked(p.LedgerID); i < len(ml.ledgers); i++ {
		l := ml.ledgers[i]
		lo := int64(0)
		if l.LedgerID == p.LedgerID {
			lo = p.EntryID + 1
		}
		avail := l.Entries - lo
		if avail <= 0 {
			continue
		}
		if k <= avail {
			return Position{l.LedgerID, lo + k - 1}
		}
		k -= avail
	}
	return ml.lastConfirmedLocked()
}

// ---- read-only accessors ----

// LastConfirmedEntry is the newest entry whose add completed, or (ledger, -1) if none.
func (ml *ManagedLedger) LastConfirmedEntry() Position {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.lastConfirmedLocked()
}

// FirstPosition is the oldest stored entry (or the end position when the log is empty).
func (ml *ManagedLedger) FirstPosition() Position {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.normalizeLocked(ml.firstLocked())
}

// NumberOfEntries is the number of stored entries (not yet trimmed).
func (ml *ManagedLedger) NumberOfEntries() int64 {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.numberOfEntries
}

// TotalSize is the byte size of stored entries.
func (ml *ManagedLedger) TotalSize() int64 {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.totalSize
}

// IsTerminated reports whether Terminate has completed.
func (ml *ManagedLedger) IsTerminated() bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.terminated
}

// LedgerIDs lists the ledgers of the log, oldest first.
func (ml *ManagedLedger) LedgerIDs() []int64 {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	ids := make([]int64, len(ml.ledgers))
	for i, l := range ml.ledgers {
		ids[i] = l.LedgerID
	}
	return ids
}

// Cursors lists the durable cursors.
func (ml *ManagedLedger) Cursors() []*Cursor {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.cur.list(false)
}

// list is the cursors by name, readers too if withNonDurable. Caller holds ml.mu.
func (cs *cursorSet) list(withNonDurable bool) []*Cursor {
	out := make([]*Cursor, 0, len(cs.cursors)+len(cs.nonDurable))
	for _, c := range cs.cursors {
		out = append(out, c)
	}
	if withNonDurable {
		for c := range cs.nonDurable {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Cursor returns the durable cursor called name.
func (ml *ManagedLedger) Cursor(name string) (*Cursor, bool) {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	c, ok := ml.cur.cursors[name]
	return c, ok
}

// waitPending waits until every add in flight has completed or failed.
func (ml *ManagedLedger) waitPending(ctx context.Context) error {
	for {
		ml.mu.Lock()
		if len(ml.add.pending) == 0 {
			ml.mu.Unlock()
			return nil
		}
		ch := ml.waitChanLocked()
		ml.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Terminate stops writes for good: adds in flight complete, then the last position is
// recorded in metadata and returned; later adds fail with ErrTerminated and readers that
// reach it get ErrNoMoreEntries.
func (ml *ManagedLedger) Terminate(ctx context.Context) (Position, error) {
	ml.mu.Lock()
	if ml.terminated {
		p := ml.termPos
		ml.mu.Unlock()
		return p, nil
	}
	if err := ml.stateErrLocked(); err != nil {
		ml.mu.Unlock()
		return Position{}, err
	}
	ml.terminating = true
	ml.mu.Unlock()
	if err := ml.waitPending(ctx); err != nil {
		return Position{}, err
	}
	ml.metaMu.Lock()
	defer ml.metaMu.Unlock()
	ml.mu.Lock()
	w := ml.add.writer
	ml.add.writer = nil
	ml.mu.Unlock()
	if w != nil {
		if err := w.Close(ctx); err != nil {
			ml.log.Warn("closing ledger at terminate failed; the next owner recovers it", "ledger", w.ID(), "err", err)
		}
	}
	ml.mu.Lock()
	pos := ml.lastConfirmedLocked()
	list := append([]ledgerInfo(nil), ml.ledgers...)
	if w != nil && len(list) > 0 {
		list[len(list)-1].Timestamp = ml.f.now().UnixMilli()
	}
	ver := ml.version
	ml.mu.Unlock()
	nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(&mlInfo{Ledgers: list, Terminated: &pos}), ver)
	if err != nil {
		ml.mu.Lock()
		defer ml.mu.Unlock()
		if errors.Is(err, metadata.ErrBadVersion) {
			ml.fenceLocked(err)
		}
		return Position{}, fmt.Errorf("managedledger: %s: recording termination: %w", ml.name, err)
	}
	ml.mu.Lock()
	ml.version, ml.ledgers = nv, list
	ml.terminated, ml.termPos = true, pos
	ml.notifyLocked()
	ml.mu.Unlock()
	ml.log.Info("managed ledger terminated", "lastPosition", pos.String())
	return pos, nil
}

// usable reports whether the instance can still serve the topic (not fenced, closing or
// closed).
func (ml *ManagedLedger) usable() bool {
	ml.mu.Lock()
	defer ml.mu.Unlock()
	return ml.state == stateOpen && !ml.closing
}

// stateErrLocked is the error an operation gets in the current state (nil when open).
func (ml *ManagedLedger) stateErrLocked() error {
	switch {
	case ml.state == stateFenced:
		return ml.fenceErr
	case ml.state != stateOpen || ml.closing:
		return fmt.Errorf("%w: %s", ErrClosed, ml.name)
	}
	return nil
}

// fenceLocked moves to the fenced state: a newer owner took over; every pending add fails.
func (ml *ManagedLedger) fenceLocked(cause error) {
	if ml.state == stateFenced {
		return
	}
	ml.state = stateFenced
	ml.fenceErr = fmt.Errorf("%w: %s: %w", ErrFenced, ml.name, cause)
	ml.add.failPendingLocked(ml.fenceErr)
	ml.notifyLocked()
	ml.log.Warn("managed ledger fenced by a newer owner; it accepts no more writes", "err", cause)
}

// Close completes adds in flight, closes the current ledger, records the final ledger list,
// persists every cursor and forgets the managed ledger in its factory. Reads in progress
// fail with ErrClosed.
func (ml *ManagedLedger) Close(ctx context.Context) error {
	ml.mu.Lock()
	if ml.state == stateClosed || ml.state == stateDeleted || ml.closing {
		ml.mu.Unlock()
		return nil
	}
	ml.closing = true
	ml.mu.Unlock()
	waitErr := ml.waitPending(ctx)

	ml.metaMu.Lock()
	ml.mu.Lock()
	fenced := ml.state == stateFenced
	w := ml.add.writer
	ml.add.writer = nil
	cursors := ml.cur.list(true)
	ml.mu.Unlock()
	var errs []error
	if waitErr != nil {
		errs = append(errs, waitErr)
	}
	if w != nil && !fenced {
		if err := w.Close(ctx); err != nil && !errors.Is(err, ledger.ErrFenced) {
			errs = append(errs, fmt.Errorf("managedledger: %s: closing ledger %d: %w", ml.name, w.ID(), err))
		}
		// Record the exact size of the ledger just closed so the next owner need not
		// estimate it.
		ml.mu.Lock()
		if ml.state == stateOpen && len(ml.ledgers) > 0 {
			ml.ledgers[len(ml.ledgers)-1].Timestamp = ml.f.now().UnixMilli()
			info := &mlInfo{Ledgers: ml.ledgers}
			if ml.terminated {
				info.Terminated = &ml.termPos
			}
			ver := ml.version
			ml.mu.Unlock()
			if nv, err := ml.f.store.Put(ctx, ml.key, encodeMLInfo(info), ver); err == nil {
				ml.mu.Lock()
				ml.version = nv
				ml.mu.Unlock()
			} else {
				errs = append(errs, fmt.Errorf("managedledger: %s: recording ledger list at close: %w", ml.name, err))
			}
		} else {
			ml.mu.Unlock()
		}
	}
	ml.metaMu.Unlock()
	for _, c := range cursors {
		if fenced {
			c.stopTimers() // the newer owner has the cursors now
			continue
		}
		if err := c.shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	ml.mu.Lock()
	if ml.state != stateDeleted {
		ml.state = stateClosed
	}
	ml.add.failPendingLocked(fmt.Errorf("%w: %s", ErrClosed, ml.name))
	ml.notifyLocked()
	ml.mu.Unlock()
	ml.add.drainCallbacks()
	ml.closeReaders()
	ml.f.forget(ml)
	return errors.Join(errs...)
}

// abandon drops the managed ledger without writing anything, as a crash would (tests use it
// to simulate a broker dying; open uses it after a failed cursor recovery).
func (ml *ManagedLedger) abandon() {
	ml.mu.Lock()
	ml.state = stateClosed
	cursors := ml.cur.list(true)
	ml.notifyLocked()
	ml.mu.Unlock()
	for _, c := range cursors {
		c.stopTimers()
	}
	ml.closeReaders()
	ml.f.forget(ml)
}

func (ml *ManagedLedger) closeReaders() {
	ml.mu.Lock()
	rs := ml.readers
	ml.readers = map[int64]ledger.Reader{}
	ml.mu.Unlock()
	for _, r := range rs {
		_ = r.Close()
	}
}

// Delete removes the managed ledger: its cursors (with their ledgers), every ledger of the
// log (through the ledger client, so bookies reclaim the storage) and its metadata.
func (ml *ManagedLedger) Delete(ctx context.Context) error {
	ml.mu.Lock()
	if ml.state == stateDeleted {
		ml.mu.Unlock()
		return nil
	}
	ml.mu.Unlock()
	for _, c := range ml.Cursors() {
		if err := ml.DeleteCursor(ctx, c.name); err != nil && !errors.Is(err, ErrCursorNotFound) {
			return err
		}
	}
	if err := ml.Close(ctx); err != nil && !errors.Is(err, ErrFenced) {
		ml.log.Warn("close before delete failed; deleting anyway", "err", err)
	}
	ml.mu.Lock()
	ml.state = stateDeleted
	ids := make([]int64, len(ml.ledgers))
	for i, l := range ml.ledgers {
		ids[i] = l.LedgerID
	}
	infos := append([]ledgerInfo(nil), ml.ledgers...)
	ml.mu.Unlock()
	ml.deleteOffloaded(infos)
	var errs []error
	for _, id := range ids {
		if err := ml.f.lc.Delete(ctx, id); err != nil && !errors.Is(err, ledger.ErrNoSuchLedger) {
			errs = append(errs, fmt.Errorf("managedledger: %s: deleting ledger %d: %w", ml.name, id, err))
		}
		ml.f.cache.invalidateLedger(id)
	}
	if err := ml.f.store.Delete(ctx, ml.key, metadata.AnyVersion); err != nil && !errors.Is(err, metadata.ErrNotFound) {
		errs = append(errs, fmt.Errorf("managedledger: %s: deleting metadata: %w", ml.name, err))
	}
	return errors.Join(errs...)
}
