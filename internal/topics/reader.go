package topics

import (
	"context"
	"fmt"

	"github.com/magnetar-io/magnetar/internal/wire"
)

// Reader reads a persistent topic's stored entries from a position on, without a
// subscription: it holds nothing back from trimming, acknowledges nothing, and sees every
// entry as stored, with its dispatch metadata. It is the read-only view the SQL reader, the
// functions runtime and Kafka fetches use. A Reader is not safe for concurrent use.
type Reader struct {
	t   *Topic
	cur *logCursor
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

// Read returns up to max entries from the reader's position on and moves past them,
// waiting until at least one is stored or ctx ends. After the last entry of a terminated
// topic it fails with ErrTopicTerminated.
func (r *Reader) Read(ctx context.Context, max int) ([]Entry, error) {
	es, err := r.cur.read(ctx, max)
	for i := range es {
		es[i].Meta = metaOf(es[i])
	}
	return es, err
}

// HasMore tells whether an entry is stored at or after the reader's position (a Read would
// not wait).
func (r *Reader) HasMore() bool { return r.cur.c.HasMoreEntries() }

// Position is where the next Read starts.
func (r *Reader) Position() Position { return r.cur.c.ReadPosition() }

// Seek moves the reader so that the next Read starts at p (or the first entry after it).
func (r *Reader) Seek(p Position) { r.cur.seek(p) }

// Topic is the reader's topic.
func (r *Reader) Topic() *Topic { return r.t }

// Close releases the reader.
func (r *Reader) Close() { r.cur.close() }
