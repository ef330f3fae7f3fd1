package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// fakeCluster is an in-process set of bookies behind one bookieproto.Client, with fault
// injection, registered in a memory metadata store. Unit tests of this package only.
type fakeCluster struct {
	t     testing.TB
	store *memstore.Store

	mu       sync.Mutex
	bookies  map[string]*fakeBookie
	sessions map[string]metadata.Session
}

type fakeLedger struct {
	entries map[int64][]byte
	fenced  bool
	lac     int64
}

type fakeBookie struct {
	addr  string
	queue chan func() // adds run here one at a time, in call order, like one connection

	mu        sync.Mutex
	ledgers   map[int64]*fakeLedger
	down      bool           // every request fails with ErrUnavailable
	hold      chan struct{}  // non-nil: adds wait until it is closed
	dropFence bool           // fencing read-LAC requests are lost
	corrupt   map[int64]bool // entry ids returned with a flipped byte
	readDelay time.Duration  // every entry read waits this long
	adds      int            // adds stored, for striping checks
	reads     int            // entry reads asked (single or within a range)
	stop      chan struct{}
}

func newFakeCluster(t testing.TB) *fakeCluster {
	fc := &fakeCluster{t: t, store: memstore.New(memstore.DefaultOptions()), bookies: map[string]*fakeBookie{}, sessions: map[string]metadata.Session{}}
	t.Cleanup(func() {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		for _, b := range fc.bookies {
			b.mu.Lock()
			if b.hold != nil {
				close(b.hold)
				b.hold = nil
			}
			b.mu.Unlock()
			close(b.stop)
		}
		fc.bookies = map[string]*fakeBookie{}
	})
	return fc
}

// addBookie starts a bookie and registers it (rack may be empty).
func (fc *fakeCluster) addBookie(addr, rack string) *fakeBookie {
	b := &fakeBookie{addr: addr, queue: make(chan func(), 100000), ledgers: map[int64]*fakeLedger{}, corrupt: map[int64]bool{}, stop: make(chan struct{})}
	go func() {
		for {
			select {
			case f := <-b.queue:
				f()
			case <-b.stop:
				return
			}
		}
	}()
	fc.mu.Lock()
	fc.bookies[addr] = b
	fc.mu.Unlock()
	fc.register(addr, rack)
	return b
}

func (fc *fakeCluster) register(addr, rack string) {
	sess, err := fc.store.NewSession(context.Background(), time.Minute)
	if err != nil {
		fc.t.Fatal(err)
	}
	v, _ := json.Marshal(resources.BookieRegistration{Address: addr, Rack: rack, State: resources.BookieWritable})
	if _, err := sess.PutEphemeral(context.Background(), resources.BookieRegistrationsPrefix+addr, v, metadata.NotExists); err != nil {
		fc.t.Fatal(err)
	}
	fc.mu.Lock()
	fc.sessions[addr] = sess
	fc.mu.Unlock()
}

func (fc *fakeCluster) addBookies(n int) []string {
	var out []string
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", 3181+i)
		fc.addBookie(addr, "")
		out = append(out, addr)
	}
	return out
}

func (fc *fakeCluster) bookie(addr string) *fakeBookie {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.bookies[addr]
}

// kill stops a bookie: requests fail as unreachable and its registration goes away.
func (fc *fakeCluster) kill(addr string) {
	b := fc.bookie(addr)
	b.mu.Lock()
	b.down = true
	if b.hold != nil {
		close(b.hold)
		b.hold = nil
	}
	b.mu.Unlock()
	fc.mu.Lock()
	sess := fc.sessions[addr]
	delete(fc.sessions, addr)
	fc.mu.Unlock()
	if sess != nil {
		sess.Close()
	}
}

func (b *fakeBookie) holdAdds() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold == nil {
		b.hold = make(chan struct{})
	}
}

func (b *fakeBookie) releaseAdds() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold != nil {
		close(b.hold)
		b.hold = nil
	}
}

func (b *fakeBookie) set(f func(b *fakeBookie)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b)
}

func (b *fakeBookie) has(ledgerID, entryID int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.ledgers[ledgerID]
	return l != nil && l.entries[entryID] != nil
}

func (b *fakeBookie) ledgerLocked(id int64, create bool) *fakeLedger {
	l := b.ledgers[id]
	if l == nil && create {
		l = &fakeLedger{entries: map[int64][]byte{}, lac: -1}
		b.ledgers[id] = l
	}
	return l
}

func (fc *fakeCluster) metaStore() metadata.Store           { return fc.store }
func (fc *fakeCluster) newBookieClient() bookieproto.Client { return fc.client() }
func (fc *fakeCluster) hasEntry(addr string, ledgerID, entryID int64) bool {
	return fc.bookie(addr).has(ledgerID, entryID)
}

// client returns a bookieproto.Client over the cluster.
func (fc *fakeCluster) client() bookieproto.Client { return &fakeClient{fc: fc} }

type fakeClient struct{ fc *fakeCluster }

var _ bookieproto.Client = (*fakeClient)(nil)

func (c *fakeClient) get(addr string) (*fakeBookie, error) {
	b := c.fc.bookie(addr)
	if b == nil {
		return nil, fmt.Errorf("%s: %w", addr, bookieproto.ErrUnavailable)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return nil, fmt.Errorf("%s: %w", addr, bookieproto.ErrUnavailable)
	}
	return b, nil
}

func ctxErr(ctx context.Context) error {
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("%w: %w", bookieproto.ErrTimeout, ctx.Err())
	}
	return ctx.Err()
}

func (c *fakeClient) AddEntry(ctx context.Context, addr string, req bookieproto.AddRequest, done func(error)) {
	b, err := c.get(addr)
	if err != nil {
		go done(err)
		return
	}
	req.Payload = append(slices.Clone(req.Prefix), req.Payload...)
	b.queue <- func() {
		b.mu.Lock()
		hold := b.hold
		b.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				done(ctxErr(ctx))
				return
			}
		}
		b.mu.Lock()
		defer func() {
			b.mu.Unlock()
		}()
		if b.down {
			go done(bookieproto.ErrUnavailable)
			return
		}
		if ctx.Err() != nil {
			go done(ctxErr(ctx))
			return
		}
		l := b.ledgerLocked(req.LedgerID, true)
		if l.fenced && !req.Recovery {
			go done(bookieproto.ErrFenced)
			return
		}
		l.entries[req.EntryID] = req.Payload
		l.lac = max(l.lac, req.LAC)
		b.adds++
		go done(nil)
	}
}

func (c *fakeClient) readOne(ctx context.Context, b *fakeBookie, ledgerID, entryID int64, fence bool) (bookieproto.Entry, error) {
	b.mu.Lock()
	delay := b.readDelay
	b.reads++
	b.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return bookieproto.Entry{}, ctxErr(ctx)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.down {
		return bookieproto.Entry{}, bookieproto.ErrUnavailable
	}
	l := b.ledgerLocked(ledgerID, fence)
	if l == nil {
		return bookieproto.Entry{}, bookieproto.ErrNoSuchLedger
	}
	if fence {
		l.fenced = true
	}
	p := l.entries[entryID]
	if p == nil {
		return bookieproto.Entry{}, bookieproto.ErrNoSuchEntry
	}
	p = slices.Clone(p)
	if b.corrupt[entryID] {
		p[len(p)-1] ^= 0x40
	}
	return bookieproto.Entry{LedgerID: ledgerID, EntryID: entryID, LAC: l.lac, Payload: p}, nil
}

func (c *fakeClient) ReadEntry(ctx context.Context, addr string, req bookieproto.ReadRequest) (bookieproto.Entry, error) {
	b, err := c.get(addr)
	if err != nil {
		return bookieproto.Entry{}, err
	}
	return c.readOne(ctx, b, req.LedgerID, req.EntryID, req.Fence)
}

func (c *fakeClient) ReadRange(ctx context.Context, addr string, ledgerID, first, last int64, maxBytes int) ([]bookieproto.Entry, error) {
	b, err := c.get(addr)
	if err != nil {
		return nil, err
	}
	var out []bookieproto.Entry
	size := 0
	for e := first; e <= last && size < maxBytes; e++ {
		ent, err := c.readOne(ctx, b, ledgerID, e, false)
		if err != nil {
			if len(out) == 0 {
				return nil, err
			}
			break
		}
		size += len(ent.Payload)
		out = append(out, ent)
	}
	return out, nil
}

func (c *fakeClient) ReadLAC(ctx context.Context, addr string, ledgerID int64, fence bool, masterKey []byte) (int64, error) {
	b, err := c.get(addr)
	if err != nil {
		return -1, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if fence && b.dropFence {
		return -1, fmt.Errorf("fence request lost: %w", bookieproto.ErrTimeout)
	}
	l := b.ledgerLocked(ledgerID, fence)
	if l == nil {
		return -1, bookieproto.ErrNoSuchLedger
	}
	if fence {
		l.fenced = true
	}
	return l.lac, nil
}

func (c *fakeClient) WaitLAC(ctx context.Context, addr string, ledgerID, previous int64, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for {
		b, err := c.get(addr)
		if err != nil {
			return -1, err
		}
		b.mu.Lock()
		lac := int64(-1)
		if l := b.ledgers[ledgerID]; l != nil {
			lac = l.lac
		}
		b.mu.Unlock()
		if lac > previous || time.Now().After(deadline) {
			return lac, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctxErr(ctx)
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (c *fakeClient) DeleteLedger(ctx context.Context, addr string, ledgerID int64) error {
	b, err := c.get(addr)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.ledgers, ledgerID)
	return nil
}

func (c *fakeClient) Close() error { return nil }
