package bookie

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/logging"
)

// testConfig is a bookie config on a free loopback port with storage under dir.
func testConfig(dir string) config.BookieConfig {
	cfg := config.DefaultBookieConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.Storage.JournalDirectories = []string{dir + "/journal"}
	cfg.Storage.LedgerDirectories = []string{dir + "/ledgers"}
	return cfg
}

type fixture struct {
	b      *Bookie
	st     storage.Storage
	client bookieproto.Client
	addr   string
}

// startBookie serves st on a free port and returns a client for it; both close at cleanup.
func startBookie(t testing.TB, st storage.Storage, mutate func(*config.BookieConfig)) *fixture {
	t.Helper()
	return startBookieVia(t, st, mutate, false)
}

// startBookieVia is startBookie with a client that reaches the bookie in process (local)
// rather than over its socket.
func startBookieVia(t testing.TB, st storage.Storage, mutate func(*config.BookieConfig), local bool) *fixture {
	t.Helper()
	cfg := testConfig(t.TempDir())
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := Start(context.Background(), cfg, Options{Logger: logging.Discard(), Storage: st, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	opts := bookieproto.ClientOptions{RequestTimeout: 30 * time.Second}
	if local {
		opts.Local = map[string]bookieproto.Handler{b.Addr(): b.Local()}
	}
	c := bookieproto.NewClient(opts)
	t.Cleanup(func() {
		_ = c.Close()
		_ = b.Close()
	})
	return &fixture{b: b, st: st, client: c, addr: b.Addr()}
}

var key = []byte("master-key")

func payloadOf(ledger, entry int64, size int) []byte {
	p := make([]byte, size)
	for i := range p {
		p[i] = byte(int64(i)*31 + ledger*7 + entry)
	}
	return p
}

func (f *fixture) add(t *testing.T, ledger, entry, lac int64, payload []byte, recovery bool) error {
	t.Helper()
	ch := make(chan error, 1)
	f.client.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{
		LedgerID: ledger, EntryID: entry, MasterKey: key, LAC: lac, Payload: payload, Recovery: recovery,
	}, func(err error) { ch <- err })
	return <-ch
}

func mustAdd(t *testing.T, f *fixture, ledger, entry, lac int64, payload []byte) {
	t.Helper()
	if err := f.add(t, ledger, entry, lac, payload, false); err != nil {
		t.Fatalf("add %d/%d: %v", ledger, entry, err)
	}
}

// serverSuite runs the protocol scenarios against a server on the storage newStorage makes,
// through its socket or in process (local): both must give the same answers.
func serverSuite(t *testing.T, newStorage func(t *testing.T) storage.Storage) {
	for _, local := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "local"}[local], func(t *testing.T) {
			serverScenarios(t, newStorage, local)
		})
	}
}

func serverScenarios(t *testing.T, newStorage func(t *testing.T) storage.Storage, local bool) {
	ctx := context.Background()
	t.Run("AddReadRangeLAC", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		for e := int64(0); e < 10; e++ {
			mustAdd(t, f, 1, e, e-1, payloadOf(1, e, 100+int(e)))
		}
		got, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 3})
		if err != nil || !bytes.Equal(got.Payload, payloadOf(1, 3, 103)) || got.EntryID != 3 || got.LAC != 8 {
			t.Fatalf("read: %+v %v", got, err)
		}
		lac, err := f.client.ReadLAC(ctx, f.addr, 1, false, nil)
		if err != nil || lac != 8 {
			t.Fatalf("lac %d %v", lac, err)
		}
		es, err := f.client.ReadRange(ctx, f.addr, 1, 2, 20, 1<<20)
		if err != nil || len(es) != 8 {
			t.Fatalf("range: %d entries, %v", len(es), err)
		}
		for i, e := range es {
			if e.EntryID != int64(i+2) || !bytes.Equal(e.Payload, payloadOf(1, e.EntryID, 100+int(e.EntryID))) {
				t.Fatalf("range entry %d: %+v", i, e)
			}
		}
		// maxBytes stops the batch but never returns nothing for an existing first entry.
		if es, err := f.client.ReadRange(ctx, f.addr, 1, 0, 9, 250); err != nil || len(es) != 2 {
			t.Fatalf("budgeted range: %d entries, %v", len(es), err)
		}
		if es, err := f.client.ReadRange(ctx, f.addr, 1, 0, 9, 1); err != nil || len(es) != 1 {
			t.Fatalf("tiny budget: %d entries, %v", len(es), err)
		}
		if _, err := f.client.ReadRange(ctx, f.addr, 1, 10, 12, 1<<20); !errors.Is(err, bookieproto.ErrNoSuchEntry) {
			t.Fatalf("range past the end: %v", err)
		}
		if _, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 99}); !errors.Is(err, bookieproto.ErrNoSuchEntry) {
			t.Fatalf("missing entry: %v", err)
		}
		if _, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 77, EntryID: 0}); !errors.Is(err, bookieproto.ErrNoSuchLedger) && !errors.Is(err, bookieproto.ErrNoSuchEntry) {
			t.Fatalf("missing ledger: %v", err)
		}
	})

	t.Run("LongPollLAC", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		mustAdd(t, f, 2, 0, -1, []byte("a"))
		mustAdd(t, f, 2, 1, 0, []byte("b"))
		got := make(chan int64, 1)
		go func() {
			lac, err := f.client.WaitLAC(ctx, f.addr, 2, 0, time.Minute)
			if err != nil {
				t.Errorf("wait lac: %v", err)
			}
			got <- lac
		}()
		mustAdd(t, f, 2, 2, 1, []byte("c"))
		if lac := <-got; lac != 1 {
			t.Fatalf("long poll returned %d, want 1", lac)
		}
		// A poll that times out returns the current LAC.
		lac, err := f.client.WaitLAC(ctx, f.addr, 2, 5, 50*time.Millisecond)
		if err != nil || lac != 1 {
			t.Fatalf("timed-out poll: %d %v", lac, err)
		}
	})

	t.Run("FenceRecoveryDelete", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		mustAdd(t, f, 3, 0, -1, []byte("x"))
		mustAdd(t, f, 3, 1, 0, []byte("y"))
		lac, err := f.client.ReadLAC(ctx, f.addr, 3, true, key)
		if err != nil || lac != 0 {
			t.Fatalf("fence: %d %v", lac, err)
		}
		if err := f.add(t, 3, 2, 1, []byte("z"), false); !errors.Is(err, bookieproto.ErrFenced) {
			t.Fatalf("add after fence: %v", err)
		}
		if err := f.add(t, 3, 2, 1, []byte("z"), true); err != nil {
			t.Fatalf("recovery add after fence: %v", err)
		}
		// A fencing read fences a ledger the bookie never saw (BookKeeper #2614).
		if _, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 4, EntryID: 0, MasterKey: key, Fence: true}); !errors.Is(err, bookieproto.ErrNoSuchEntry) && !errors.Is(err, bookieproto.ErrNoSuchLedger) {
			t.Fatalf("fencing read of an unknown ledger: %v", err)
		}
		if err := f.add(t, 4, 0, -1, []byte("late"), false); !errors.Is(err, bookieproto.ErrFenced) {
			t.Fatalf("add after fencing read: %v", err)
		}
		if err := f.client.DeleteLedger(ctx, f.addr, 3); err != nil {
			t.Fatal(err)
		}
		if _, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 3, EntryID: 0}); !errors.Is(err, bookieproto.ErrNoSuchLedger) && !errors.Is(err, bookieproto.ErrNoSuchEntry) {
			t.Fatalf("read after delete: %v", err)
		}
		if err := f.client.DeleteLedger(ctx, f.addr, 3); err != nil {
			t.Fatalf("delete is idempotent: %v", err)
		}
	})

	t.Run("WrongMasterKey", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		mustAdd(t, f, 5, 0, -1, []byte("a"))
		ch := make(chan error, 1)
		f.client.AddEntry(ctx, f.addr, bookieproto.AddRequest{LedgerID: 5, EntryID: 1, MasterKey: []byte("other"), LAC: 0, Payload: []byte("b")}, func(err error) { ch <- err })
		if err := <-ch; !errors.Is(err, bookieproto.ErrUnauthorized) {
			t.Fatalf("wrong key add: %v", err)
		}
		if _, err := f.client.ReadLAC(ctx, f.addr, 5, true, []byte("other")); !errors.Is(err, bookieproto.ErrUnauthorized) {
			t.Fatalf("wrong key fence: %v", err)
		}
	})

	t.Run("PipelinedAddsCompleteInOrder", func(t *testing.T) {
		// Over the socket only: in process, the order of completions is the storage's, and
		// the memory twin answers inside AddEntry, which the client moves to goroutines.
		f := startBookie(t, newStorage(t), func(c *config.BookieConfig) { c.MaxInFlightRequestsPerConnection = 64 })
		const n = 3000
		var mu sync.Mutex
		next := int64(0)
		var wg sync.WaitGroup
		wg.Add(n)
		for e := int64(0); e < n; e++ {
			f.client.AddEntry(ctx, f.addr, bookieproto.AddRequest{LedgerID: 6, EntryID: e, MasterKey: key, LAC: e - 1, Payload: payloadOf(6, e, 50)}, func(err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("add %d: %v", e, err)
				}
				if e != next {
					t.Errorf("add %d completed when %d was expected", e, next)
				}
				next = e + 1
			})
		}
		wg.Wait()
		es, err := f.client.ReadRange(ctx, f.addr, 6, 0, n-1, 1<<22)
		if err != nil || len(es) != n {
			t.Fatalf("range after pipelined adds: %d %v", len(es), err)
		}
	})

	t.Run("MalformedFrameClosesOnlyThatConnection", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		mustAdd(t, f, 7, 0, -1, []byte("a"))
		for name, junk := range map[string][]byte{
			"bad version": {0, 0, 0, 12, 9, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
			"too large":   binary.BigEndian.AppendUint32(nil, 1<<30),
			"short body":  {0, 0, 0, 13, 1, byte(bookieproto.OpDelete), 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 7},
		} {
			raw, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Write(junk); err != nil {
				t.Fatal(err)
			}
			_ = raw.SetReadDeadline(time.Now().Add(30 * time.Second))
			if n, err := raw.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
				t.Fatalf("%s: connection not closed: %d %v", name, n, err)
			}
			_ = raw.Close()
			mustAdd(t, f, 7, 1, 0, []byte("b")) // the good client is undisturbed
			if _, err := f.client.ReadEntry(ctx, f.addr, bookieproto.ReadRequest{LedgerID: 7, EntryID: 0}); err != nil {
				t.Fatalf("%s: other client: %v", name, err)
			}
		}
	})

	t.Run("UnknownOpAnsweredNotClosed", func(t *testing.T) {
		f := startBookieVia(t, newStorage(t), nil, local)
		raw, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		frame := []byte{0, 0, 0, 20, 1, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0, 1}
		del := bookieproto.Request{Op: bookieproto.OpDelete, RequestID: 43, LedgerID: 1}
		if _, err := raw.Write(bookieproto.AppendRequest(frame, &del)); err != nil {
			t.Fatal(err)
		}
		_ = raw.SetReadDeadline(time.Now().Add(30 * time.Second))
		for _, want := range []struct {
			id uint64
			st bookieproto.Status
		}{{42, bookieproto.StatusBadRequest}, {43, bookieproto.StatusOK}} {
			fr, err := bookieproto.ReadFrame(raw, bookieproto.DefaultMaxFrameSize)
			if err != nil {
				t.Fatal(err)
			}
			// The unknown op's response cannot be decoded by op; check the header fields.
			id := binary.BigEndian.Uint64(fr[4:])
			st := bookieproto.Status(binary.BigEndian.Uint16(fr[12:]))
			if id != want.id || st != want.st {
				t.Fatalf("response id %d status %v, want %d %v", id, st, want.id, want.st)
			}
		}
	})
}

func TestServerOnMemory(t *testing.T) {
	serverSuite(t, func(*testing.T) storage.Storage { return storage.NewMemory() })
}

func TestServerOnDisk(t *testing.T) {
	serverSuite(t, func(t *testing.T) storage.Storage {
		cfg := testConfig(t.TempDir()).Storage
		st, err := storage.Open(cfg, logging.Discard(), prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	})
}

// gatedStorage holds add completions until released and checks the number of adds the
// server has handed it without an answer never exceeds limit.
type gatedStorage struct {
	*storage.Memory
	t     *testing.T
	limit int
	mu    sync.Mutex
	held  []func()
	open  bool
}

func (g *gatedStorage) AddEntry(l, e int64, mk []byte, lac int64, p []byte, rec bool, done func(error)) {
	g.Memory.AddEntry(l, e, mk, lac, p, rec, func(err error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.open {
			done(err)
			return
		}
		g.held = append(g.held, func() { done(err) })
		if len(g.held) > g.limit {
			g.t.Errorf("%d adds in flight on one connection, limit %d", len(g.held), g.limit)
		}
	})
}

func (g *gatedStorage) heldCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.held)
}

func (g *gatedStorage) release() {
	g.mu.Lock()
	held := g.held
	g.held, g.open = nil, true
	g.mu.Unlock()
	for _, d := range held {
		d()
	}
}

func TestBackpressureBoundsInFlight(t *testing.T) {
	const limit = 4
	g := &gatedStorage{Memory: storage.NewMemory(), t: t, limit: limit}
	f := startBookie(t, g, func(c *config.BookieConfig) { c.MaxInFlightRequestsPerConnection = limit })
	const n = 200
	var wg sync.WaitGroup
	wg.Add(n)
	for e := int64(0); e < n; e++ {
		f.client.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, EntryID: e, MasterKey: key, LAC: e - 1, Payload: []byte("p")}, func(err error) {
			if err != nil {
				t.Errorf("add %d: %v", e, err)
			}
			wg.Done()
		})
	}
	// The server reads until its budget is spent, then stops; nothing completes until release.
	for g.heldCount() < limit {
		time.Sleep(time.Millisecond)
	}
	g.release()
	wg.Wait()
}

func TestClientTimeoutAndDisconnect(t *testing.T) {
	g := &gatedStorage{Memory: storage.NewMemory(), t: t, limit: 1000}
	f := startBookie(t, g, nil)
	c := bookieproto.NewClient(bookieproto.ClientOptions{RequestTimeout: 100 * time.Millisecond})
	defer c.Close()
	ch := make(chan error, 1)
	c.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, EntryID: 0, MasterKey: key, LAC: -1}, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, bookieproto.ErrTimeout) {
		t.Fatalf("held add: %v, want timeout", err)
	}

	// A long poll pending when the bookie goes away fails with ErrUnavailable.
	g.release()
	mustAdd(t, f, 2, 0, 0, []byte("x"))
	errc := make(chan error, 1)
	go func() {
		_, err := f.client.WaitLAC(context.Background(), f.addr, 2, 5, time.Minute)
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the poll reach the server (either way the result is ErrUnavailable)
	_ = f.b.srv.Close()
	if err := <-errc; !errors.Is(err, bookieproto.ErrUnavailable) {
		t.Fatalf("poll across a server close: %v", err)
	}
	// Nothing listens now: calls fail cleanly instead of hanging.
	if _, err := f.client.ReadLAC(context.Background(), f.addr, 2, false, nil); !errors.Is(err, bookieproto.ErrUnavailable) {
		t.Fatalf("read from a closed bookie: %v", err)
	}
}

func TestClientReconnects(t *testing.T) {
	st := storage.NewMemory()
	f := startBookie(t, st, nil)
	mustAdd(t, f, 1, 0, -1, []byte("a"))
	addr := f.addr
	_ = f.b.Close()
	if _, err := f.client.ReadLAC(context.Background(), addr, 1, false, nil); !errors.Is(err, bookieproto.ErrUnavailable) {
		t.Fatalf("read while down: %v", err)
	}
	// Restart on the same address; the client dials again on its next call.
	cfg := testConfig(t.TempDir())
	cfg.ListenAddress = addr
	var b *Bookie
	var err error
	for i := 0; i < 100; i++ { // the port may take a moment to be free again
		if b, err = Start(context.Background(), cfg, Options{Storage: st}); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := f.client.ReadEntry(context.Background(), addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 0})
	if err != nil || string(got.Payload) != "a" {
		t.Fatalf("after reconnect: %q %v", got.Payload, err)
	}
}

func TestReadOnlyRejectsAdds(t *testing.T) {
	st := storage.NewMemory()
	f := startBookie(t, st, nil)
	mustAdd(t, f, 1, 0, -1, []byte("a"))
	st.SetReadOnly(true)
	if err := f.add(t, 1, 1, 0, []byte("b"), false); !errors.Is(err, bookieproto.ErrReadOnly) || !bookieproto.Retriable(err) {
		t.Fatalf("add on read-only: %v", err)
	}
	if _, err := f.client.ReadEntry(context.Background(), f.addr, bookieproto.ReadRequest{LedgerID: 1, EntryID: 0}); err != nil {
		t.Fatalf("read on read-only: %v", err)
	}
}

func TestOversizedAddRejectedByClient(t *testing.T) {
	f := startBookie(t, storage.NewMemory(), func(c *config.BookieConfig) { c.MaxFrameSizeBytes = 4096; c.MaxInFlightBytesPerConnection = 1 << 20 })
	c := bookieproto.NewClient(bookieproto.ClientOptions{MaxFrameSize: 4096})
	defer c.Close()
	ch := make(chan error, 1)
	c.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, MasterKey: key, LAC: -1, Payload: make([]byte, 5000)}, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, bookieproto.ErrBadRequest) {
		t.Fatalf("oversized add: %v", err)
	}
	// A client with a larger limit than the server gets its connection closed, and a new
	// connection works afterwards.
	big := bookieproto.NewClient(bookieproto.ClientOptions{})
	defer big.Close()
	big.AddEntry(context.Background(), f.addr, bookieproto.AddRequest{LedgerID: 1, MasterKey: key, LAC: -1, Payload: make([]byte, 5000)}, func(err error) { ch <- err })
	if err := <-ch; !errors.Is(err, bookieproto.ErrUnavailable) {
		t.Fatalf("add over the server's frame limit: %v", err)
	}
	mustAdd(t, f, 1, 0, -1, make([]byte, 1000))
}

func ExampleStart() {
	st := storage.NewMemory()
	cfg := testConfig("/unused")
	b, err := Start(context.Background(), cfg, Options{Storage: st})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	c := bookieproto.NewClient(bookieproto.ClientOptions{})
	defer c.Close()
	done := make(chan error, 1)
	c.AddEntry(context.Background(), b.Addr(), bookieproto.AddRequest{LedgerID: 1, EntryID: 0, MasterKey: []byte("k"), LAC: -1, Payload: []byte("hello")}, func(err error) { done <- err })
	fmt.Println(<-done)
	e, err := c.ReadEntry(context.Background(), b.Addr(), bookieproto.ReadRequest{LedgerID: 1, EntryID: 0})
	fmt.Println(string(e.Payload), err)
	// Output:
	// <nil>
	// hello <nil>
}
