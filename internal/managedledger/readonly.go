package managedledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/offload"
)

// Snapshot is a read-only view of a managed ledger as it was when opened, for readers that
// do not own the log (the SQL worker; Pulsar's ReadOnlyManagedLedger): it fences nothing,
// writes nothing, registers no cursor (so retention is never held back) and does not use
// the broker's entry cache, so a large scan does not evict what live consumers read.
//
// What it sees: every ledger in the ledger list at open time, up to the last confirmed
// entry. When the log is open in this process (standalone), that is the owner's exact last
// confirmed entry; otherwise it is the last ledger's LAC as its bookies report it, which may
// lag the owner by the entries whose confirmation rides on the next add (BookKeeper's LAC
// piggyback), as with Pulsar SQL. Ledgers in tiered storage are read from there.
//
// A ledger trimmed by retention after the snapshot was taken reads as an error wrapping
// ErrInvalidPosition. A Snapshot is safe for concurrent use.
type Snapshot struct {
	f     *Factory
	name  string
	infos []ledgerInfo
	// ledgers is what readers see (Entries filled in for the last ledger).
	ledgers []SnapshotLedger
	owner   *ManagedLedger // the log when it is open here: entries past the bookies' LAC
	// off is the log's own Config.Offloader; else offloaded ledgers are read through the
	// factory (Factory.offloaderAt) with offCfg, the log's policy, as the fallback settings.
	off    offload.Offloader
	offCfg offload.Config
	pass   []byte

	mu      sync.Mutex
	readers map[int64]ledger.Reader
	closed  bool
}

// SnapshotLedger is one ledger of a snapshot: entries 0..Entries-1 are readable.
type SnapshotLedger struct {
	ID      int64
	Entries int64
	// Size is the ledger's bytes (final for closed ledgers, an estimate for the last).
	Size int64
	// Offloaded says reads go to tiered storage.
	Offloaded bool
	// Timestamp is the ledger's close time (creation time for the last), Unix ms.
	Timestamp int64
}

// OpenSnapshot takes a read-only snapshot of the managed ledger called name. A name with
// no ledger list is ErrNotFound.
func (f *Factory) OpenSnapshot(ctx context.Context, name string) (*Snapshot, error) {
	s := &Snapshot{f: f, name: name, pass: f.DefaultConfig().Password, readers: map[int64]ledger.Reader{}}
	if ml, ok := f.Get(name); ok && ml.usable() {
		ml.mu.Lock()
		s.infos = append([]ledgerInfo(nil), ml.ledgers...)
		last := ml.lastConfirmedLocked()
		s.off, s.offCfg = ml.cfg.Offloader, ml.offloadConfigLocked()
		s.pass = ml.cfg.Password
		ml.mu.Unlock()
		s.owner = ml
		for _, li := range s.infos {
			n := li.Entries
			if li.LedgerID == last.LedgerID {
				n = last.EntryID + 1
			}
			s.ledgers = append(s.ledgers, s.describe(li, n))
		}
		return s, nil
	}
	kv, err := f.store.Get(ctx, f.mlKey(name))
	if errors.Is(err, metadata.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("managedledger: %s: reading ledger list: %w", name, err)
	}
	info, err := decodeMLInfo(kv.Value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.infos = info.Ledgers
	for i, li := range s.infos {
		n := li.Entries
		if i == len(s.infos)-1 && li.Offload == nil {
			// The last ledger may still be open: ask its bookies (no recovery, no fencing).
			if n, err = s.lastEntries(ctx, li); err != nil {
				_ = s.Close()
				return nil, err
			}
		}
		s.ledgers = append(s.ledgers, s.describe(li, n))
	}
	return s, nil
}

func (s *Snapshot) describe(li ledgerInfo, entries int64) SnapshotLedger {
	size := li.Size
	if li.Entries > 0 && entries != li.Entries {
		size = li.Size / li.Entries * entries
	}
	return SnapshotLedger{ID: li.LedgerID, Entries: entries, Size: size, Offloaded: s.offloaded(li), Timestamp: li.Timestamp}
}

// offloaded tells whether reads of li go to tiered storage (the managed ledger's rule,
// ml_offload.go:openOffloaded).
func (s *Snapshot) offloaded(li ledgerInfo) bool {
	oc := li.Offload
	if oc == nil || !oc.Complete || s.off == nil && s.f.offloader == nil && s.f.offloadPool == nil {
		return false
	}
	if oc.BookkeeperDeleted {
		return true
	}
	prio := s.f.DefaultConfig().Offload.ReadPriority
	if s.owner != nil {
		prio = s.owner.Config().Offload.ReadPriority
	}
	return prio != offload.ReadBookkeeperFirst
}

// lastEntries is the number of readable entries of the last ledger of a log not open here.
func (s *Snapshot) lastEntries(ctx context.Context, li ledgerInfo) (int64, error) {
	r, err := s.f.lc.Open(ctx, li.LedgerID, ledger.OpenOptions{Password: s.pass})
	if errors.Is(err, ledger.ErrNoSuchLedger) {
		return 0, nil // listed before it was created; never written
	}
	if err != nil {
		return 0, fmt.Errorf("managedledger: %s: opening ledger %d read-only: %w", s.name, li.LedgerID, err)
	}
	lac := r.LastAddConfirmed()
	if !r.IsClosed() {
		if lac, err = r.ReadLastAddConfirmed(ctx); err != nil {
			_ = r.Close()
			return 0, fmt.Errorf("managedledger: %s: LAC of ledger %d: %w", s.name, li.LedgerID, err)
		}
	}
	s.mu.Lock()
	s.readers[li.LedgerID] = r
	s.mu.Unlock()
	return lac + 1, nil
}

// Name is the managed ledger's name.
func (s *Snapshot) Name() string { return s.name }

// Ledgers are the snapshot's ledgers, oldest first (empty ones included).
func (s *Snapshot) Ledgers() []SnapshotLedger { return append([]SnapshotLedger(nil), s.ledgers...) }

// LastConfirmed is the newest entry the snapshot sees, or entry -1 when it sees none.
func (s *Snapshot) LastConfirmed() Position {
	for i := len(s.ledgers) - 1; i >= 0; i-- {
		if l := s.ledgers[i]; l.Entries > 0 {
			return Position{l.ID, l.Entries - 1}
		}
	}
	return Position{-1, -1}
}

// Read returns entries first..last of one of the snapshot's ledgers, straight from the
// bookies or tiered storage.
func (s *Snapshot) Read(ctx context.Context, ledgerID, first, last int64) ([]Entry, error) {
	var sl *SnapshotLedger
	var li ledgerInfo
	for i := range s.ledgers {
		if s.ledgers[i].ID == ledgerID {
			sl, li = &s.ledgers[i], s.infos[i]
		}
	}
	if sl == nil || first < 0 || first > last || last >= sl.Entries {
		return nil, fmt.Errorf("%w: %s: entries %d..%d of ledger %d are not in the snapshot", ErrInvalidPosition, s.name, first, last, ledgerID)
	}
	r, err := s.reader(ctx, li, sl.Offloaded)
	if err != nil {
		return nil, err
	}
	lac := r.LastAddConfirmed()
	if last > lac && !sl.Offloaded {
		if lac, err = r.ReadLastAddConfirmed(ctx); err != nil {
			return nil, s.readErr(ctx, ledgerID, fmt.Errorf("LAC: %w", err))
		}
	}
	var out []Entry
	if upTo := min(last, lac); upTo >= first {
		es, err := r.Read(ctx, first, upTo)
		if err != nil {
			return nil, s.readErr(ctx, ledgerID, err)
		}
		out = make([]Entry, 0, last-first+1)
		for _, e := range es {
			out = append(out, Entry{Position: Position{e.LedgerID, e.EntryID}, Data: e.Data})
		}
	}
	if next := first + int64(len(out)); next <= last {
		// Confirmed to the owner but not yet known to the bookies as confirmed: only the
		// owner has them (its tail), and only the owner in this process can be asked.
		if s.owner == nil {
			return nil, fmt.Errorf("%w: %s: ledger %d: entry %d beyond the bookies' LAC %d", ErrInvalidPosition, s.name, ledgerID, next, lac)
		}
		ps := make([]Position, 0, last-next+1)
		for e := next; e <= last; e++ {
			ps = append(ps, Position{ledgerID, e})
		}
		es, err := s.owner.readPositions(ctx, ps)
		if err != nil {
			return nil, s.readErr(ctx, ledgerID, err)
		}
		out = append(out, es...)
	}
	return out, nil
}

// readErr says "trimmed" when the ledger left the list since the snapshot was taken.
func (s *Snapshot) readErr(ctx context.Context, id int64, err error) error {
	if kv, gerr := s.f.store.Get(ctx, s.f.mlKey(s.name)); gerr == nil {
		if info, derr := decodeMLInfo(kv.Value); derr == nil {
			listed := false
			for _, li := range info.Ledgers {
				listed = listed || li.LedgerID == id
			}
			if !listed {
				return fmt.Errorf("%w: %s: ledger %d was deleted by retention during the read: %w", ErrInvalidPosition, s.name, id, err)
			}
		}
	} else if errors.Is(gerr, metadata.ErrNotFound) {
		return fmt.Errorf("%w: %s was deleted during the read: %w", ErrNotFound, s.name, err)
	}
	return fmt.Errorf("managedledger: %s: reading ledger %d: %w", s.name, id, err)
}

// openOffloaded opens li in tiered storage where its offload context says it is.
func (s *Snapshot) openOffloaded(ctx context.Context, li ledgerInfo) (ledger.Reader, error) {
	oc := li.Offload
	o, release := s.off, noRelease
	if o == nil {
		var err error
		if o, release, err = s.f.offloaderAt(ctx, li.LedgerID, oc, s.offCfg); err != nil {
			return nil, err
		}
	}
	h, err := o.Open(ctx, offload.Ref{LedgerID: li.LedgerID, UUID: oc.UUID, Driver: oc.DriverName, Metadata: oc.DriverMetadata, Topic: s.name})
	if err != nil {
		release()
		return nil, err
	}
	return &leasedHandle{ReadHandle: h, release: release}, nil
}

func (s *Snapshot) reader(ctx context.Context, li ledgerInfo, offloaded bool) (ledger.Reader, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: snapshot of %s", ErrClosed, s.name)
	}
	r := s.readers[li.LedgerID]
	s.mu.Unlock()
	if r != nil {
		return r, nil
	}
	var err error
	if offloaded {
		if r, err = s.openOffloaded(ctx, li); err != nil && !li.Offload.BookkeeperDeleted {
			// The bookie copy is still there: read it (as ml_offload.go:openOffloaded does).
			r, err = s.f.lc.Open(ctx, li.LedgerID, ledger.OpenOptions{Password: s.pass})
		}
	} else {
		r, err = s.f.lc.Open(ctx, li.LedgerID, ledger.OpenOptions{Password: s.pass})
	}
	if err != nil {
		return nil, s.readErr(ctx, li.LedgerID, fmt.Errorf("opening: %w", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.readers[li.LedgerID]; old != nil || s.closed {
		_ = r.Close()
		if s.closed {
			return nil, fmt.Errorf("%w: snapshot of %s", ErrClosed, s.name)
		}
		return old, nil
	}
	s.readers[li.LedgerID] = r
	return r, nil
}

// Close releases the snapshot's ledger readers.
func (s *Snapshot) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, r := range s.readers {
		errs = append(errs, r.Close())
		delete(s.readers, id)
	}
	s.closed = true
	return errors.Join(errs...)
}

// ListPrefix returns the names of the managed ledgers whose names start with prefix (a
// namespace's topics: "tenant/ns/persistent/"), without listing every other log.
func (f *Factory) ListPrefix(ctx context.Context, prefix string) ([]string, error) {
	kvs, err := f.store.List(ctx, f.mlKey(prefix))
	if err != nil {
		return nil, fmt.Errorf("managedledger: listing %s: %w", prefix, err)
	}
	var names []string
	for _, kv := range kvs {
		rest := kv.Key[len(f.root)+1:]
		if containsSlash(rest) {
			continue // a cursor key
		}
		if n, err := url.PathUnescape(rest); err == nil && strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return names, nil
}
