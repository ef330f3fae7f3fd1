package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/admin"
	"github.com/magnetar-io/magnetar/internal/bookieproto"
	"github.com/magnetar-io/magnetar/internal/brokerd"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/logging"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// startEtcd runs an embedded etcd member on free ports for the test and returns its URL in
// the etcd:// form roles take, and a store connected to it.
func startEtcd(t *testing.T) (string, metadata.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := config.DefaultMetadataConfig()
	cfg.DataDir = t.TempDir()
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	cfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	m, err := etcdstore.StartEmbedded(ctx, cfg, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	store, err := m.Open(ctx, logging.Discard())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	url := "etcd://" + m.ClientURLs()[0][len("http://"):]
	return url, store
}

// startBookie runs `magnetar bookie` as a process registered in the metadata store at url,
// with auto-recovery on and short grace periods so the test sees it act.
func startBookie(t *testing.T, url string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "bookie", "--metadata-url", url, "--listen", addr,
		"--journal-dir", filepath.Join(dir, "journal"), "--ledger-dir", filepath.Join(dir, "ledgers"),
		"--metadata-store-session-timeout-millis", "2000",
		"--lost-bookie-recovery-delay", "1s", "--auditor-periodic-check-interval", "500ms",
		"--auditor-session-timeout", "2s", "--log-level", "warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, addr
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// ledgerEnsemble reads the ledger's metadata (JSON, internal/ledger/doc.go) and returns the
// union of its fragments' ensembles.
func ledgerEnsemble(t *testing.T, ctx context.Context, store metadata.Store, id int64) []string {
	t.Helper()
	kv, err := store.Get(ctx, fmt.Sprintf("/ledgers/%020d", id))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Fragments []struct {
			Ensemble []string `json:"ensemble"`
		} `json:"fragments"`
	}
	if err := json.Unmarshal(kv.Value, &md); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range md.Fragments {
		for _, b := range f.Ensemble {
			if !slices.Contains(out, b) {
				out = append(out, b)
			}
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached (last error: %v)", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAuditorInBookieProcessesRereplicatesLostBookie writes a ledger with E=2 Qw=2 Qa=2 over
// three `magnetar bookie` processes, SIGKILLs one bookie of its ensemble, waits for the
// auditor (elected among the surviving bookie processes) to copy its fragment to the third
// bookie, then SIGKILLs the other original bookie too: every entry must still be readable,
// which is only possible if the re-replicated copy exists.
func TestAuditorInBookieProcessesRereplicatesLostBookie(t *testing.T) {
	url, store := startEtcd(t)
	procs := map[string]*exec.Cmd{}
	for i := 0; i < 3; i++ {
		cmd, addr := startBookie(t, url)
		procs[addr] = cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitFor(t, "three bookies registered", func() (bool, error) {
		bs, err := ledger.ListBookies(ctx, store)
		return len(bs) == 3, err
	})
	kill := func(addr string) {
		p := procs[addr]
		if p == nil {
			t.Fatalf("no bookie process listens on %s", addr)
		}
		_ = p.Process.Signal(syscall.SIGKILL)
		_, _ = p.Process.Wait()
	}

	bkClient := bookieproto.NewClient(bookieproto.ClientOptions{})
	defer bkClient.Close()
	lc, err := ledger.NewClient(ctx, ledger.ClientOptions{Config: config.DefaultLedgerClientConfig(), Store: store, Bookies: bkClient})
	if err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	w, err := lc.Create(ctx, ledger.CreateOptions{EnsembleSize: 2, WriteQuorum: 2, AckQuorum: 2, Password: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	for i := 0; i < n; i++ {
		if _, err := w.Append(ctx, []byte(fmt.Sprintf("entry-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ensemble := ledgerEnsemble(t, ctx, store, w.ID())

	victim, survivor := ensemble[0], ensemble[1]
	kill(victim)
	waitFor(t, "auditor re-replicated the lost bookie's fragment", func() (bool, error) {
		e := ledgerEnsemble(t, ctx, store, w.ID())
		return !slices.Contains(e, victim) && len(e) == 2, nil
	})
	kill(survivor)

	r, err := lc.Open(ctx, w.ID(), ledger.OpenOptions{Password: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Read(ctx, 0, n-1)
	if err != nil {
		t.Fatalf("reading after losing both original bookies: %v", err)
	}
	for i, e := range entries {
		if string(e.Data) != fmt.Sprintf("entry-%d", i) {
			t.Fatalf("entry %d = %q", i, e.Data)
		}
	}
	if len(entries) != n {
		t.Fatalf("read %d entries, want %d", len(entries), n)
	}

	// With one bookie left the ledger (E=2) cannot be repaired: the admin CLI must list it as
	// under-replicated, missing the bookie just killed, and list the remaining bookie.
	srv := httptest.NewServer(admin.Handler(admin.Config{Resources: resources.New(store), Storage: brokerd.NewStorageView(store)}))
	defer srv.Close()
	adminCLI := func(args ...string) (string, error) {
		out, err := exec.Command(binary, append([]string{"admin", "--admin-url", srv.URL, "-o", "json"}, args...)...).CombinedOutput()
		return string(out), err
	}
	waitFor(t, "admin bookies under-replicated lists the ledger", func() (bool, error) {
		out, err := adminCLI("bookies", "under-replicated")
		return err == nil && strings.Contains(out, fmt.Sprintf(`"ledgerId": %d`, w.ID())) && strings.Contains(out, survivor), fmt.Errorf("%v: %s", err, out)
	})
	out, err := adminCLI("bookies", "list")
	if err != nil || strings.Count(out, `"writable"`) != 1 {
		t.Fatalf("admin bookies list: %v\n%s", err, out)
	}
}
