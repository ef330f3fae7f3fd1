package offload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// maxIndexObject bounds the index object a reader loads (a corrupt size must not make it
// allocate gigabytes); a writer's index is ~16 bytes per ReadBufferSize of data.
const maxIndexObject = 256 << 20

// Open loads the index and checks the data object's size, so a truncated object fails here.
func (o *blobOffloader) Open(ctx context.Context, ref Ref) (ReadHandle, error) {
	if !validUUID(ref.UUID) {
		return nil, fmt.Errorf("%w: ledger %d: uuid %q", ErrConfig, ref.LedgerID, ref.UUID)
	}
	st, err := o.storeFor(ctx, ref)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ix, err := o.loadIndex(ctx, st, ref)
	if err != nil {
		o.opts.Metrics.readFailed(ref.Topic)
		return nil, err
	}
	o.opts.Metrics.indexRead(ref.Topic, time.Since(start))
	dataKey := DataKey(ref.UUID, ref.LedgerID)
	var n int64
	err = o.opts.Retry.Do(ctx, func() error {
		var err error
		n, err = st.size(ctx, dataKey)
		return err
	})
	if err != nil {
		o.opts.Metrics.readFailed(ref.Topic)
		return nil, fmt.Errorf("offload: opening ledger %d: %w", ref.LedgerID, err)
	}
	if n != ix.DataLength {
		o.opts.Metrics.readFailed(ref.Topic)
		return nil, corruptf("ledger %d: data object %s has %d bytes, the index says %d", ref.LedgerID, dataKey, n, ix.DataLength)
	}
	return &readHandle{o: o, st: st, ix: ix, ref: ref, key: chunkKey{object: dataKey, store: st.describe()}}, nil
}

func (o *blobOffloader) loadIndex(ctx context.Context, st store, ref Ref) (*index, error) {
	key := IndexKey(ref.UUID, ref.LedgerID)
	var body []byte
	err := o.opts.Retry.Do(ctx, func() error {
		n, err := st.size(ctx, key)
		if err != nil {
			return err
		}
		if n > maxIndexObject {
			return corruptf("index %s of %d bytes", key, n)
		}
		body = make([]byte, n)
		return st.readAt(ctx, key, 0, body)
	})
	if err != nil {
		return nil, fmt.Errorf("offload: reading index of ledger %d: %w", ref.LedgerID, err)
	}
	ix, err := decodeIndex(body, ref.LedgerID)
	if err != nil {
		return nil, fmt.Errorf("offload: index %s: %w", key, err)
	}
	return ix, nil
}

// readHandle reads one offloaded ledger through the shared chunk cache.
type readHandle struct {
	o   *blobOffloader
	st  store
	ix  *index
	ref Ref
	key chunkKey // seq filled per chunk
}

func (h *readHandle) ID() int64                   { return h.ix.LedgerID }
func (h *readHandle) LastAddConfirmed() int64     { return h.ix.LastEntry }
func (h *readHandle) IsClosed() bool              { return true }
func (h *readHandle) Length() int64               { return h.ix.LedgerLength }
func (h *readHandle) Metadata() map[string]string { return h.ix.Metadata }
func (h *readHandle) Close() error                { return nil }

func (h *readHandle) ReadLastAddConfirmed(context.Context) (int64, error) { return h.ix.LastEntry, nil }

func (h *readHandle) WaitLastAddConfirmed(_ context.Context, previous int64) (int64, error) {
	if h.ix.LastEntry > previous {
		return h.ix.LastEntry, nil
	}
	return h.ix.LastEntry, ledger.ErrClosed
}

// Read returns entries first..last. Each entry's data is copied out of the chunk into one
// buffer per call, so what the caller keeps does not pin cached chunks.
func (h *readHandle) Read(ctx context.Context, first, last int64) ([]ledger.Entry, error) {
	if first < 0 || last < first {
		return nil, fmt.Errorf("%w: read %d..%d of ledger %d", ledger.ErrBadArgument, first, last, h.ix.LedgerID)
	}
	if last > h.ix.LastEntry {
		return nil, fmt.Errorf("%w: entry %d of offloaded ledger %d (last %d)", ledger.ErrNoSuchEntry, last, h.ix.LedgerID, h.ix.LastEntry)
	}
	start := time.Now()
	type span struct{ frames []frame }
	var spans []span
	total := 0
	for e := first; e <= last; {
		c := h.ix.chunkFor(e)
		frames, err := h.chunk(ctx, c)
		if err != nil {
			h.o.opts.Metrics.readFailed(h.ref.Topic)
			return nil, err
		}
		lo, hi := int(e-c.First), int(min(last, c.Last)-c.First)
		if hi >= len(frames) {
			return nil, corruptf("ledger %d: chunk at entry %d has %d entries, the index says %d", h.ix.LedgerID, c.First, len(frames), c.Last-c.First+1)
		}
		spans = append(spans, span{frames[lo : hi+1]})
		for _, f := range frames[lo : hi+1] {
			total += len(f.Payload)
		}
		h.prefetch(c.Seq)
		e = min(last, c.Last) + 1
	}
	buf := make([]byte, 0, total)
	out := make([]ledger.Entry, 0, last-first+1)
	for _, s := range spans {
		for _, f := range s.frames {
			off := len(buf)
			buf = append(buf, f.Payload...)
			out = append(out, ledger.Entry{LedgerID: h.ix.LedgerID, EntryID: f.Entry, Data: buf[off:len(buf):len(buf)]})
		}
	}
	h.o.opts.Metrics.dataRead(h.ref.Topic, int64(total), time.Since(start))
	return out, nil
}

// chunk returns the frames of c from the cache or the store.
func (h *readHandle) chunk(ctx context.Context, c chunk) ([]frame, error) {
	k := h.key
	k.seq = c.Seq
	return h.o.opts.Cache.get(ctx, k, func() ([]byte, []frame, error) { return h.load(ctx, c) })
}

// load fetches and decodes one chunk, holding one of the offloader's read slots.
func (h *readHandle) load(ctx context.Context, c chunk) ([]byte, []frame, error) {
	if err := acquire(ctx, h.o.reads); err != nil {
		return nil, nil, err
	}
	defer func() { <-h.o.reads }()
	data := make([]byte, c.Length)
	err := h.o.opts.Retry.Do(ctx, func() error { return h.st.readAt(ctx, h.key.object, c.Offset, data) })
	if err != nil {
		return nil, nil, fmt.Errorf("offload: reading ledger %d at entry %d: %w", h.ix.LedgerID, c.First, err)
	}
	frames, err := parseChunk(data, h.ix.LedgerID, c.First, c.BlockStart, make([]frame, 0, c.Last-c.First+1))
	if err != nil {
		return nil, nil, fmt.Errorf("offload: ledger %d, %s at offset %d: %w", h.ix.LedgerID, h.key.object, c.Offset, err)
	}
	if int64(len(frames)) != c.Last-c.First+1 {
		return nil, nil, corruptf("ledger %d: chunk at entry %d has %d entries, the index says %d", h.ix.LedgerID, c.First, len(frames), c.Last-c.First+1)
	}
	return data, frames, nil
}

// prefetch starts loading the PrefetchRounds chunks after seq in the background, into the
// cache, unless they are there or on their way. It never blocks the reader: the loads wait
// for read slots on their own goroutines and end with the offloader.
func (h *readHandle) prefetch(seq int) {
	rounds := h.o.cfg.PrefetchRounds
	cache := h.o.opts.Cache // read here, on the reader's goroutine, not by the loads
	if rounds == 0 || cache.max == 0 {
		return
	}
	for i := 1; i <= rounds && seq+i < len(h.ix.Seeks); i++ {
		c := h.ix.chunkAt(seq + i)
		k := h.key
		k.seq = c.Seq
		if cache.contains(k) {
			continue
		}
		h.o.mu.Lock()
		closed := h.o.closed
		if !closed {
			h.o.bgWG.Add(1)
		}
		h.o.mu.Unlock()
		if closed {
			return
		}
		go func() {
			defer h.o.bgWG.Done()
			ctx := h.o.bg
			if _, err := cache.get(ctx, k, func() ([]byte, []frame, error) { return h.load(ctx, c) }); err != nil && !errors.Is(err, context.Canceled) {
				h.o.log.Debug("offload read-ahead failed", "ledger", h.ix.LedgerID, "entry", c.First, "err", err)
			}
		}()
	}
}
