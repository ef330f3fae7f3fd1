package localstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/magnetar-io/magnetar/internal/logging"
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
}

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
	db, err := pebble.Open(dir, &pebble.Options{
		Cache:        cache,
		MemTableSize: 4 << 20,
		Logger:       logging.Printf{Log: logger.With("component", "metadata-pebble")},
	})
	if err != nil {
		return nil, fmt.Errorf("localstore: open %s: %w", dir, err)
	}
	j := &journal{db: db, batch: db.NewBatch()}
	rev, kvs, err := load(db)
	if err == nil {
		rev, err = dropEphemeral(j, rev, kvs)
	}
	if err != nil {
		_ = db.Close()
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
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	return &Store{Store: ms, j: j}, nil
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
		if err := db.Set(formatKey, binary.BigEndian.AppendUint32(nil, formatVersion), pebble.Sync); err != nil {
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
	_ = j.batch.Set(revKey, binary.BigEndian.AppendUint64(nil, uint64(rev)), nil)
	err := j.db.Apply(j.batch, pebble.Sync)
	j.batch.Reset()
	return err
}

func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	_ = j.batch.Close()
	return j.db.Close()
}
