package memledger

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// Faults are test hooks; a nil func injects nothing. They are called without locks held.
type Faults struct {
	// CreateError fails Create when it returns non-nil.
	CreateError func() error
	// AppendError fails the append of entryID to ledgerID when it returns non-nil; the writer
	// then fails every later append too, as a real writer does.
	AppendError func(ledgerID, entryID int64) error
	// ReadError fails a read of first..last when it returns non-nil.
	ReadError func(ledgerID, first, last int64) error
	// DeleteError fails Delete when it returns non-nil.
	DeleteError func(ledgerID int64) error
	// AppendDelay is slept before each append completes (per writer, so appends of one
	// writer stay pipelined behind each other).
	AppendDelay time.Duration
}

// Client is an in-memory ledger.Client. Safe for concurrent use.
type Client struct {
	mu      sync.Mutex
	nextID  int64
	ledgers map[int64]*memLedger
	faults  Faults
	closed  bool
	deleted []int64
}

type memLedger struct {
	id      int64
	opts    ledger.CreateOptions
	entries [][]byte
	// lac is what the bookies know: the LAC piggybacked on the newest add, which lags the
	// writer's own LAC (the newest entry is readable only after the next add or the close).
	lac    int64
	closed bool
	fenced bool
	notify chan struct{} // closed and replaced on every append or close
}

var _ ledger.Client = (*Client)(nil)

// New returns an empty client whose first ledger id is 1.
func New() *Client {
	return &Client{nextID: 1, ledgers: map[int64]*memLedger{}}
}

// SetFaults replaces the fault hooks.
func (c *Client) SetFaults(f Faults) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = f
}

func (c *Client) getFaults() Faults {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.faults
}

// LedgerIDs lists the ledgers that exist, ascending.
func (c *Client) LedgerIDs() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]int64, 0, len(c.ledgers))
	for id := range c.ledgers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Deleted lists the ledgers deleted so far, in deletion order.
func (c *Client) Deleted() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.deleted...)
}

// Exists reports whether a ledger exists (created and not deleted).
func (c *Client) Exists(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.ledgers[id]
	return ok
}

// Info returns a ledger's entry count, whether it is closed or fenced, and its options.
func (c *Client) Info(id int64) (entries int64, closed, fenced bool, opts ledger.CreateOptions, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.ledgers[id]
	if !ok {
		return 0, false, false, ledger.CreateOptions{}, false
	}
	return int64(len(l.entries)), l.closed, l.fenced, l.opts, true
}

// Create makes a new ledger and returns its writer.
func (c *Client) Create(ctx context.Context, opts ledger.CreateOptions) (ledger.Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.AckQuorum < 1 || opts.WriteQuorum < opts.AckQuorum || opts.EnsembleSize < opts.WriteQuorum {
		return nil, fmt.Errorf("%w: ensemble %d, write quorum %d, ack quorum %d", ledger.ErrBadArgument, opts.EnsembleSize, opts.WriteQuorum, opts.AckQuorum)
	}
	if f := c.getFaults().CreateError; f != nil {
		if err := f(); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ledger.ErrClosed
	}
	l := &memLedger{id: c.nextID, opts: opts, lac: -1, notify: make(chan struct{})}
	l.opts.Password = append([]byte(nil), opts.Password...)
	c.nextID++
	c.ledgers[l.id] = l
	return &writer{c: c, l: l, lac: -1}, nil
}

// Open returns a reader; with Recovery it first fences and closes the ledger.
func (c *Client) Open(ctx context.Context, id int64, opts ledger.OpenOptions) (ledger.Reader, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ledger.ErrClosed
	}
	l, ok := c.ledgers[id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ledger.ErrNoSuchLedger, id)
	}
	if string(opts.Password) != string(l.opts.Password) {
		return nil, fmt.Errorf("%w: wrong password for ledger %d", ledger.ErrBadArgument, id)
	}
	if opts.Recovery && !l.closed {
		l.fenced, l.closed = true, true
		l.wake()
	}
	return &reader{c: c, id: id, lac: l.readableLAC()}, nil
}

// Fence fences and closes a ledger as another client's recovery would.
func (c *Client) Fence(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.ledgers[id]; ok {
		l.fenced, l.closed = true, true
		l.wake()
	}
}

// Delete removes a ledger.
func (c *Client) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f := c.getFaults().DeleteError; f != nil {
		if err := f(id); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ledger.ErrClosed
	}
	l, ok := c.ledgers[id]
	if !ok {
		return fmt.Errorf("%w: %d", ledger.ErrNoSuchLedger, id)
	}
	delete(c.ledgers, id)
	c.deleted = append(c.deleted, id)
	l.wake()
	return nil
}

// Close makes every later call fail with ledger.ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// readableLAC is the LAC a reader can learn: the last entry once closed, else the
// piggybacked LAC.
func (l *memLedger) readableLAC() int64 {
	if l.closed {
		return int64(len(l.entries)) - 1
	}
	return l.lac
}

func (l *memLedger) wake() {
	close(l.notify)
	l.notify = make(chan struct{})
}

type appendOp struct {
	data []byte
	done func(int64, error)
}

type writer struct {
	c *Client
	l *memLedger

	mu      sync.Mutex
	queue   []appendOp
	running bool
	idle    chan struct{} // closed when the queue drains, if someone waits
	failed  error
	closed  bool
	lac     int64
}

func (w *writer) ID() int64 { return w.l.id }

func (w *writer) AppendAsync(data []byte, done func(int64, error)) {
	buf := append([]byte(nil), data...) // the caller may reuse data, as with a real client
	w.mu.Lock()
	w.queue = append(w.queue, appendOp{data: buf, done: done})
	start := !w.running
	w.running = true
	w.mu.Unlock()
	if start {
		go w.work()
	}
}

// work completes queued appends in order on one goroutine at a time.
func (w *writer) work() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			if w.idle != nil {
				close(w.idle)
				w.idle = nil
			}
			w.mu.Unlock()
			return
		}
		op := w.queue[0]
		w.queue = w.queue[1:]
		failed, closed, carried := w.failed, w.closed, w.lac
		w.mu.Unlock()
		eid, err := int64(-1), failed
		if err == nil && closed {
			err = ledger.ErrClosed
		}
		if err == nil {
			eid, err = w.apply(op.data, carried)
		}
		w.mu.Lock()
		if err != nil && w.failed == nil {
			w.failed = err
		}
		if err == nil {
			w.lac = eid
		}
		w.mu.Unlock()
		op.done(eid, err)
	}
}

func (w *writer) apply(data []byte, carried int64) (int64, error) {
	f := w.c.getFaults()
	if f.AppendDelay > 0 {
		time.Sleep(f.AppendDelay)
	}
	w.c.mu.Lock()
	l, ok := w.c.ledgers[w.l.id]
	switch {
	case !ok:
		w.c.mu.Unlock()
		return -1, fmt.Errorf("%w: %d was deleted", ledger.ErrNoSuchLedger, w.l.id)
	case l.fenced:
		w.c.mu.Unlock()
		return -1, fmt.Errorf("%w: ledger %d", ledger.ErrFenced, l.id)
	case l.closed:
		w.c.mu.Unlock()
		return -1, fmt.Errorf("%w: ledger %d", ledger.ErrClosed, l.id)
	}
	eid := int64(len(l.entries))
	w.c.mu.Unlock()
	if f.AppendError != nil {
		if err := f.AppendError(l.id, eid); err != nil {
			return -1, err
		}
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if l.fenced { // fenced while the fault hook ran
		return -1, fmt.Errorf("%w: ledger %d", ledger.ErrFenced, l.id)
	}
	l.entries = append(l.entries, data)
	l.lac = max(l.lac, carried)
	l.wake()
	return eid, nil
}

func (w *writer) Append(ctx context.Context, data []byte) (int64, error) {
	type res struct {
		id  int64
		err error
	}
	ch := make(chan res, 1)
	w.AppendAsync(data, func(id int64, err error) { ch <- res{id, err} })
	select {
	case r := <-ch:
		return r.id, r.err
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

func (w *writer) LastAddConfirmed() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lac
}

// Close waits for queued appends, then closes the ledger at its last entry. It fails with
// ledger.ErrFenced if the ledger was recovered by someone else meanwhile.
func (w *writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.running {
		if w.idle == nil {
			w.idle = make(chan struct{})
		}
		idle := w.idle
		w.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
		w.mu.Lock()
	}
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if already {
		return nil
	}
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	l, ok := w.c.ledgers[w.l.id]
	if !ok {
		return fmt.Errorf("%w: %d was deleted", ledger.ErrNoSuchLedger, w.l.id)
	}
	if l.fenced {
		return fmt.Errorf("%w: ledger %d", ledger.ErrFenced, l.id)
	}
	l.closed = true
	l.wake()
	return nil
}

type reader struct {
	c  *Client
	id int64

	mu     sync.Mutex
	lac    int64
	closed bool
}

func (r *reader) ID() int64 { return r.id }

func (r *reader) LastAddConfirmed() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lac
}

func (r *reader) IsClosed() bool {
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	l, ok := r.c.ledgers[r.id]
	return ok && l.closed
}

func (r *reader) Read(ctx context.Context, first, last int64) ([]ledger.Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	lac, closed := r.lac, r.closed
	r.mu.Unlock()
	if closed {
		return nil, ledger.ErrClosed
	}
	if first < 0 || last < first {
		return nil, fmt.Errorf("%w: read %d..%d", ledger.ErrBadArgument, first, last)
	}
	if last > lac {
		return nil, fmt.Errorf("%w: ledger %d entry %d is beyond the last add confirmed %d", ledger.ErrNoSuchEntry, r.id, last, lac)
	}
	if f := r.c.getFaults().ReadError; f != nil {
		if err := f(r.id, first, last); err != nil {
			return nil, err
		}
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	l, ok := r.c.ledgers[r.id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ledger.ErrNoSuchLedger, r.id)
	}
	out := make([]ledger.Entry, 0, last-first+1)
	for e := first; e <= last; e++ {
		out = append(out, ledger.Entry{LedgerID: r.id, EntryID: e, Data: l.entries[e]})
	}
	return out, nil
}

func (r *reader) ReadLastAddConfirmed(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return -1, err
	}
	r.c.mu.Lock()
	l, ok := r.c.ledgers[r.id]
	lac := int64(-1)
	if ok {
		lac = l.readableLAC()
	}
	r.c.mu.Unlock()
	if !ok {
		return -1, fmt.Errorf("%w: %d", ledger.ErrNoSuchLedger, r.id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lac = max(r.lac, lac)
	return r.lac, nil
}

func (r *reader) WaitLastAddConfirmed(ctx context.Context, previous int64) (int64, error) {
	for {
		r.c.mu.Lock()
		l, ok := r.c.ledgers[r.id]
		if !ok {
			r.c.mu.Unlock()
			return -1, fmt.Errorf("%w: %d", ledger.ErrNoSuchLedger, r.id)
		}
		lac, ch, closed := l.readableLAC(), l.notify, l.closed
		r.c.mu.Unlock()
		if lac > previous || closed {
			r.mu.Lock()
			r.lac = max(r.lac, lac)
			lac = r.lac
			r.mu.Unlock()
			if lac <= previous {
				return lac, fmt.Errorf("%w: ledger %d ended at entry %d", ledger.ErrClosed, r.id, lac)
			}
			return lac, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return -1, ctx.Err()
		}
	}
}

func (r *reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}
