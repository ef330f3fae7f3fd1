package bookie

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/perf"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// crashBookieFlags make a crash test exercise more than the journal: a small write cache
// and a short flush interval put kills in the middle of flushes and checkpoints too.
var crashBookieFlags = []string{"--flush-interval", "50ms", "--db-storage-write-cache-max-size-mb", "4"}

// ackedLog records every acknowledged entry's payload.
type ackedLog struct {
	mu      sync.Mutex
	entries map[int64]map[int64][]byte // ledger -> entry -> payload
}

func (a *ackedLog) record(ledger, entry int64, p []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.entries == nil {
		a.entries = map[int64]map[int64][]byte{}
	}
	if a.entries[ledger] == nil {
		a.entries[ledger] = map[int64][]byte{}
	}
	a.entries[ledger][entry] = p
}

func (a *ackedLog) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, es := range a.entries {
		n += len(es)
	}
	return n
}

// verify reads every acknowledged entry back from addr and compares it byte for byte.
func (a *ackedLog) verify(t *testing.T, c bookieproto.Client, addr string) {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx := waitCtx(t)
	for ledger, es := range a.entries {
		ids := make([]int64, 0, len(es))
		for id := range es {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		// Range reads cover the acknowledged ids in batches; each batch continues where the
		// previous one stopped (at the size budget).
		next := 0
		for next < len(ids) {
			got, err := c.ReadRange(ctx, addr, ledger, ids[next], ids[len(ids)-1], 4<<20)
			if err != nil {
				t.Fatalf("ledger %d entry %d acknowledged but unreadable: %v", ledger, ids[next], err)
			}
			if len(got) == 0 {
				t.Fatalf("ledger %d: empty range from entry %d", ledger, ids[next])
			}
			seen := make(map[int64]bool, len(got))
			for _, e := range got {
				seen[e.EntryID] = true
				if want, ok := es[e.EntryID]; ok && !bytes.Equal(e.Payload, want) {
					t.Fatalf("ledger %d entry %d: %d bytes differ from the %d acknowledged", ledger, e.EntryID, len(e.Payload), len(want))
				}
			}
			// Every acknowledged id the range spans must be in it: a range never skips.
			last := got[len(got)-1].EntryID
			for ; next < len(ids) && ids[next] <= last; next++ {
				if !seen[ids[next]] {
					t.Fatalf("ledger %d entry %d acknowledged but missing from a range up to %d", ledger, ids[next], last)
				}
			}
		}
	}
}

// addUntilKilled adds entries of random size to ledger with inFlight outstanding until the
// client fails (the process died); acknowledged ones go into log. It returns once every
// add has completed.
func addUntilKilled(c bookieproto.Client, addr string, ledger int64, inFlight int, rng *rand.Rand, log *ackedLog) {
	sem := make(chan struct{}, inFlight)
	var failed sync.Once
	stop := make(chan struct{})
	var lac struct {
		sync.Mutex
		v int64
	}
	lac.v = -1
	for entry := int64(0); ; entry++ {
		select {
		case <-stop:
		case sem <- struct{}{}:
			p := make([]byte, 1+rng.IntN(16<<10))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			lac.Lock()
			cur := lac.v
			lac.Unlock()
			c.AddEntry(context.Background(), addr, bookieproto.AddRequest{LedgerID: ledger, EntryID: entry, MasterKey: key, LAC: cur, Payload: p}, func(err error) {
				if err == nil {
					log.record(ledger, entry, p)
					lac.Lock()
					lac.v = max(lac.v, entry)
					lac.Unlock()
				} else {
					failed.Do(func() { close(stop) })
				}
				<-sem
			})
			continue
		}
		break
	}
	for i := 0; i < inFlight; i++ {
		sem <- struct{}{}
	}
}

// crashLoop SIGKILLs a real bookie process at random points while adds are in flight,
// restarts it on the same directories, and checks every acknowledged entry is still there,
// byte for byte. Each iteration writes a new ledger; all earlier ledgers are checked again.
func crashLoop(t *testing.T, iterations int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	log := &ackedLog{}
	for i := 0; i < iterations; i++ {
		p := startBookieProcess(t, dir, crashBookieFlags...)
		c := bookieproto.NewClient(bookieproto.ClientOptions{RequestTimeout: 60 * time.Second})
		log.verify(t, c, p.addr)
		before := log.count()
		done := make(chan struct{})
		inFlight, wrng := 1+rng.IntN(128), rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
		go func() {
			defer close(done)
			addUntilKilled(c, p.addr, int64(i+1), inFlight, wrng, log)
		}()
		// Kill at a random moment after the first acknowledgement of this iteration, so
		// there is always something to lose.
		for log.count() == before {
			select {
			case <-done:
				t.Fatalf("iteration %d: adds stopped before any was acknowledged\n%s", i, p.logs())
			case <-time.After(time.Millisecond):
			}
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		p.kill()
		<-done
		_ = c.Close()
		t.Logf("iteration %d: %d entries acknowledged so far", i, log.count())
	}
	// A last start verifies the final iteration, and a clean stop exits 0.
	p := startBookieProcess(t, dir, crashBookieFlags...)
	c := bookieproto.NewClient(bookieproto.ClientOptions{RequestTimeout: 60 * time.Second})
	defer c.Close()
	log.verify(t, c, p.addr)
	if err := p.stop(t); err != nil {
		t.Fatalf("clean stop: %v\n%s", err, p.logs())
	}
}

func TestCrashLoopSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real bookie processes; see the soak tag for the long version")
	}
	crashLoop(t, 8)
}

// TestProcessCleanShutdownAndFencingSurvive checks SIGTERM gives a clean exit after
// acknowledging in-flight adds, and that fencing is durable across the restart.
func TestProcessCleanShutdownAndFencingSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real bookie processes")
	}
	dir := t.TempDir()
	p := startBookieProcess(t, dir, "--metrics-listen", "127.0.0.1:0")
	c := bookieproto.NewClient(bookieproto.ClientOptions{RequestTimeout: 60 * time.Second})
	defer c.Close()
	ctx := waitCtx(t)
	f := &fixture{client: c, addr: p.addr}
	for e := int64(0); e < 20; e++ {
		mustAdd(t, f, 9, e, e-1, payloadOf(9, e, 300))
	}
	got, err := perf.ScrapeSum(ctx, "http://"+p.metricsAddr+"/metrics", "bookie_server_requests_total", "bookie_journal_force_write_grouping_count_sum")
	if err != nil {
		t.Fatal(err)
	}
	if got["bookie_server_requests_total"] != 20 || got["bookie_journal_force_write_grouping_count_sum"] < 20 {
		t.Fatalf("metrics after 20 adds: %v", got)
	}
	// BookKeeper's health endpoints beside /metrics (no metadata store: ready once serving).
	for _, path := range []string{"/heartbeat", "/api/v1/bookie/is_ready"} {
		resp, err := http.Get("http://" + p.metricsAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	if _, err := c.ReadLAC(ctx, p.addr, 9, true, key); err != nil {
		t.Fatal(err)
	}
	if err := p.stop(t); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.logs())
	}
	p = startBookieProcess(t, dir)
	f.addr = p.addr
	if err := f.add(t, 9, 20, 19, []byte("late"), false); !errors.Is(err, bookieproto.ErrFenced) {
		t.Fatalf("add after restart of a fenced ledger: %v", err)
	}
	e, err := c.ReadEntry(ctx, p.addr, bookieproto.ReadRequest{LedgerID: 9, EntryID: 19})
	if err != nil || !bytes.Equal(e.Payload, payloadOf(9, 19, 300)) {
		t.Fatalf("entry after restart: %v", err)
	}
}

// TestProcessRegistersInEtcd runs a real bookie against an embedded etcd member: it
// registers, a SIGKILL makes the key expire with the session, a restart registers again,
// and SIGTERM deregisters at once.
func TestProcessRegistersInEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real bookie processes")
	}
	mcfg := config.DefaultMetadataConfig()
	mcfg.DataDir = filepath.Join(t.TempDir(), "etcd")
	mcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	mcfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	mcfg.HeartbeatInterval = 20 * time.Millisecond
	mcfg.ElectionTimeout = 200 * time.Millisecond
	ctx := waitCtx(t)
	m, err := etcdstore.StartEmbedded(ctx, mcfg, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	md, err := m.Open(ctx, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	defer md.Close()
	url := "etcd://" + strings.TrimPrefix(m.ClientURLs()[0], "http://")
	dir := t.TempDir()
	flags := []string{"--metadata-url", url, "--metadata-store-session-timeout-millis", "1000"}

	p := startBookieProcess(t, dir, flags...)
	regKey := resources.BookieRegistrationsPrefix + p.addr
	waitFor(t, "registration", func() bool {
		r, _, ok := registration(t, md, regKey)
		return ok && r.State == resources.BookieWritable && r.Address == p.addr
	})
	p.kill()
	waitFor(t, "the killed bookie's key to expire", func() bool {
		_, _, ok := registration(t, md, regKey)
		return !ok
	})

	p = startBookieProcess(t, dir, flags...)
	regKey = resources.BookieRegistrationsPrefix + p.addr
	waitFor(t, "registration after restart", func() bool {
		_, _, ok := registration(t, md, regKey)
		return ok
	})
	if err := p.stop(t); err != nil {
		t.Fatalf("SIGTERM exit: %v\n%s", err, p.logs())
	}
	if _, _, ok := registration(t, md, regKey); ok {
		t.Fatal("clean shutdown left the registration behind")
	}
}
