package broker

import (
	"context"
	"errors"
	"sync"

	"github.com/magnetar-io/magnetar/internal/ledger"
)

// testLedgers is a minimal in-memory ledger.Client for the broker's tests, used until the
// shared memledger twin is available on this branch. Appends complete synchronously, in
// order, on a goroutine per call batch to mimic asynchronous storage.
type testLedgers struct {
	mu      sync.Mutex
	next    int64
	ledgers map[int64]*testLedger
}

type testLedger struct {
	mu      sync.Mutex
	id      int64
	entries [][]byte
	closed  bool
	fenced  bool
}

func newTestLedgers() *testLedgers { return &testLedgers{next: 1, ledgers: map[int64]*testLedger{}} }

func (c *testLedgers) Create(_ context.Context, _ ledger.CreateOptions) (ledger.Writer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := &testLedger{id: c.next}
	c.ledgers[l.id] = l
	c.next++
	return &testWriter{l: l, ch: make(chan func(), 1024)}, nil
}

func (c *testLedgers) Open(_ context.Context, id int64, opts ledger.OpenOptions) (ledger.Reader, error) {
	c.mu.Lock()
	l, ok := c.ledgers[id]
	c.mu.Unlock()
	if !ok {
		return nil, errors.New("testledger: no such ledger")
	}
	if opts.Recovery {
		l.mu.Lock()
		l.fenced, l.closed = true, true
		l.mu.Unlock()
	}
	return testReader{l}, nil
}

func (c *testLedgers) Delete(_ context.Context, id int64) error {
	c.mu.Lock()
	delete(c.ledgers, id)
	c.mu.Unlock()
	return nil
}

func (c *testLedgers) Close() error { return nil }

type testWriter struct {
	l    *testLedger
	once sync.Once
	ch   chan func()
	wmu  sync.Mutex
}

func (w *testWriter) ID() int64 { return w.l.id }

func (w *testWriter) AppendAsync(data []byte, done func(int64, error)) {
	w.once.Do(func() {
		go func() {
			for f := range w.ch {
				f()
			}
		}()
	})
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.l.mu.Lock()
	if w.l.fenced || w.l.closed {
		w.l.mu.Unlock()
		w.ch <- func() { done(0, errors.New("testledger: fenced or closed")) }
		return
	}
	id := int64(len(w.l.entries))
	w.l.entries = append(w.l.entries, data)
	w.l.mu.Unlock()
	w.ch <- func() { done(id, nil) }
}

func (w *testWriter) Append(ctx context.Context, data []byte) (int64, error) {
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
		return 0, ctx.Err()
	}
}

func (w *testWriter) LastAddConfirmed() int64 {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return int64(len(w.l.entries)) - 1
}

func (w *testWriter) Close(context.Context) error {
	w.l.mu.Lock()
	w.l.closed = true
	w.l.mu.Unlock()
	return nil
}

type testReader struct{ l *testLedger }

func (r testReader) ID() int64 { return r.l.id }
func (r testReader) LastAddConfirmed() int64 {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return int64(len(r.l.entries)) - 1
}
func (r testReader) IsClosed() bool {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	return r.l.closed
}
func (r testReader) Read(_ context.Context, first, last int64) ([]ledger.Entry, error) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	if first < 0 || last >= int64(len(r.l.entries)) || first > last {
		return nil, errors.New("testledger: read out of range")
	}
	out := make([]ledger.Entry, 0, last-first+1)
	for i := first; i <= last; i++ {
		out = append(out, ledger.Entry{LedgerID: r.l.id, EntryID: i, Data: r.l.entries[i]})
	}
	return out, nil
}
func (r testReader) ReadLastAddConfirmed(context.Context) (int64, error) {
	return r.LastAddConfirmed(), nil
}
func (r testReader) WaitLastAddConfirmed(ctx context.Context, previous int64) (int64, error) {
	<-ctx.Done()
	return previous, ctx.Err()
}
func (r testReader) Close() error { return nil }
