package perf

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie"
	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	"github.com/magnetar-io/magnetar/internal/config"
)

func TestRunBookieAgainstMemoryBookie(t *testing.T) {
	cfg := config.DefaultBookieConfig()
	cfg.ListenAddress = "127.0.0.1:0"
	b, err := bookie.Start(context.Background(), cfg, bookie.Options{Storage: storage.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := RunBookie(context.Background(), BookieOptions{Addr: b.Addr(), InFlight: 8, EntrySize: 100, Duration: 200 * time.Millisecond, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.Adds == 0 || r.Errors != 0 || r.P50 <= 0 || r.P99 < r.P50 {
		t.Fatalf("implausible result %+v", r)
	}
}

func TestRunBookieUnreachable(t *testing.T) {
	_, err := RunBookie(context.Background(), BookieOptions{Addr: "127.0.0.1:1", InFlight: 2, EntrySize: 10, Duration: 50 * time.Millisecond, Timeout: time.Second})
	if err == nil {
		t.Fatal("want an error when every add fails")
	}
}

func TestProbeSync(t *testing.T) {
	r, err := ProbeSync(t.TempDir(), 4096, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if r.Syncs == 0 || r.SyncsPerSec <= 0 {
		t.Fatalf("implausible probe %+v", r)
	}
}

func TestScrapeSum(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "# HELP x y\nfoo_sum 12.5\nfoo_count{a=\"b c\"} 3\nfoo_count{a=\"d\"} 2\nfoo_total 9\n")
	}))
	defer srv.Close()
	got, err := ScrapeSum(context.Background(), srv.URL, "foo_sum", "foo_count", "absent")
	if err != nil {
		t.Fatal(err)
	}
	if got["foo_sum"] != 12.5 || got["foo_count"] != 5 || got["absent"] != 0 {
		t.Fatalf("got %v", got)
	}
}
