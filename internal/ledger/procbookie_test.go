package ledger

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/testbin"
)

// Bookie processes for tests: the test binary re-executes itself with LEDGER_TEST_BOOKIE_DIR
// set and then runs one real bookie (disk storage, TCP, registration in etcd) until it is
// SIGKILLed or its stdin closes (the parent test process went away).
const (
	envBookieDir  = "LEDGER_TEST_BOOKIE_DIR"
	envEtcdURLs   = "LEDGER_TEST_ETCD"
	bookieAddrTag = "BOOKIE-ADDR "
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envBookieDir); dir != "" {
		os.Exit(runBookieProcess(dir, strings.Split(os.Getenv(envEtcdURLs), ",")))
	}
	os.Exit(m.Run())
}

func bookieConfig(dir string) config.BookieConfig {
	cfg := config.DefaultBookieConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	cfg.MetadataSessionTimeoutMillis = 2000
	cfg.ShutdownTimeout = time.Second
	cfg.Storage.JournalDirectories = []string{filepath.Join(dir, "journal")}
	cfg.Storage.LedgerDirectories = []string{filepath.Join(dir, "ledgers")}
	return cfg
}

func openDiskStorage(cfg config.BookieStorageConfig, logger *slog.Logger, reg prometheus.Registerer) (storage.Storage, error) {
	return storage.Open(cfg, logger, reg)
}

func runBookieProcess(dir string, etcd []string) int {
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("LEDGER_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	ctx := context.Background()
	store, err := etcdstore.Open(ctx, etcdstore.DefaultOptions(etcd...), logger)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bookie process: metadata:", err)
		return 1
	}
	b, err := bookie.Start(ctx, bookieConfig(dir), bookie.Options{Logger: logger, Registerer: prometheus.NewRegistry(),
		Metadata: store, OpenStorage: openDiskStorage})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bookie process: start:", err)
		return 1
	}
	fmt.Fprintln(os.Stdout, bookieAddrTag+b.AdvertisedAddr())
	_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes the pipe or exits
	_ = b.Close()
	_ = store.Close()
	return 0
}

// procCluster runs bookie processes registered in an etcd member embedded in the test.
type procCluster struct {
	t     testing.TB
	etcd  *etcdstore.Embedded
	store *etcdstore.Store
	probe bookieproto.Client

	bin string // when set, bookies are `bin bookie` processes instead of this test binary

	mu     sync.Mutex
	procs  map[string]*bookieProc
	killed []string
}

type bookieProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

func newProcCluster(t testing.TB, n int) (*procCluster, []string) {
	return newProcClusterWith(t, n, "")
}

func newProcClusterWith(t testing.TB, n int, bin string) (*procCluster, []string) {
	t.Helper()
	mcfg := config.DefaultMetadataConfig()
	mcfg.DataDir = filepath.Join(t.TempDir(), "etcd")
	mcfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	mcfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	mcfg.HeartbeatInterval = 20 * time.Millisecond
	mcfg.ElectionTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	m, err := etcdstore.StartEmbedded(ctx, mcfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	store, err := m.Open(ctx, quiet)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	pc := &procCluster{t: t, etcd: m, store: store, probe: bookieproto.NewClient(bookieproto.ClientOptions{}), procs: map[string]*bookieProc{}, bin: bin}
	t.Cleanup(func() {
		pc.mu.Lock()
		for _, p := range pc.procs {
			p.stdin.Close()
			if pc.bin != "" {
				_ = p.cmd.Process.Signal(os.Interrupt)
			}
			_ = p.cmd.Wait()
		}
		pc.mu.Unlock()
		pc.probe.Close()
		store.Close()
		m.Close()
	})
	var addrs []string
	for range n {
		addrs = append(addrs, pc.start())
	}
	return pc, addrs
}

func (pc *procCluster) start() string {
	if pc.bin != "" {
		return pc.startBinary()
	}
	t := pc.t
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envBookieDir+"="+t.TempDir(), envEtcdURLs+"="+strings.Join(pc.etcd.ClientURLs(), ","))
	cmd.Stderr = os.Stderr
	setParentDeathSignal(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrCh := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), bookieAddrTag); ok {
				addrCh <- a
			}
		}
		close(addrCh)
	}()
	var addr string
	select {
	case a, ok := <-addrCh:
		if !ok {
			t.Fatal("bookie process exited before listening")
		}
		addr = a
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("bookie process did not start")
	}
	pc.mu.Lock()
	pc.procs[addr] = &bookieProc{cmd: cmd, stdin: stdin}
	pc.mu.Unlock()
	waitFor(t, func() bool {
		_, err := pc.store.Get(context.Background(), resources.BookieRegistrationsPrefix+addr)
		return err == nil
	})
	return addr
}

// startBinary runs `magnetar bookie` on a free port and learns its address from the
// registration that appears.
func (pc *procCluster) startBinary() string {
	t := pc.t
	t.Helper()
	ctx := context.Background()
	before := map[string]bool{}
	kvs, err := pc.store.List(ctx, resources.BookieRegistrationsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range kvs {
		before[kv.Key] = true
	}
	dir := t.TempDir()
	var hosts []string
	for _, u := range pc.etcd.ClientURLs() {
		hosts = append(hosts, strings.TrimPrefix(u, "http://"))
	}
	cmd := exec.Command(pc.bin, "bookie", "--listen", "127.0.0.1:0", "--metadata-url", "etcd://"+strings.Join(hosts, ","),
		"--journal-directories", filepath.Join(dir, "journal"), "--ledger-directories", filepath.Join(dir, "ledgers"),
		"--metadata-store-session-timeout-millis", "2000", "--shutdown-timeout", "1s", "--log-level", "warn",
		// The test runs its own auditor with short grace periods; a bookie-process candidate
		// with the 30 s default must not win the election.
		"--auto-recovery-daemon-enabled=false")
	cmd.Stderr = os.Stderr
	setParentDeathSignal(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var addr string
	waitFor(t, func() bool {
		kvs, err := pc.store.List(ctx, resources.BookieRegistrationsPrefix)
		if err != nil {
			return false
		}
		for _, kv := range kvs {
			if !before[kv.Key] {
				addr = strings.TrimPrefix(kv.Key, resources.BookieRegistrationsPrefix)
				return true
			}
		}
		return false
	})
	pc.mu.Lock()
	pc.procs[addr] = &bookieProc{cmd: cmd, stdin: stdin}
	pc.mu.Unlock()
	return addr
}

func (pc *procCluster) metaStore() metadata.Store { return pc.store }

func (pc *procCluster) newBookieClient() bookieproto.Client {
	c := bookieproto.NewClient(bookieproto.ClientOptions{})
	pc.t.Cleanup(func() { c.Close() })
	return c
}

// kill SIGKILLs the bookie process; its registration vanishes when its etcd lease expires.
func (pc *procCluster) kill(addr string) {
	pc.mu.Lock()
	p := pc.procs[addr]
	delete(pc.procs, addr)
	pc.killed = append(pc.killed, addr)
	pc.mu.Unlock()
	if p == nil {
		pc.t.Fatalf("no bookie process %s", addr)
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.stdin.Close()
}

func (pc *procCluster) hasEntry(addr string, ledgerID, entryID int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pc.probe.ReadEntry(ctx, addr, bookieproto.ReadRequest{LedgerID: ledgerID, EntryID: entryID})
	return err == nil
}

// The scenario tests on bookie processes that are SIGKILLed, with etcd as metadata store.
func TestBookieProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("bookie processes: not in -short")
	}
	runProcessScenarios(t, newProcCluster)
}

// TestMagnetarBookieProcesses runs the same scenarios on `magnetar bookie` processes built
// from ./cmd/magnetar, so the role's wiring (flags, storage, etcd registration) is covered.
func TestMagnetarBookieProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("magnetar processes: not in -short")
	}
	bin, err := testbin.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	runProcessScenarios(t, func(t testing.TB, n int) (*procCluster, []string) { return newProcClusterWith(t, n, bin) })
}

func runProcessScenarios(t *testing.T, newCluster func(testing.TB, int) (*procCluster, []string)) {
	pc, _ := newCluster(t, 5)
	// One cluster for all scenarios (etcd and process start-up dominate otherwise); each
	// scenario's kill takes one bookie away, so start a fresh one after it.
	for _, sc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"KillBookieMidStream", func(t *testing.T) { testKillBookieMidStream(t, pc) }},
		{"SecondWriterRecovers", func(t *testing.T) { testSecondWriterRecoversAndFencesFirst(t, pc) }},
		{"RecoveryAcrossEnsembleChange", func(t *testing.T) { testRecoveryAcrossEnsembleChange(t, pc) }},
		{"AuditorReplicatesLostBookie", func(t *testing.T) { testAuditorReplicatesLostBookie(t, pc) }},
	} {
		t.Run(sc.name, sc.run)
		pc.mu.Lock()
		n, killed := len(pc.procs), pc.killed
		pc.mu.Unlock()
		for ; n < 5; n++ {
			pc.start()
		}
		// The next scenario must not place ledgers on a dead bookie whose lease has not
		// expired yet (that is a different scenario).
		for _, addr := range killed {
			waitFor(t, func() bool {
				_, err := pc.store.Get(context.Background(), resources.BookieRegistrationsPrefix+addr)
				return err != nil
			})
		}
	}
}
