package offload

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// Offload streams the ledger from src into blocks of the data object, then writes the index
// and verifies both (doc.go). Entries are read in batches of about readBatchBytes; only one
// batch, the bufio buffer and the store's part buffers are in memory at once, whatever the
// ledger's size.
func (o *blobOffloader) Offload(ctx context.Context, src Source, ref Ref, extra map[string]string) (res Result, err error) {
	if !validUUID(ref.UUID) {
		return res, fmt.Errorf("%w: ledger %d: uuid %q", ErrConfig, ref.LedgerID, ref.UUID)
	}
	if ref.LedgerID != src.ID() {
		return res, fmt.Errorf("%w: ref names ledger %d, source is ledger %d", ErrConfig, ref.LedgerID, src.ID())
	}
	if _, err := o.storeFor(ctx, Ref{}); err != nil {
		return res, err // closed
	}
	if err := acquire(ctx, o.offloads); err != nil {
		return res, err
	}
	defer func() { <-o.offloads }()
	start := time.Now()
	defer func() {
		if err != nil {
			o.opts.Metrics.offloadFailed(ref.Topic)
			o.log.Warn("offload failed", "ledger", ref.LedgerID, "uuid", ref.UUID, "topic", ref.Topic, "err", err)
			// Leave nothing behind under this uuid; the caller retries under another.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			_ = o.st.remove(cctx, IndexKey(ref.UUID, ref.LedgerID))
			_ = o.st.remove(cctx, DataKey(ref.UUID, ref.LedgerID))
			return
		}
		o.log.Info("offloaded ledger", "ledger", ref.LedgerID, "uuid", ref.UUID, "topic", ref.Topic,
			"entries", res.Entries, "bytes", res.Bytes, "blocks", res.Blocks, "took", time.Since(start).Round(time.Millisecond))
	}()

	ix := &index{LedgerID: ref.LedgerID, LastEntry: src.LastAddConfirmed(), BlockSize: uint32(o.cfg.MaxBlockSize), Metadata: extra}
	if err := o.writeData(ctx, src, ref, ix); err != nil {
		return res, err
	}
	body := encodeIndex(ix)
	if err := o.writeObject(ctx, IndexKey(ref.UUID, ref.LedgerID), body); err != nil {
		return res, err
	}
	if err := o.verify(ctx, ref, ix, body); err != nil {
		return res, err
	}
	res = Result{Entries: ix.LastEntry + 1, Bytes: ix.LedgerLength, DataLength: ix.DataLength, Blocks: len(ix.Blocks)}
	o.opts.Metrics.offloaded(ref.Topic, ix.DataLength)
	return res, nil
}

// readBatchBytes is about how much one bookie read of an offload fetches.
const readBatchBytes = 4 << 20

// blockWriter lays out blocks, frames and seek points while the entries stream through.
type blockWriter struct {
	w         *bufio.Writer
	ix        *index
	blockSize int64
	seekEvery int64
	off       int64 // bytes written
	blockOff  int64 // offset of the current block, -1 before the first
	lastSeek  int64 // offset of the last seek point
	hdr       []byte
}

func (b *blockWriter) add(entryID int64, payload []byte) error {
	fl := int64(frameHeaderLength + len(payload))
	if b.blockOff < 0 || b.off-b.blockOff+fl > b.blockSize {
		b.closeBlock()
		b.blockOff, b.lastSeek = b.off, b.off
		b.ix.Blocks = append(b.ix.Blocks, blockInfo{FirstEntry: entryID, Offset: b.off})
		b.ix.Seeks = append(b.ix.Seeks, seekPoint{Entry: entryID, Offset: b.off})
		b.hdr = appendBlockHeader(b.hdr[:0], b.ix.LedgerID, entryID)
		if _, err := b.w.Write(b.hdr); err != nil {
			return err
		}
		b.off += blockHeaderLength
	} else if b.off-b.lastSeek >= b.seekEvery {
		b.lastSeek = b.off
		b.ix.Seeks = append(b.ix.Seeks, seekPoint{Entry: entryID, Offset: b.off})
	}
	b.hdr = appendFrameHeader(b.hdr[:0], entryID, payload)
	if _, err := b.w.Write(b.hdr); err != nil {
		return err
	}
	if _, err := b.w.Write(payload); err != nil {
		return err
	}
	b.off += fl
	b.ix.LedgerLength += int64(len(payload))
	return nil
}

func (b *blockWriter) closeBlock() {
	if b.blockOff >= 0 {
		b.ix.Blocks[len(b.ix.Blocks)-1].Length = b.off - b.blockOff
	}
}

func (o *blobOffloader) writeData(ctx context.Context, src Source, ref Ref, ix *index) error {
	w, err := o.st.create(ctx, DataKey(ref.UUID, ref.LedgerID), o.partSize(), 1)
	if err != nil {
		o.opts.Metrics.storageFailed(ref.Topic)
		return err
	}
	committed := false
	defer func() {
		if !committed {
			w.abort()
		}
	}()
	bw := &blockWriter{w: bufio.NewWriterSize(w, 256<<10), ix: ix, blockSize: int64(o.cfg.MaxBlockSize),
		seekEvery: int64(o.cfg.ReadBufferSize), blockOff: -1}
	batch := int64(64)
	for next := int64(0); next <= ix.LastEntry; {
		last := min(ix.LastEntry, next+batch-1)
		var es []ledger.Entry
		err := o.opts.Retry.Do(ctx, func() error {
			var err error
			es, err = src.Read(ctx, next, last)
			return err
		})
		if err != nil {
			return fmt.Errorf("offload: reading ledger %d entries %d..%d: %w", ref.LedgerID, next, last, err)
		}
		if len(es) == 0 {
			return fmt.Errorf("offload: ledger %d returned no entries at %d", ref.LedgerID, next)
		}
		size := int64(0)
		for _, e := range es {
			if e.EntryID != next {
				return fmt.Errorf("offload: ledger %d returned entry %d where %d was expected", ref.LedgerID, e.EntryID, next)
			}
			if err := bw.add(e.EntryID, e.Data); err != nil {
				o.opts.Metrics.storageFailed(ref.Topic)
				return err
			}
			size += int64(len(e.Data))
			next++
		}
		// Size the next read from this one: about readBatchBytes, 1..1000 entries.
		avg := max(1, size/int64(len(es)))
		batch = min(1000, max(1, readBatchBytes/avg))
	}
	bw.closeBlock()
	ix.DataLength = bw.off
	if err := bw.w.Flush(); err != nil {
		o.opts.Metrics.storageFailed(ref.Topic)
		return err
	}
	committed = true
	if err := w.commit(); err != nil {
		o.opts.Metrics.storageFailed(ref.Topic)
		return err
	}
	return nil
}

func (o *blobOffloader) writeObject(ctx context.Context, key string, body []byte) error {
	w, err := o.st.create(ctx, key, o.partSize(), 1)
	if err != nil {
		return err
	}
	if _, err := w.Write(body); err != nil {
		w.abort()
		return err
	}
	return w.commit()
}

// verify reads back what the store now holds: the data object's size and the index's
// bytes. Only then may the caller consider the bookie copy redundant.
func (o *blobOffloader) verify(ctx context.Context, ref Ref, ix *index, body []byte) error {
	n, err := o.st.size(ctx, DataKey(ref.UUID, ref.LedgerID))
	if err != nil {
		return fmt.Errorf("offload: verifying ledger %d: %w", ref.LedgerID, err)
	}
	if n != ix.DataLength {
		return fmt.Errorf("%w: verifying ledger %d: data object has %d bytes, wrote %d", ErrCorrupt, ref.LedgerID, n, ix.DataLength)
	}
	got := make([]byte, len(body))
	if err := o.st.readAt(ctx, IndexKey(ref.UUID, ref.LedgerID), 0, got); err != nil {
		return fmt.Errorf("offload: verifying ledger %d index: %w", ref.LedgerID, err)
	}
	if !bytes.Equal(got, body) {
		return fmt.Errorf("%w: verifying ledger %d: index reads back differently", ErrCorrupt, ref.LedgerID)
	}
	if sz, err := o.st.size(ctx, IndexKey(ref.UUID, ref.LedgerID)); err != nil || sz != int64(len(body)) {
		return errors.Join(fmt.Errorf("%w: verifying ledger %d: index object has %d bytes, wrote %d", ErrCorrupt, ref.LedgerID, sz, len(body)), err)
	}
	return nil
}
