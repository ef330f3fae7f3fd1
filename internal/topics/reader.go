package topics

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Reader reads a persistent topic's stored entries from a position on, without a
// subscription: it holds nothing back from trimming and acknowledges nothing. It delivers
// what a consumer would (Kafka's read_committed is the same rule): never a marker, never an
// entry of an aborted transaction, and nothing at or after the first entry of a transaction
// still open (the log's read limit, the transaction buffer's max-read position). Entries come
// with their dispatch metadata. It is the read-only view the functions runtime, the lakehouse
// writer and Kafka fetches use. A Reader is not safe for concurrent use.
type Reader struct {
	t   *Topic
	cur *logCursor
	// ahead holds deliverable entries HasMore read past hidden ones, not yet returned.
	ahead []Entry
	// raw readers (NewUncommittedReader) deliver everything stored.
	raw bool
}

// NewReader returns a reader whose first read returns the entry at start, or the first one
// after it if start is not stored; Earliest and Latest are allowed.
func (t *Topic) NewReader(ctx context.Context, start Position) (*Reader, error) {
	if err := t.s.authorize(ctx, ActionConsume, t.name); err != nil {
		return nil, err
	}
	if t.log == nil {
		return nil, fmt.Errorf("%w: %s is not persistent: it stores nothing to read", wire.ErrNotAllowed, t.full)
	}
	cur, err := t.log.newReader(start)
	if err != nil {
		return nil, fmt.Errorf("%w: reader on %s: %w", wire.ErrPersistence, t.full, err)
	}
	return &Reader{t: t, cur: cur}, nil
}

// NewUncommittedReader is NewReader without the transaction rules: it reads past the log's
// read limit (entries of transactions still open) and returns markers and entries of
// aborted transactions too, with their dispatch metadata (Meta.Marker; TxnAborted tells
// the aborted ones). Kafka fetches use it: they send each kind the way Kafka does, and a
// read_uncommitted consumer reads up to the high watermark.
func (t *Topic) NewUncommittedReader(ctx context.Context, start Position) (*Reader, error) {
	if err := t.s.authorize(ctx, ActionConsume, t.name); err != nil {
		return nil, err
	}
	if t.log == nil {
		return nil, fmt.Errorf("%w: %s is not persistent: it stores nothing to read", wire.ErrNotAllowed, t.full)
	}
	c, err := t.log.ml.NewUnlimitedReader(start, true)
	if err != nil {
		return nil, fmt.Errorf("%w: reader on %s: %w", wire.ErrPersistence, t.full, mlErr(err))
	}
	return &Reader{t: t, cur: &logCursor{c}, raw: true}, nil
}

// Read returns up to max entries from the reader's position on and moves past them,
// waiting until at least one is deliverable or ctx ends. After the last entry of a
// terminated topic it fails with ErrTopicTerminated.
func (r *Reader) Read(ctx context.Context, max int) ([]Entry, error) {
	if len(r.ahead) > 0 {
		n := min(max, len(r.ahead))
		out := r.ahead[:n:n]
		r.ahead = r.ahead[n:]
		return out, nil
	}
	for {
		es, err := r.cur.read(ctx, max)
		if r.raw {
			for i := range es {
				es[i].Meta = metaOf(es[i])
			}
			return es, err
		}
		es = r.t.deliverable(es)
		if len(es) > 0 || err != nil {
			return es, err
		}
		// Only markers or aborted entries: wait for more.
	}
}

// readAheadEntries bounds what one HasMore reads past hidden entries.
const readAheadEntries = 64

// HasMore tells whether a deliverable entry is stored at or after the reader's position
// (a Read would not wait). On a topic with transactions it may read ahead, past markers
// and aborted entries; a read that fails answers true, so that the next Read reports it.
func (r *Reader) HasMore() bool {
	if len(r.ahead) > 0 {
		return true
	}
	if r.raw || !r.t.txnUsed() {
		return r.cur.c.HasMoreEntries()
	}
	for r.cur.c.HasMoreEntries() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		es, err := r.cur.c.ReadEntries(ctx, readAheadEntries, 0)
		cancel()
		if err != nil {
			return true
		}
		if len(es) == 0 {
			return false
		}
		if r.ahead = r.t.deliverable(es); len(r.ahead) > 0 {
			return true
		}
	}
	return false
}

// Position is where the next Read starts.
func (r *Reader) Position() Position {
	if len(r.ahead) > 0 {
		return r.ahead[0].Position
	}
	return r.cur.c.ReadPosition()
}

// Seek moves the reader so that the next Read starts at p (or the first entry after it).
func (r *Reader) Seek(p Position) {
	r.ahead = nil
	r.cur.seek(p)
}

// Topic is the reader's topic.
func (r *Reader) Topic() *Topic { return r.t }

// Close releases the reader.
func (r *Reader) Close() {
	r.ahead = nil
	r.cur.close()
}

// deliverable fills in the entries' dispatch metadata and leaves out, in place, what no
// consumer is given: markers and entries of aborted transactions. (What open transactions
// hold back, the log's read limit keeps from every cursor already.)
func (t *Topic) deliverable(es []Entry) []Entry {
	out := es[:0]
	for _, e := range es {
		e.Meta = metaOf(e)
		if !t.txnHidden(e.Meta) {
			out = append(out, e)
		}
	}
	return out
}
