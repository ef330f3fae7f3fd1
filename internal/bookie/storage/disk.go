package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage/entrylog"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/index"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/journal"
	"github.com/magnetar-io/magnetar/internal/bookie/storage/vfs"
	"github.com/magnetar-io/magnetar/internal/config"
)

// ErrCookie reports that the data directories do not belong together: another instance's,
// or one of them was wiped. The bookie must not start (it could otherwise deny entries it
// acknowledged before).
var ErrCookie = errors.New("storage: cookie mismatch")

// indexCacheBytes is Pebble's block cache; the index is small next to the entry logs.
const indexCacheBytes = 16 << 20

// Disk is the disk storage: journal, write cache, entry logs, Pebble index. Lock order:
// flushMu -> cache.mu -> lmu; journal writer's lock -> lmu; indexMu and logsMu are leaves
// taken after flushMu (never while holding cache.mu or lmu).
type Disk struct {
	instance string // the cookie's instance id
	fresh    bool   // this open created the instance (the directories were empty)
	cfg      config.BookieStorageConfig
	fs       vfs.FS
	log      *slog.Logger
	m        *metrics
	jdir     string
	ldir     string

	ix *index.Index
	jw *journal.Writer

	lmu     sync.RWMutex
	ledgers map[int64]*ledgerState
	dirty   map[int64]*ledgerState // changed since the last flush snapshot (under lmu)

	cache    writeCache
	rcache   *readCache
	maxEntry int

	// logsMu guards logs; readers hold it shared from index lookup to pread so garbage
	// collection cannot remove a log under them.
	logsMu sync.RWMutex
	logs   map[uint64]*entrylog.Log

	// flushMu serializes flushes, compaction and close; the fields below it are the
	// flusher's.
	flushMu   sync.Mutex
	curLog    *entrylog.Log
	nextLogID uint64
	logMeta   map[uint64]map[int64]int64 // log -> ledger -> record bytes
	dirtyLogs map[uint64]bool
	logBroken bool
	lastCkpt  journal.Pos
	noCompact map[uint64]bool // logs a compaction could not empty (damaged records)

	// indexMu orders the flusher's index batches with DeleteLedger's, so a flush never
	// writes a location or metadata of a ledger after its deletion.
	indexMu sync.Mutex

	health health

	closed    atomic.Bool
	closeCh   chan struct{}
	flushKick chan struct{}
	retryCh   chan struct{}
	wg        sync.WaitGroup
}

type ledgerState struct {
	masterKey []byte
	fenced    bool
	deleted   bool
	lac       int64
	lacCh     chan struct{} // closed when lac grows; nil until a WaitLAC needs it
	// limbo: journal damage may have lost an entry up to limboUpTo (disk_limbo.go).
	limbo     bool
	limboUpTo int64
}

func (st *ledgerState) meta() index.LedgerMeta {
	return index.LedgerMeta{MasterKey: st.masterKey, Fenced: st.fenced, Deleted: st.deleted, LAC: st.lac,
		Limbo: st.limbo, LimboUpTo: st.limboUpTo}
}

var _ Storage = (*Disk)(nil)

// Open opens (creating if needed) the disk storage in the configured directories,
// replays the journal and starts the background goroutines. registerer may be nil.
func Open(cfg config.BookieStorageConfig, logger *slog.Logger, registerer prometheus.Registerer) (Storage, error) {
	d, err := OpenWithFS(cfg, vfs.Default(), logger, registerer)
	if err != nil {
		return nil, err // not a typed nil inside the interface
	}
	return d, nil
}

// OpenWithFS is Open over the given file system (tests pass a vfs.FaultFS). The Pebble
// index is on the same faults (vfs.PebbleFS).
func OpenWithFS(cfg config.BookieStorageConfig, fs vfs.FS, logger *slog.Logger, registerer prometheus.Registerer) (*Disk, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(registerer)
	if err != nil {
		return nil, err
	}
	d := &Disk{
		cfg:       cfg,
		fs:        fs,
		log:       logger.With("component", "bookie-storage"),
		m:         m,
		jdir:      cfg.JournalDir(),
		ldir:      cfg.LedgerDir(),
		ledgers:   map[int64]*ledgerState{},
		dirty:     map[int64]*ledgerState{},
		logs:      map[uint64]*entrylog.Log{},
		logMeta:   map[uint64]map[int64]int64{},
		dirtyLogs: map[uint64]bool{},
		noCompact: map[uint64]bool{},
		closeCh:   make(chan struct{}),
		flushKick: make(chan struct{}, 1),
		retryCh:   make(chan struct{}, 1),
	}
	cacheMax := cfg.WriteCacheMaxSizeMB << 20
	d.cache.init(cacheMax, d.kickFlush, m)
	d.rcache = newReadCache(cfg.ReadAheadCacheMaxSizeMB<<20, m)
	d.maxEntry = int(min(cacheMax/4, journal.MaxBody-journal.MaxMasterKey-64, entrylog.MaxPayload))
	d.health.init(d)
	if err := d.open(); err != nil {
		d.abort()
		return nil, err
	}
	return d, nil
}

// indexDir is where the Pebble index lives.
func (d *Disk) indexDir() string { return filepath.Join(d.ldir, "index") }

func (d *Disk) open() error {
	for _, dir := range []string{d.jdir, d.ldir} {
		if err := d.fs.MkdirAll(dir); err != nil {
			return fmt.Errorf("storage: create %s: %w", dir, err)
		}
	}
	id, fresh, err := checkCookies(d.fs, d.jdir, d.ldir, d.log)
	if err != nil {
		return err
	}
	d.instance, d.fresh = id, fresh
	ix, err := index.Open(d.indexDir(), index.Options{
		FS: vfs.PebbleFS(d.fs), CacheBytes: indexCacheBytes, OnBackgroundError: d.health.indexFailed,
	}, d.log)
	if err != nil {
		return err
	}
	d.ix = ix
	if err := d.load(); err != nil {
		return err
	}
	if err := d.rollLog(); err != nil {
		return err
	}
	// Replay everything after the checkpoint into the write cache, then flush it, so the
	// new journal starts from a clean checkpoint. The flusher runs during replay so a
	// journal longer than the write cache still fits.
	ckpt, err := d.ix.Checkpoint()
	if err != nil {
		return err
	}
	from := journal.Pos{File: ckpt.File, Offset: ckpt.Offset}
	d.lastCkpt = from
	d.wg.Add(1)
	go d.flushLoop()
	one := make([]journal.Record, 1)
	st, err := journal.Replay(d.fs, d.jdir, from, d.log, func(r *journal.Record, end journal.Pos) error {
		one[0] = *r
		d.apply(one, end)
		d.m.replayed.Inc()
		return nil
	})
	if err != nil {
		return err
	}
	d.m.journalTorn.Add(float64(st.Torn))
	d.markLimbo(st.Damaged)
	if st.Records > 0 || st.Torn > 0 {
		d.log.Info("journal replayed", "from_file", from.File, "from_offset", from.Offset,
			"files", st.Files, "records", st.Records, "torn_files", st.Torn)
	}
	if err := d.flush(); err != nil {
		return fmt.Errorf("storage: flush after journal replay: %w", err)
	}
	jw, err := journal.NewWriter(journal.Options{
		FS:        d.fs,
		Dir:       d.jdir,
		FirstFile: max(st.LastFile, from.File) + 1,
		SyncData:  d.cfg.JournalSyncData,
		// The entry logs' writeback step serves the journal too when it does not sync.
		WritebackBytes: d.cfg.FlushEntryLogBytes,
		MaxGroupWait:   d.cfg.JournalMaxGroupWait,
		MaxGroupBytes:  int(d.cfg.JournalBufferedWritesThreshold),
		QueueBytes:     int(d.cfg.JournalQueueSizeBytes),
		MaxFileSize:    d.cfg.JournalMaxSizeMB << 20,
		PreallocSize:   d.cfg.JournalPreAllocSizeMB << 20,
		Logger:         d.log.With("component", "bookie-journal"),
		Admit:          d.admit,
		Apply:          d.apply,
		FailErr:        ErrReadOnly,
		ClosedErr:      ErrClosed,
		OnFailure:      func(err error) { d.health.writeFailed(err) },
		OnGroup: func(records, bytes int, sync time.Duration) {
			d.m.groupEntries.Observe(float64(records))
			d.m.journalBytes.Add(float64(bytes))
			if d.cfg.JournalSyncData {
				d.m.syncLatency.Observe(sync.Seconds())
			}
		},
		OnAck: func(lat time.Duration) { d.m.addLatency.Observe(lat.Seconds()) },
	})
	if err != nil {
		return err
	}
	d.jw = jw
	d.wg.Add(2)
	go d.gcLoop()
	go d.health.loop()
	d.log.Info("bookie storage open", "journal", d.jdir, "ledgers", d.ldir, "ledger_count", len(d.ledgers),
		"entry_logs", len(d.logs), "sync_data", d.cfg.JournalSyncData)
	return nil
}

// load reads ledger and entry-log metadata from the index and opens the entry logs.
func (d *Disk) load() error {
	if err := d.initIndex(); err != nil {
		return err
	}
	err := d.ix.Ledgers(func(id int64, m index.LedgerMeta) {
		d.ledgers[id] = &ledgerState{masterKey: m.MasterKey, fenced: m.Fenced, deleted: m.Deleted, lac: m.LAC,
			limbo: m.Limbo, limboUpTo: m.LimboUpTo}
	})
	if err != nil {
		return err
	}
	if err := d.ix.Logs(func(id uint64, m map[int64]int64) { d.logMeta[id] = m }); err != nil {
		return err
	}
	names, err := d.fs.List(d.ldir)
	if err != nil {
		return fmt.Errorf("storage: list %s: %w", d.ldir, err)
	}
	for _, n := range names {
		id, ok := entrylog.ParseFileName(n)
		if !ok {
			continue
		}
		d.nextLogID = max(d.nextLogID, id+1)
		if _, known := d.logMeta[id]; !known {
			// Created but never committed to the index (a crash before the flush's index
			// batch): no location points into it.
			d.log.Warn("removing entry log the index does not know", "log", n)
			if err := d.fs.Remove(filepath.Join(d.ldir, n)); err != nil {
				return fmt.Errorf("storage: remove unreferenced log %s: %w", n, err)
			}
			continue
		}
		lg, err := entrylog.OpenExisting(d.fs, d.ldir, id)
		if err != nil {
			return err
		}
		d.logs[id] = lg
	}
	for id := range d.logMeta {
		if d.logs[id] == nil {
			d.log.Error("entry log named in the index is missing; its entries will read as corrupt", "log", entrylog.FileName(id))
		}
		d.nextLogID = max(d.nextLogID, id+1)
	}
	if d.nextLogID == 0 {
		d.nextLogID = 1
	}
	return nil
}

// initIndex gives a new index its first checkpoint before any entry log or journal file
// exists. An index without a checkpoint next to existing logs or journal files was wiped
// (or lost): starting would forget acknowledged entries, so refuse.
func (d *Disk) initIndex() error {
	ckpt, err := d.ix.Checkpoint()
	if err != nil || ckpt.File != 0 {
		return err
	}
	for _, dir := range []string{d.ldir, d.jdir} {
		names, err := d.fs.List(dir)
		if err != nil {
			return fmt.Errorf("storage: list %s: %w", dir, err)
		}
		for _, n := range names {
			_, isLog := entrylog.ParseFileName(n)
			_, isJournal := journal.ParseFileName(n)
			if isLog || isJournal {
				return fmt.Errorf("%w: %s holds %s but the index in %s has no checkpoint: the index was wiped or lost",
					ErrCookie, dir, n, filepath.Join(d.ldir, "index"))
			}
		}
	}
	b := d.ix.NewBatch()
	b.PutCheckpoint(index.Checkpoint{File: 1})
	return b.Commit()
}

// abort releases what a failed open acquired.
func (d *Disk) abort() {
	d.closed.Store(true)
	d.cache.close()
	close(d.closeCh)
	if d.jw != nil {
		_ = d.jw.Close()
	}
	d.wg.Wait()
	for _, lg := range d.logs {
		_ = lg.Close()
	}
	if d.ix != nil {
		_ = d.ix.Close()
	}
}

// AddEntry implements Storage. done runs on the journal's acknowledgement goroutine, in
// journal order; it must not block or call AddEntry or Fence (it would wait for the
// goroutine that is running it).
func (d *Disk) AddEntry(ledgerID, entryID int64, masterKey []byte, lac int64, payload []byte, recovery bool, done func(error)) {
	if err := checkIDs(ledgerID, entryID); err != nil {
		done(err)
		return
	}
	if d.closed.Load() {
		done(ErrClosed)
		return
	}
	if d.health.readOnly.Load() {
		done(ErrReadOnly)
		return
	}
	if len(payload) > d.maxEntry {
		done(fmt.Errorf("storage: entry of %d bytes exceeds the limit of %d (a quarter of the write cache)", len(payload), d.maxEntry))
		return
	}
	d.jw.Append(journal.Record{Kind: journal.KindAdd, LedgerID: ledgerID, EntryID: entryID, LAC: lac,
		MasterKey: masterKey, Payload: payload, Recovery: recovery}, done)
}

// Fence implements Storage. It goes through the journal (also while read-only: fencing
// must work for recovery to proceed) and returns after the fence record is durable.
func (d *Disk) Fence(ledgerID int64, masterKey []byte) (int64, error) {
	if ledgerID < 0 {
		return -1, fmt.Errorf("storage: negative ledger id %d", ledgerID)
	}
	if d.closed.Load() {
		return -1, ErrClosed
	}
	ch := make(chan error, 1)
	d.jw.Append(journal.Record{Kind: journal.KindFence, LedgerID: ledgerID, MasterKey: masterKey}, func(err error) { ch <- err })
	if err := <-ch; err != nil {
		return -1, err
	}
	d.lmu.RLock()
	defer d.lmu.RUnlock()
	return d.ledgers[ledgerID].lac, nil
}

// LAC implements Storage.
func (d *Disk) LAC(ledgerID int64) (int64, error) {
	if d.closed.Load() {
		return -1, ErrClosed
	}
	d.lmu.RLock()
	defer d.lmu.RUnlock()
	st := d.ledgers[ledgerID]
	if st == nil || st.deleted {
		return -1, ErrNoSuchLedger
	}
	return st.lac, nil
}

// WaitLAC implements Storage.
func (d *Disk) WaitLAC(ctx context.Context, ledgerID, previous int64) (int64, error) {
	for {
		if d.closed.Load() {
			return -1, ErrClosed
		}
		d.lmu.Lock()
		st := d.ledgers[ledgerID]
		if st == nil || st.deleted {
			d.lmu.Unlock()
			return -1, ErrNoSuchLedger
		}
		lac := st.lac
		if lac > previous {
			d.lmu.Unlock()
			return lac, nil
		}
		if st.lacCh == nil {
			st.lacCh = make(chan struct{})
		}
		ch := st.lacCh
		d.lmu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return lac, nil
		case <-d.closeCh:
			return -1, ErrClosed
		}
	}
}

// DeleteLedger implements Storage: a durable tombstone and a range delete of the ledger's
// locations in one index batch; entry-log space is reclaimed by garbage collection.
func (d *Disk) DeleteLedger(ledgerID int64) error {
	if d.closed.Load() {
		return ErrClosed
	}
	d.lmu.Lock()
	st := d.ledgers[ledgerID]
	if st == nil {
		st = &ledgerState{lac: -1}
		d.ledgers[ledgerID] = st
	}
	st.deleted = true
	delete(d.dirty, ledgerID)
	if st.lacCh != nil {
		close(st.lacCh)
		st.lacCh = nil
	}
	meta := st.meta()
	d.lmu.Unlock()

	if err := d.health.indexWritable(); err != nil {
		// The ledger stays deleted in memory (reads say so, adds are refused); the
		// caller retries the delete, which is idempotent, once the disk recovers.
		return err
	}
	d.indexMu.Lock()
	defer d.indexMu.Unlock()
	if d.closed.Load() {
		return ErrClosed
	}
	b := d.ix.NewBatch()
	b.PutLedger(ledgerID, meta)
	b.DeleteEntries(ledgerID)
	if err := b.Commit(); err != nil {
		return fmt.Errorf("storage: delete ledger %d: %w", ledgerID, err)
	}
	return nil
}

// ReadOnly implements Storage.
func (d *Disk) ReadOnly() bool { return d.health.readOnly.Load() }

// Close implements Storage: it commits queued journal records, flushes the write cache and
// closes the files.
func (d *Disk) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	// Closing the cache first means an apply that would wait for memory drops its entries
	// instead (they stay in the journal and the checkpoint does not pass them), so Close
	// cannot hang on a flusher that a full disk keeps failing.
	d.cache.close()
	errs := []error{d.jw.Close()}
	close(d.closeCh)
	d.wg.Wait()
	if err := d.flush(); err != nil {
		errs = append(errs, fmt.Errorf("storage: final flush: %w", err))
	}
	d.indexMu.Lock()
	d.logsMu.Lock()
	for _, lg := range d.logs {
		errs = append(errs, lg.Close())
	}
	errs = append(errs, d.ix.Close())
	d.logsMu.Unlock()
	d.indexMu.Unlock()
	return errors.Join(errs...)
}

func (d *Disk) kickFlush() {
	select {
	case d.flushKick <- struct{}{}:
	default:
	}
}

// InstanceID implements Identity: the id in the directories' cookies.
func (d *Disk) InstanceID() string { return d.instance }

// NewInstance implements Identity: true when this open found empty directories and created
// the instance.
func (d *Disk) NewInstance() bool { return d.fresh }
