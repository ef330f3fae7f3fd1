package offload

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// Source is a closed ledger to offload; a ledger.Reader of a closed ledger is one.
type Source interface {
	ID() int64
	LastAddConfirmed() int64
	Read(ctx context.Context, first, last int64) ([]ledger.Entry, error)
}

// Ref names one offloaded ledger: what the managed ledger records next to it.
type Ref struct {
	LedgerID int64
	UUID     string
	// Driver and Metadata are where the ledger went (DriverName and DriverMetadata at the
	// time of the offload). Empty means this offloader's own location.
	Driver   string
	Metadata map[string]string
	// Topic (the managed ledger's name) labels metrics and logs; optional.
	Topic string
}

// Result describes a completed offload.
type Result struct {
	Entries    int64 // entries written
	Bytes      int64 // payload bytes of the ledger
	DataLength int64 // bytes of the data object
	Blocks     int
}

// ReadHandle reads one offloaded ledger. It is a ledger.Reader of a closed ledger, so the
// managed ledger reads offloaded and bookie ledgers alike.
type ReadHandle interface {
	ledger.Reader
	// Length is the payload bytes of the ledger.
	Length() int64
	// Metadata is what Offload was given as extra metadata.
	Metadata() map[string]string
}

// Offloader copies closed ledgers to one storage location and reads them back (Pulsar's
// LedgerOffloader). Safe for concurrent use.
type Offloader interface {
	// DriverName is the managedLedgerOffloadDriver value.
	DriverName() string
	// DriverMetadata is the location to record with each offloaded ledger (doc.go).
	DriverMetadata() map[string]string
	// Check writes, reads back and deletes a probe object: wrong credentials or a missing
	// bucket fail here, at startup, instead of at the first offload.
	Check(ctx context.Context) error
	// Offload writes src under ref.UUID and verifies both objects. An error leaves no
	// object that needs keeping; the caller deletes ref's objects and retries under a new
	// uuid.
	Offload(ctx context.Context, src Source, ref Ref, extra map[string]string) (Result, error)
	// Open reads an offloaded ledger; ref.Driver/Metadata select the location.
	Open(ctx context.Context, ref Ref) (ReadHandle, error)
	// Delete removes ref's objects; missing objects are not an error.
	Delete(ctx context.Context, ref Ref) error
	Close() error
}

// Options are the process-wide parts an offloader shares with others.
type Options struct {
	// Cache is the chunk cache shared by the readers; nil creates one of
	// Config.ReadCacheSize bytes.
	Cache *ChunkCache
	// Metrics receives brk_ledgeroffloader_* counts; nil records nothing.
	Metrics *Metrics
	Logger  *slog.Logger
	// Retry governs retries of transient store errors on reads and deletes.
	Retry Retry
}

// New builds the offloader of a configuration. It connects lazily; call Check to fail
// early on credentials or a missing bucket.
func New(ctx context.Context, c Config, opts Options) (Offloader, error) {
	if !c.Enabled() {
		return nil, fmt.Errorf("%w: no managedLedgerOffloadDriver configured", ErrConfig)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return nil, err
	}
	return newOffloader(c, st, opts), nil
}

func newOffloader(c Config, st store, opts Options) *blobOffloader {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Cache == nil {
		opts.Cache = NewChunkCache(c.ReadCacheSize)
	}
	if opts.Retry == (Retry{}) {
		opts.Retry = DefaultRetry()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &blobOffloader{
		cfg:       c,
		st:        st,
		opts:      opts,
		log:       opts.Logger.With("driver", c.Driver, "store", st.describe()),
		offloads:  make(chan struct{}, c.MaxThreads),
		reads:     make(chan struct{}, c.ReadThreads),
		others:    map[string]store{},
		bg:        ctx,
		bgCancel:  cancel,
		ownMDKey:  metadataKey(c.Driver, c.DriverMetadata()),
		createdAt: time.Now(),
	}
}

type blobOffloader struct {
	cfg  Config
	st   store
	opts Options
	log  *slog.Logger

	offloads chan struct{} // MaxThreads slots
	reads    chan struct{} // ReadThreads slots, shared by every handle

	mu     sync.Mutex
	others map[string]store // stores of other recorded locations, by metadataKey
	closed bool

	bg       context.Context // prefetches; canceled by Close
	bgCancel context.CancelFunc
	bgWG     sync.WaitGroup

	ownMDKey  string
	createdAt time.Time
}

// metadataKey is a canonical string of a location.
func metadataKey(driver string, md map[string]string) string {
	var b strings.Builder
	b.WriteString(canonicalDriver(driver))
	for _, k := range slices.Sorted(maps.Keys(md)) {
		fmt.Fprintf(&b, "\x00%s=%s", k, md[k])
	}
	return b.String()
}

func (o *blobOffloader) DriverName() string                { return o.cfg.Driver }
func (o *blobOffloader) DriverMetadata() map[string]string { return o.cfg.DriverMetadata() }

// storeFor returns the store of a recorded location: ours, or one opened with our
// credentials and tuning at the recorded place.
func (o *blobOffloader) storeFor(ctx context.Context, ref Ref) (store, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errClosed
	}
	if ref.Driver == "" {
		return o.st, nil
	}
	k := metadataKey(ref.Driver, ref.Metadata)
	if k == o.ownMDKey {
		return o.st, nil
	}
	if st, ok := o.others[k]; ok {
		return st, nil
	}
	c := o.cfg.WithDriverMetadata(ref.Driver, ref.Metadata)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("offload: ledger %d recorded at an unusable location: %w", ref.LedgerID, err)
	}
	st, err := openStore(ctx, c)
	if err != nil {
		return nil, err
	}
	o.others[k] = st
	return st, nil
}

var errClosed = errors.New("offload: offloader closed")

// DataKey and IndexKey are the object names of a ledger (Pulsar's).
func DataKey(uuid string, ledgerID int64) string { return fmt.Sprintf("%s-ledger-%d", uuid, ledgerID) }

// IndexKey is the index object of a ledger.
func IndexKey(uuid string, ledgerID int64) string { return DataKey(uuid, ledgerID) + "-index" }

// NewUUID returns a random RFC 4122 version 4 uuid string.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("offload: no randomness: %v", err)) // crypto/rand does not fail on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if r != '-' {
				return false
			}
		case !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f'):
			return false
		}
	}
	return true
}

func (o *blobOffloader) Check(ctx context.Context) error {
	key := "magnetar-offload-check-" + NewUUID()
	want := []byte("magnetar offload check " + key)
	fail := func(err error) error {
		return fmt.Errorf("offload: check of %s (%s) failed: %w", o.st.describe(), o.cfg.Driver, err)
	}
	w, err := o.st.create(ctx, key, o.partSize(), 1)
	if err != nil {
		return fail(err)
	}
	if _, err := w.Write(want); err != nil {
		w.abort()
		return fail(err)
	}
	if err := w.commit(); err != nil {
		return fail(err)
	}
	got := make([]byte, len(want))
	rerr := o.st.readAt(ctx, key, 0, got)
	derr := o.st.remove(ctx, key)
	if rerr != nil {
		return fail(rerr)
	}
	if !bytes.Equal(got, want) {
		return fail(fmt.Errorf("probe object read back differently"))
	}
	if derr != nil {
		return fail(derr)
	}
	return nil
}

// partSize is the multipart part size; S3 takes no part under 5 MiB.
func (o *blobOffloader) partSize() int {
	if (o.cfg.Driver == DriverS3 || o.cfg.Driver == DriverAWSS3) && o.cfg.MaxBlockSize < minS3PartSize {
		return minS3PartSize
	}
	return o.cfg.MaxBlockSize
}

func (o *blobOffloader) Delete(ctx context.Context, ref Ref) error {
	if !validUUID(ref.UUID) {
		return fmt.Errorf("%w: ledger %d: uuid %q", ErrConfig, ref.LedgerID, ref.UUID)
	}
	st, err := o.storeFor(ctx, ref)
	if err != nil {
		return err
	}
	var errs []error
	for _, key := range []string{IndexKey(ref.UUID, ref.LedgerID), DataKey(ref.UUID, ref.LedgerID)} {
		err := o.opts.Retry.Do(ctx, func() error { return st.remove(ctx, key) })
		errs = append(errs, err)
	}
	err = errors.Join(errs...)
	o.opts.Cache.drop(st.describe(), DataKey(ref.UUID, ref.LedgerID))
	o.opts.Metrics.deleted(ref.Topic, err == nil)
	if err != nil {
		o.log.Warn("deleting offloaded ledger failed", "ledger", ref.LedgerID, "uuid", ref.UUID, "err", err)
	}
	return err
}

func (o *blobOffloader) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	others := o.others
	o.others = nil
	o.mu.Unlock()
	o.bgCancel()
	o.bgWG.Wait()
	errs := []error{o.st.close()}
	for _, st := range others {
		errs = append(errs, st.close())
	}
	return errors.Join(errs...)
}

// acquire takes a slot of sem or gives up with ctx.
func acquire(ctx context.Context, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
