package realtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

const (
	envChild = "MLREAL_CHILD_ETCD" // set: run as the broker child against these etcd URLs
	mlName   = "public/default/persistent/crash"
	initial  = 40
)

func TestMain(m *testing.M) {
	if urls := os.Getenv(envChild); urls != "" {
		os.Exit(runChild(strings.Split(urls, ",")))
	}
	os.Exit(m.Run())
}

func mlConfig() config.ManagedLedgerConfig {
	cfg := config.DefaultManagedLedgerConfig()
	cfg.EnsembleSize, cfg.WriteQuorum, cfg.AckQuorum = 1, 1, 1
	cfg.MaxEntriesPerLedger = 7
	cfg.MinLedgerRolloverTimeMinutes = 0
	cfg.MarkDeleteRateLimit = 1000
	return cfg
}

// stack is a managed-ledger factory on the real ledger client.
type stack struct {
	store metadata.Store
	bk    bookieproto.Client
	lc    ledger.Client
	f     *managedledger.Factory
}

func newStack(ctx context.Context, store metadata.Store) (*stack, error) {
	s := &stack{store: store, bk: bookieproto.NewClient(bookieproto.ClientOptions{})}
	lc, err := ledger.NewClient(ctx, ledger.ClientOptions{Config: config.DefaultLedgerClientConfig(), Store: store, Bookies: s.bk})
	if err != nil {
		return nil, err
	}
	s.lc = lc
	s.f, err = managedledger.NewFactory(managedledger.FactoryOptions{Ledger: lc, Store: store, Config: mlConfig()})
	return s, err
}

func (s *stack) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.f.Close(ctx)
	_ = s.lc.Close()
	_ = s.bk.Close()
}

// runChild is the broker process: it writes initial entries, acknowledges some out of
// order, flushes the cursor, reports its state on stdout, then keeps adding and reports
// each acknowledged position until it is killed.
func runChild(etcd []string) int {
	fail := func(what string, err error) int {
		fmt.Fprintln(os.Stderr, "child:", what+":", err)
		return 1
	}
	ctx := context.Background()
	store, err := etcdstore.Open(ctx, etcdstore.DefaultOptions(etcd...), slog.New(slog.DiscardHandler))
	if err != nil {
		return fail("metadata", err)
	}
	s, err := newStack(ctx, store)
	if err != nil {
		return fail("stack", err)
	}
	ml, err := s.f.Open(ctx, mlName, s.f.DefaultConfig())
	if err != nil {
		return fail("open", err)
	}
	c, err := ml.OpenCursor(ctx, "sub", managedledger.InitialPositionEarliest)
	if err != nil {
		return fail("cursor", err)
	}
	var ps []managedledger.Position
	for i := 0; i < initial; i++ {
		p, err := ml.Add(ctx, []byte(fmt.Sprintf("e-%d", i)))
		if err != nil {
			return fail("add", err)
		}
		ps = append(ps, p)
	}
	if err := c.MarkDelete(ps[4]); err != nil {
		return fail("mark-delete", err)
	}
	if err := c.Delete(ps[9], ps[8], ps[31], ps[15], ps[30], ps[39], ps[16]); err != nil {
		return fail("delete", err)
	}
	if err := c.Flush(ctx); err != nil {
		return fail("flush", err)
	}
	fmt.Printf("STATE %s %s\n", c.MarkDeletePosition(), formatSpans(c.IndividuallyDeletedRanges()))
	for i := 0; ; i++ {
		p, err := ml.Add(ctx, []byte(fmt.Sprintf("late-%d", i)))
		if err != nil {
			return fail("late add", err)
		}
		fmt.Printf("ACK %s late-%d\n", p, i)
	}
}

func formatSpans(ss []managedledger.Span) string {
	var parts []string
	for _, s := range ss {
		parts = append(parts, fmt.Sprintf("%d:%d-%d", s.LedgerID, s.First, s.Last))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestRecoveryAfterSIGKILLWithRealBookieAndEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("real bookie and etcd: not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, etcdURLs := startCluster(ctx, t)

	// The broker child: run until it has acknowledged some late adds, then SIGKILL it.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+strings.Join(etcdURLs, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	sc := bufio.NewScanner(out)
	var state string
	acked := map[string]string{} // position -> data
	var ackOrder []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "STATE "):
			state = strings.TrimPrefix(line, "STATE ")
		case strings.HasPrefix(line, "ACK "):
			f := strings.Fields(line)
			acked[f[1]] = f[2]
			ackOrder = append(ackOrder, f[2])
		}
		if len(ackOrder) >= 25 {
			break
		}
	}
	if state == "" || len(ackOrder) < 25 {
		t.Fatalf("child ended early (state %q, %d acks): %v", state, len(ackOrder), sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no clean shutdown of anything
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true

	// A new broker recovers: ledger list, every acknowledged add, and the cursor as flushed.
	s, err := newStack(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	ml, err := s.f.Open(ctx, mlName, s.f.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := ml.Cursor("sub")
	if !ok {
		t.Fatal("cursor lost")
	}
	if got := fmt.Sprintf("%s %s", c.MarkDeletePosition(), formatSpans(c.IndividuallyDeletedRanges())); got != state {
		t.Fatalf("recovered cursor %q, want %q", got, state)
	}
	r, err := ml.NewNonDurableCursor(managedledger.Earliest, false)
	if err != nil {
		t.Fatal(err)
	}
	var all []managedledger.Entry
	for {
		es, err := r.ReadEntries(ctx, 100, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			break
		}
		all = append(all, es...)
	}
	for i := 0; i < initial; i++ {
		if string(all[i].Data) != fmt.Sprintf("e-%d", i) {
			t.Fatalf("entry %d = %q", i, all[i].Data)
		}
	}
	// Every acknowledged late add survived, at its position, in order; an add in flight at
	// the kill may also have made it, but nothing else.
	stored := map[string]string{}
	for _, e := range all[initial:] {
		stored[e.Position.String()] = string(e.Data)
	}
	for pos, data := range acked {
		if stored[pos] != data {
			t.Fatalf("acknowledged %s at %s lost after SIGKILL (found %q)", data, pos, stored[pos])
		}
	}
	if extra := len(all) - initial - len(acked); extra < 0 || extra > 2 {
		t.Fatalf("%d late entries stored, %d acknowledged", len(all)-initial, len(acked))
	}
	// The new owner writes after the recovered log, and the cursor still redelivers what
	// the old owner never acknowledged.
	p, err := ml.Add(ctx, []byte("after"))
	if err != nil {
		t.Fatal(err)
	}
	if !all[len(all)-1].Position.Less(p) {
		t.Fatalf("new add at %v not after %v", p, all[len(all)-1].Position)
	}
	es, err := c.ReadEntries(ctx, 1, 0)
	if err != nil || len(es) != 1 || string(es[0].Data) != "e-5" {
		t.Fatalf("first redelivery %v %v", es, err)
	}
}

// startCluster starts an embedded etcd member and one bookie (disk storage, TCP) registered
// in it, all stopped when the test ends.
func startCluster(ctx context.Context, t testing.TB) (metadata.Store, []string) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)

	mcfg := config.DefaultMetadataConfig()
	mcfg.DataDir = filepath.Join(t.TempDir(), "etcd")
	mcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	mcfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	mcfg.HeartbeatInterval = 20 * time.Millisecond
	mcfg.ElectionTimeout = 200 * time.Millisecond
	etcd, err := etcdstore.StartEmbedded(ctx, mcfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { etcd.Close() })
	store, err := etcd.Open(ctx, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })

	dir := t.TempDir()
	bcfg := config.DefaultBookieConfig()
	bcfg.ListenAddress = "127.0.0.1:0"
	bcfg.MetadataSessionTimeoutMillis = 2000
	bcfg.ShutdownTimeout = time.Second
	bcfg.Storage.JournalDirectories = []string{filepath.Join(dir, "journal")}
	bcfg.Storage.LedgerDirectories = []string{filepath.Join(dir, "ledgers")}
	bk, err := bookie.Start(ctx, bcfg, bookie.Options{Logger: quiet, Registerer: prometheus.NewRegistry(), Metadata: store,
		OpenStorage: func(cfg config.BookieStorageConfig, l *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
			return storage.Open(cfg, l, reg)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bk.Close() })
	for {
		if _, err := store.Get(ctx, resources.BookieRegistrationsPrefix+bk.AdvertisedAddr()); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("bookie never registered")
		}
		time.Sleep(10 * time.Millisecond)
	}

	return store, etcd.ClientURLs()
}

func TestFencingAndTrimWithRealBookie(t *testing.T) {
	if testing.Short() {
		t.Skip("real bookie and etcd: not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, _ := startCluster(ctx, t)
	s1, err := newStack(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.close()
	ml1, err := s1.f.Open(ctx, "public/default/persistent/fence", s1.f.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ml1.OpenCursor(ctx, "sub", managedledger.InitialPositionEarliest)
	if err != nil {
		t.Fatal(err)
	}
	var ps []managedledger.Position
	for i := 0; i < 20; i++ {
		p, err := ml1.Add(ctx, []byte(fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	// Trim: ledgers entirely consumed are deleted on the bookies too.
	first := ps[0].LedgerID
	if err := c.MarkDelete(ps[15]); err != nil {
		t.Fatal(err)
	}
	if err := ml1.Retention().Trim(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.lc.Open(ctx, first, ledger.OpenOptions{}); err == nil {
		t.Fatalf("trimmed ledger %d still opens", first)
	}
	if got := ml1.FirstPosition(); got.LedgerID <= first {
		t.Fatalf("first position %v after trim", got)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// A second broker takes over: the first one's adds now fail as fenced.
	s2, err := newStack(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	ml2, err := s2.f.Open(ctx, "public/default/persistent/fence", s2.f.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ml1.Add(ctx, []byte("late")); !errors.Is(err, managedledger.ErrFenced) || !errors.Is(err, ledger.ErrFenced) {
		t.Fatalf("old owner's add after takeover: %v, want fenced", err)
	}
	p, err := ml2.Add(ctx, []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	if !ps[19].Less(p) {
		t.Fatalf("new owner's add at %v", p)
	}
	c2, _ := ml2.Cursor("sub")
	es, err := c2.ReadEntries(ctx, 10, 0)
	if err != nil || len(es) != 5 || string(es[0].Data) != "16" || string(es[4].Data) != "new" {
		t.Fatalf("new owner's cursor read %v %v", es, err)
	}
}
