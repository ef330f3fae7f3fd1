package localstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/logging/pebblelog"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
)

// ErrCorrupt is returned by Open for a database it cannot read back.
var ErrCorrupt = errors.New("localstore: corrupt metadata database")

const (
	formatVersion = 1
	prefixKey     = 'k'
	flagEphemeral = 1
	headerLen     = 9 // u64 version, u8 flags
)

var (
	formatKey = []byte("\x00format")
	revKey    = []byte("\x00rev")
)

// Options tune a local store.
type Options struct {
	// MaxBytes bounds the keys and values held, in memory and on disk (the standalone's
	// metadataQuotaBackendBytes); 0: no bound.
	MaxBytes int64
	// MaxWatchBacklog is memstore's (0: its default).
	MaxWatchBacklog int
	// FS is Pebble's file system (nil: the operating system's); tests wrap it to fail the
	// database's writes and syncs.
	FS vfs.FS
}

// ErrFailed wraps the error of every write after the database failed (a commit's WAL
// write or sync, or Pebble's background work beyond repair). memstore then refuses every
// call until the process restarts, and Open reads back every acknowledged write.
var ErrFailed = errors.New("localstore: metadata database failed")

// Store is a metadata.Store kept in a Pebble database. Its Close also closes the database.
type Store struct {
	*memstore.Store
	j *journal
}

var _ metadata.Store = (*Store)(nil)

// Open opens (or creates) the store in dir.
func Open(dir string, opts Options, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Everything is read once into memory at open, so the block cache only serves that scan
	// and compactions; the memtable holds the writes since the last flush.
	cache := pebble.NewCache(1 << 20)
	defer cache.Unref()
	j := &journal{parked: pebblelog.NewParked()}
	log := logger.With("component", "metadata-pebble")
	// A failure Pebble cannot go on from does not end the process (pebblelog): a failed
	// commit is the writer's error, and a background one fails every later commit.
	db, err := openDB(dir, &pebble.Options{
		FS:            opts.FS,
		Cache:         cache,
		MemTableSize:  4 << 20,
		Logger:        &pebblelog.Logger{Printf: logging.Printf{Log: log}, OnFatal: j.parked.Set},
		EventListener: pebblelog.Listener(log, nil),
	})
	if err != nil {
		return nil, fmt.Errorf("localstore: open %s: %w", dir, err)
	}
	j.db, j.batch = db, db.NewBatch()
	rev, kvs, err := load(db)
	if err == nil {
		rev, err = dropEphemeral(j, rev, kvs)
	}
	if err != nil {
		_ = closeRecovering(db)
		return nil, fmt.Errorf("localstore: %s: %w", dir, err)
	}
	persistent := make([]metadata.KV, 0, len(kvs))
	for _, r := range kvs {
		if !r.ephemeral {
			persistent = append(persistent, r.KV)
		}
	}
	ms, err := memstore.Restore(memstore.Options{MaxWatchBacklog: opts.MaxWatchBacklog, MaxBytes: opts.MaxBytes, Journal: j}, rev, persistent)
	if err != nil {
		_ = closeRecovering(db)
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	return &Store{Store: ms, j: j}, nil
}

// openDB opens the database, turning a Fatalf during the open into an error.
func openDB(dir string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer pebblelog.Recover(&err)
	return pebble.Open(dir, opts)
}

type record struct {
	metadata.KV
	ephemeral bool
}

// load reads the revision and every key, creating the format key in an empty database.
func load(db *pebble.DB) (int64, []record, error) {
	it, err := db.NewIter(nil)
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	var (
		rev      int64
		format   = -1
		kvs      []record
		sawOther bool
	)
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		switch {
		case string(k) == string(formatKey):
			if len(v) != 4 {
				return 0, nil, fmt.Errorf("%w: format value of %d bytes", ErrCorrupt, len(v))
			}
			format = int(binary.BigEndian.Uint32(v))
		case string(k) == string(revKey):
			if len(v) != 8 {
				return 0, nil, fmt.Errorf("%w: revision value of %d bytes", ErrCorrupt, len(v))
			}
			rev = int64(binary.BigEndian.Uint64(v))
			sawOther = true
		case len(k) > 1 && k[0] == prefixKey:
			if len(v) < headerLen {
				return 0, nil, fmt.Errorf("%w: value of %q is %d bytes", ErrCorrupt, k[1:], len(v))
			}
			kvs = append(kvs, record{
				KV:        metadata.KV{Key: string(k[1:]), Version: metadata.Version(binary.BigEndian.Uint64(v)), Value: append([]byte{}, v[headerLen:]...)},
				ephemeral: v[8]&flagEphemeral != 0,
			})
			sawOther = true
		default:
			return 0, nil, fmt.Errorf("%w: unknown key %q", ErrCorrupt, k)
		}
	}
	if err := it.Error(); err != nil {
		return 0, nil, err
	}
	switch {
	case format == -1 && sawOther:
		return 0, nil, fmt.Errorf("%w: no format key", ErrCorrupt)
	case format == -1:
		b := db.NewBatch()
		_ = b.Set(formatKey, binary.BigEndian.AppendUint32(nil, formatVersion), nil)
		err := applyRecovering(db, b)
		_ = b.Close()
		if err != nil {
			return 0, nil, err
		}
	case format != formatVersion:
		return 0, nil, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, format, formatVersion)
	}
	for _, r := range kvs {
		if int64(r.Version) > rev || r.Version <= 0 {
			return 0, nil, fmt.Errorf("%w: %s at version %d, store revision %d", ErrCorrupt, r.Key, r.Version, rev)
		}
	}
	return rev, kvs, nil
}

// dropEphemeral deletes the previous process's ephemeral keys: its sessions ended with it.
func dropEphemeral(j *journal, rev int64, kvs []record) (int64, error) {
	n := 0
	for _, r := range kvs {
		if r.ephemeral {
			j.Delete(r.Key)
			rev++
			n++
		}
	}
	if n == 0 {
		return rev, nil
	}
	return rev, j.Commit(rev)
}

// Close ends the store's sessions and watches, then closes the database.
func (s *Store) Close() error {
	err := s.Store.Close()
	return errors.Join(err, s.j.close())
}

// journal is the memstore.Journal on Pebble: one batch per group commit.
type journal struct {
	mu     sync.Mutex // against close; the store calls Put, Delete and Commit in turn, under its own lock
	db     *pebble.DB
	batch  *pebble.Batch
	closed bool
	failed error             // a commit failed: Pebble's commit pipeline is unusable
	parked *pebblelog.Parked // Pebble's background work failed beyond repair

	// testBeforeApply, if set, runs inside Commit just before Pebble's apply: the window
	// in which a background job can park under a commit.
	testBeforeApply func()
}

func (j *journal) Put(key string, value []byte, version int64, ephemeral bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return // Commit reports it
	}
	var flags byte
	if ephemeral {
		flags = flagEphemeral
	}
	k := append([]byte{prefixKey}, key...)
	v := make([]byte, headerLen, headerLen+len(value))
	binary.BigEndian.PutUint64(v, uint64(version))
	v[8] = flags
	_ = j.batch.Set(k, append(v, value...), nil)
}

func (j *journal) Delete(key string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return // Commit reports it
	}
	_ = j.batch.Delete(append([]byte{prefixKey}, key...), nil)
}

func (j *journal) Commit(rev int64) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return metadata.ErrClosed
	}
	if p := j.parked.Err(); p != nil && j.failed == nil {
		j.failed = fmt.Errorf("%w: Pebble's background work: %w", ErrFailed, p)
	}
	if j.failed != nil {
		j.batch.Reset()
		return j.failed
	}
	_ = j.batch.Set(revKey, binary.BigEndian.AppendUint64(nil, uint64(rev)), nil)
	// A commit racing a background job that parks would wait for ever (under the store's
	// lock, stalling every client): Apply stops waiting, and the stuck goroutine keeps
	// the batch, so later Puts go to a fresh one.
	if j.testBeforeApply != nil {
		j.testBeforeApply()
	}
	abandoned, err := j.parked.Apply(j.db, j.batch)
	if abandoned {
		j.batch = j.db.NewBatch()
		j.failed = fmt.Errorf("%w: Pebble's background work: %w", ErrFailed, err)
		return j.failed
	}
	j.batch.Reset()
	if err != nil {
		j.failed = fmt.Errorf("%w: commit: %w", ErrFailed, err)
		return j.failed
	}
	return nil
}

// applyRecovering applies batch with sync, turning Pebble's Fatalf on a failed commit into
// an error (the format key at open, before any background job runs).
func applyRecovering(db *pebble.DB, batch *pebble.Batch) (err error) {
	defer pebblelog.Recover(&err)
	return db.Apply(batch, pebble.Sync)
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	_ = j.batch.Close()
	if j.parked.Err() != nil {
		return nil // Close would wait for the parked job for ever; the failure was reported
	}
	err := closeRecovering(j.db)
	if j.failed != nil {
		return nil // after a failed commit Pebble's Close only repeats it
	}
	return err
}

func closeRecovering(db *pebble.DB) (err error) {
	defer pebblelog.Recover(&err)
	return db.Close()
}
