package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/logging/pebblelog"
)

// Errors of the index.
var (
	ErrCorrupt = errors.New("index: corrupt value")
)

const (
	prefixEntry      = 'e'
	prefixLedger     = 'l'
	prefixLog        = 'g'
	prefixCheckpoint = 'c'

	flagFenced  = 1
	flagDeleted = 2
)

// Location is where an entry's record is in the entry logs.
type Location struct {
	Log    uint64
	Offset uint32
	Size   uint32
}

// LedgerMeta is a ledger's persisted state.
type LedgerMeta struct {
	MasterKey []byte
	Fenced    bool
	Deleted   bool
	LAC       int64
	// Limbo: journal damage may have lost one of the ledger's entries up to LimboUpTo, so
	// a missing entry there is an error, not "no such entry".
	Limbo     bool
	LimboUpTo int64
}

// Checkpoint is the journal position replay starts from.
type Checkpoint struct {
	File   uint64
	Offset int64
}

// Index is the Pebble database.
//
// A commit that fails inside Pebble (its WAL write or sync: a full disk, a failing fsync)
// leaves Pebble's commit pipeline unusable, and Pebble then calls its logger's Fatalf. The
// index's logger (pebblelog) panics there, Commit recovers it into an error wrapping
// ErrFailed (the bookie turns read-only, as for a failed journal or entry-log write), and
// the database is reopened before the next commit: reopening replays what Pebble made
// durable. Reads keep using the open database meanwhile.
//
// Pebble's background work (flushes, compactions) fails in two ways. An ordinary failure
// (an sstable that could not be written) goes to Options.OnBackgroundError with fatal
// false: Pebble keeps the data in its memtable and WAL and retries the work itself. A
// failure Pebble cannot undo (a MANIFEST write or sync) ends in Fatalf on Pebble's own
// goroutine, which pebblelog parks for good; it is reported with fatal true, the index
// refuses every further commit with ErrUnavailable (one in flight stops waiting) and is
// not closed, and the bookie stays read-only until it is restarted, which replays the
// files as they were left. Reads are still served from the open database.
type Index struct {
	dir   string
	fs    vfs.FS
	cache *pebble.Cache
	log   *slog.Logger
	onBG  func(err error, fatal bool)

	mu      sync.RWMutex // reads and commits share it; reopening takes it alone
	db      *pebble.DB   // nil after a reopen failed
	broken  atomic.Pointer[error]
	parked  *pebblelog.Parked // a background job's Fatalf: nothing is written again
	opening atomic.Bool       // inside pebble.Open: a Fatalf is the caller's to recover

	// testBeforeApply, if set, runs inside Commit between the park check and Pebble's
	// apply: the window in which a background job can park under a commit.
	testBeforeApply func()
}

// Errors of the index's life cycle.
var (
	// ErrFailed: a write to the index failed; the index reopens itself before the next.
	ErrFailed = errors.New("index: write failed")
	// ErrUnavailable: reopening the index after a failed write failed too, or Pebble's
	// background work failed beyond repair (the bookie must be restarted).
	ErrUnavailable = errors.New("index: unavailable")
)

// Options of Open.
type Options struct {
	// FS is Pebble's file system (nil: the operating system's); the bookie passes its
	// fault layer's, vfs.PebbleFS, so tests can fail the index's files.
	FS vfs.FS
	// CacheBytes is the block cache's size.
	CacheBytes int64
	// OnBackgroundError is told of every failure of Pebble's background work (nil: only
	// logged); fatal is true once the index can take no more writes (see Index).
	OnBackgroundError func(err error, fatal bool)
}

// Open opens (or creates) the index in dir.
func Open(dir string, opts Options, log *slog.Logger) (*Index, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.OnBackgroundError == nil {
		opts.OnBackgroundError = func(error, bool) {}
	}
	ix := &Index{dir: dir, fs: opts.FS, cache: pebble.NewCache(opts.CacheBytes), log: log.With("component", "pebble"),
		onBG: opts.OnBackgroundError, parked: pebblelog.NewParked()}
	db, err := ix.openDB()
	if err != nil {
		ix.cache.Unref()
		return nil, fmt.Errorf("index: open %s: %w", dir, err)
	}
	ix.db = db
	return ix, nil
}

// openDB opens the directory, turning a Fatalf during the open into an error.
func (ix *Index) openDB() (db *pebble.DB, err error) {
	ix.opening.Store(true)
	defer ix.opening.Store(false)
	defer pebblelog.Recover(&err)
	return pebble.Open(ix.dir, ix.options())
}

func (ix *Index) options() *pebble.Options {
	return &pebble.Options{
		FS:           ix.fs,
		Cache:        ix.cache,
		MemTableSize: 8 << 20,
		Logger: &pebblelog.Logger{Printf: logging.Printf{Log: ix.log}, InCall: ix.opening.Load, OnFatal: func(err error) {
			ix.parked.Set(err)
			ix.onBG(err, true)
		}},
		// Pebble fills in the listener's defaults, with this logger: one per open.
		EventListener: pebblelog.Listener(ix.log, func(err error) { ix.onBG(err, false) }),
	}
}

// parkedErr is the error of every commit after a background job's Fatalf (nil before).
func (ix *Index) parkedErr() error {
	p := ix.parked.Err()
	if p == nil {
		return nil
	}
	return fmt.Errorf("%w: %s: Pebble's background work failed, restart the bookie: %w", ErrUnavailable, ix.dir, p)
}

// Close closes the database.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	defer ix.cache.Unref()
	if ix.db == nil {
		return nil
	}
	if p := ix.parked.Err(); p != nil {
		// Closing would wait for the parked job for ever; the failure was reported.
		ix.log.Warn("index left open: its background work failed", "err", p)
		ix.db = nil
		return nil
	}
	err := closeRecovering(ix.db)
	ix.db = nil
	if ix.broken.Load() != nil {
		return nil // the failed commit was reported; what Close says about it adds nothing
	}
	return err
}

// closeRecovering closes db, turning a Fatalf during the close into an error.
func closeRecovering(db *pebble.DB) (err error) {
	defer pebblelog.Recover(&err)
	return db.Close()
}

// reopen replaces a database whose commit failed by a fresh open of its directory.
func (ix *Index) reopen() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	cause := ix.broken.Load()
	if cause == nil {
		return nil
	}
	if err := ix.parkedErr(); err != nil { // closing would wait for the parked job
		return err
	}
	if ix.db != nil {
		if err := closeRecovering(ix.db); err != nil {
			ix.log.Debug("closing the index after its failed commit", "err", err)
		}
		ix.db = nil
	}
	db, err := ix.openDB()
	if err != nil {
		return fmt.Errorf("%w: reopening %s after %w: %w", ErrUnavailable, ix.dir, *cause, err)
	}
	ix.db = db
	ix.broken.Store(nil)
	ix.log.Info("index reopened after a failed write", "was", (*cause).Error())
	return nil
}

// open returns the database under a read lock the caller releases, or ErrUnavailable.
func (ix *Index) open() (*pebble.DB, error) {
	ix.mu.RLock()
	if ix.db == nil {
		ix.mu.RUnlock()
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, ix.dir)
	}
	return ix.db, nil
}

func entryKey(b []byte, ledgerID, entryID int64) []byte {
	b = append(b, prefixEntry)
	b = binary.BigEndian.AppendUint64(b, uint64(ledgerID))
	return binary.BigEndian.AppendUint64(b, uint64(entryID))
}

func idKey(prefix byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefix}, id)
}

// EncodeLocation encodes a location value.
func EncodeLocation(l Location) []byte {
	v := make([]byte, 16)
	binary.BigEndian.PutUint64(v, l.Log)
	binary.BigEndian.PutUint32(v[8:], l.Offset)
	binary.BigEndian.PutUint32(v[12:], l.Size)
	return v
}

// DecodeLocation decodes a location value.
func DecodeLocation(v []byte) (Location, error) {
	if len(v) != 16 {
		return Location{}, fmt.Errorf("%w: location of %d bytes", ErrCorrupt, len(v))
	}
	return Location{Log: binary.BigEndian.Uint64(v), Offset: binary.BigEndian.Uint32(v[8:]), Size: binary.BigEndian.Uint32(v[12:])}, nil
}

// EncodeLedgerMeta encodes ledger metadata.
func EncodeLedgerMeta(m LedgerMeta) []byte {
	var flags byte
	if m.Fenced {
		flags |= flagFenced
	}
	if m.Deleted {
		flags |= flagDeleted
	}
	version := byte(1)
	if m.Limbo {
		version = 2
	}
	v := []byte{version, flags}
	v = binary.BigEndian.AppendUint64(v, uint64(m.LAC))
	v = append(v, byte(len(m.MasterKey)))
	v = append(v, m.MasterKey...)
	if version == 2 {
		v = binary.BigEndian.AppendUint64(v, uint64(m.LimboUpTo))
	}
	return v
}

// DecodeLedgerMeta decodes ledger metadata.
func DecodeLedgerMeta(v []byte) (LedgerMeta, error) {
	tail := 0 // version 2 appends the limbo bound
	if len(v) > 0 && v[0] == 2 {
		tail = 8
	}
	if len(v) < 11+tail || (v[0] != 1 && v[0] != 2) || int(v[10]) != len(v)-11-tail {
		return LedgerMeta{}, fmt.Errorf("%w: ledger metadata of %d bytes", ErrCorrupt, len(v))
	}
	m := LedgerMeta{
		Fenced:    v[1]&flagFenced != 0,
		Deleted:   v[1]&flagDeleted != 0,
		LAC:       int64(binary.BigEndian.Uint64(v[2:])),
		MasterKey: append([]byte(nil), v[11:len(v)-tail]...),
	}
	if tail > 0 {
		m.Limbo = true
		m.LimboUpTo = int64(binary.BigEndian.Uint64(v[len(v)-8:]))
	}
	return m, nil
}

// EncodeLogMeta encodes an entry log's ledger -> bytes map.
func EncodeLogMeta(m map[int64]int64) []byte {
	v := []byte{1}
	v = binary.AppendUvarint(v, uint64(len(m)))
	for l, n := range m {
		v = binary.BigEndian.AppendUint64(v, uint64(l))
		v = binary.BigEndian.AppendUint64(v, uint64(n))
	}
	return v
}

// DecodeLogMeta decodes an entry log's ledger -> bytes map.
func DecodeLogMeta(v []byte) (map[int64]int64, error) {
	if len(v) < 1 || v[0] != 1 {
		return nil, fmt.Errorf("%w: log metadata version", ErrCorrupt)
	}
	count, n := binary.Uvarint(v[1:])
	if n <= 0 || count > uint64(len(v))/16 || len(v)-1-n != int(count)*16 {
		return nil, fmt.Errorf("%w: log metadata length", ErrCorrupt)
	}
	m := make(map[int64]int64, count)
	for p := 1 + n; p < len(v); p += 16 {
		m[int64(binary.BigEndian.Uint64(v[p:]))] = int64(binary.BigEndian.Uint64(v[p+8:]))
	}
	return m, nil
}

// Get returns an entry's location; ok is false when the index has none.
func (ix *Index) Get(ledgerID, entryID int64) (loc Location, ok bool, err error) {
	db, err := ix.open()
	if err != nil {
		return Location{}, false, err
	}
	defer ix.mu.RUnlock()
	var kb [17]byte
	v, closer, err := db.Get(entryKey(kb[:0], ledgerID, entryID))
	if errors.Is(err, pebble.ErrNotFound) {
		return Location{}, false, nil
	}
	if err != nil {
		return Location{}, false, fmt.Errorf("index: get (%d,%d): %w", ledgerID, entryID, err)
	}
	defer closer.Close()
	loc, err = DecodeLocation(v)
	return loc, err == nil, err
}

// Range calls fn for the locations of ledgerID's entries first..last in order, until fn
// returns false.
func (ix *Index) Range(ledgerID, first, last int64, fn func(entryID int64, loc Location) bool) error {
	db, err := ix.open()
	if err != nil {
		return err
	}
	defer ix.mu.RUnlock()
	it, err := db.NewIter(&pebble.IterOptions{
		LowerBound: entryKey(nil, ledgerID, first),
		UpperBound: entryKey(nil, ledgerID, last+1),
	})
	if err != nil {
		return fmt.Errorf("index: iterate ledger %d: %w", ledgerID, err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		loc, err := DecodeLocation(it.Value())
		if err != nil {
			_ = it.Close()
			return err
		}
		if !fn(int64(binary.BigEndian.Uint64(it.Key()[9:])), loc) {
			break
		}
	}
	return it.Close()
}

// Checkpoint returns the stored checkpoint (zero when none).
func (ix *Index) Checkpoint() (Checkpoint, error) {
	db, err := ix.open()
	if err != nil {
		return Checkpoint{}, err
	}
	defer ix.mu.RUnlock()
	v, closer, err := db.Get([]byte{prefixCheckpoint})
	if errors.Is(err, pebble.ErrNotFound) {
		return Checkpoint{}, nil
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("index: checkpoint: %w", err)
	}
	defer closer.Close()
	if len(v) != 16 {
		return Checkpoint{}, fmt.Errorf("%w: checkpoint of %d bytes", ErrCorrupt, len(v))
	}
	return Checkpoint{File: binary.BigEndian.Uint64(v), Offset: int64(binary.BigEndian.Uint64(v[8:]))}, nil
}

// Ledgers calls fn for every stored ledger's metadata.
func (ix *Index) Ledgers(fn func(ledgerID int64, m LedgerMeta)) error {
	return ix.scanPrefix(prefixLedger, func(id uint64, v []byte) error {
		m, err := DecodeLedgerMeta(v)
		if err != nil {
			return fmt.Errorf("ledger %d: %w", id, err)
		}
		fn(int64(id), m)
		return nil
	})
}

// Logs calls fn for every entry log's ledger -> bytes map.
func (ix *Index) Logs(fn func(logID uint64, m map[int64]int64)) error {
	return ix.scanPrefix(prefixLog, func(id uint64, v []byte) error {
		m, err := DecodeLogMeta(v)
		if err != nil {
			return fmt.Errorf("log %d: %w", id, err)
		}
		fn(id, m)
		return nil
	})
}

func (ix *Index) scanPrefix(prefix byte, fn func(id uint64, v []byte) error) error {
	db, err := ix.open()
	if err != nil {
		return err
	}
	defer ix.mu.RUnlock()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
	if err != nil {
		return fmt.Errorf("index: scan: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if len(it.Key()) != 9 {
			_ = it.Close()
			return fmt.Errorf("%w: key of %d bytes", ErrCorrupt, len(it.Key()))
		}
		if err := fn(binary.BigEndian.Uint64(it.Key()[1:]), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}

// Batch gathers updates committed together with sync. It belongs to no database until
// Commit, so a reopen between NewBatch and Commit loses nothing.
type Batch struct {
	ix  *Index
	b   *pebble.Batch
	key []byte
	val [16]byte
}

// NewBatch starts a batch.
func (ix *Index) NewBatch() *Batch { return &Batch{ix: ix, b: new(pebble.Batch)} }

// PutLocation records an entry's location.
func (b *Batch) PutLocation(ledgerID, entryID int64, loc Location) {
	b.key = entryKey(b.key[:0], ledgerID, entryID)
	binary.BigEndian.PutUint64(b.val[:], loc.Log)
	binary.BigEndian.PutUint32(b.val[8:], loc.Offset)
	binary.BigEndian.PutUint32(b.val[12:], loc.Size)
	_ = b.b.Set(b.key, b.val[:], nil) // Set copies; errors only on a closed batch
}

// PutLedger records a ledger's metadata.
func (b *Batch) PutLedger(ledgerID int64, m LedgerMeta) {
	_ = b.b.Set(idKey(prefixLedger, uint64(ledgerID)), EncodeLedgerMeta(m), nil)
}

// DeleteEntries removes every location of a ledger.
func (b *Batch) DeleteEntries(ledgerID int64) {
	_ = b.b.DeleteRange(entryKey(nil, ledgerID, 0), idKey(prefixEntry, uint64(ledgerID)+1), nil)
}

// PutLog records an entry log's ledger -> bytes map.
func (b *Batch) PutLog(logID uint64, m map[int64]int64) {
	_ = b.b.Set(idKey(prefixLog, logID), EncodeLogMeta(m), nil)
}

// DeleteLog forgets an entry log.
func (b *Batch) DeleteLog(logID uint64) { _ = b.b.Delete(idKey(prefixLog, logID), nil) }

// PutCheckpoint records the journal checkpoint.
func (b *Batch) PutCheckpoint(c Checkpoint) {
	v := binary.BigEndian.AppendUint64(nil, c.File)
	v = binary.BigEndian.AppendUint64(v, uint64(c.Offset))
	_ = b.b.Set([]byte{prefixCheckpoint}, v, nil)
}

// Commit writes the batch durably and releases it. After a failed commit (ErrFailed) the
// database is reopened first; if that fails too, the error wraps ErrUnavailable.
//
// A background job that parks (see Index) holds Pebble's mutex for good, and a commit
// already past the park check that needs a fresh memtable waits on that mutex for ever;
// with it the flusher, and behind the flusher the bookie's Close and its SIGTERM. So the
// apply runs on its own goroutine and Commit stops waiting when the index parks
// (pebblelog.Parked.Apply): the caller gets ErrUnavailable and the stuck goroutine keeps
// the batch. Commits are per flush, so the goroutine each costs is nothing.
func (b *Batch) Commit() error {
	ix := b.ix
	if err := ix.parkedErr(); err != nil {
		b.b.Close()
		return err
	}
	if ix.broken.Load() != nil {
		if err := ix.reopen(); err != nil {
			b.b.Close()
			return err
		}
	}
	db, err := ix.open()
	if err != nil {
		b.b.Close()
		return err
	}
	defer ix.mu.RUnlock()
	if ix.testBeforeApply != nil {
		ix.testBeforeApply()
	}
	abandoned, err := ix.parked.Apply(db, b.b)
	if abandoned {
		return ix.parkedErr()
	}
	b.b.Close()
	if err != nil {
		ix.broken.CompareAndSwap(nil, &err)
		return fmt.Errorf("%w: commit: %w", ErrFailed, err)
	}
	return nil
}

// FlushAsync starts a flush of Pebble's memtable into an sstable and returns without
// waiting for it (a failing flush is retried by Pebble and reported through
// Options.OnBackgroundError); tests drive Pebble's background work with it.
func (ix *Index) FlushAsync() error {
	db, err := ix.open()
	if err != nil {
		return err
	}
	defer ix.mu.RUnlock()
	if _, err := db.AsyncFlush(); err != nil {
		return fmt.Errorf("index: flush %s: %w", ix.dir, err)
	}
	return nil
}

// Discard releases an uncommitted batch.
func (b *Batch) Discard() { _ = b.b.Close() }
