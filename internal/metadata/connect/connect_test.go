package connect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/etcdstore"
)

func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"etcd://h1:2379,h2:2379", []string{"http://h1:2379", "http://h2:2379"}},
		{"etcd://10.0.0.1", []string{"http://10.0.0.1:2379"}},
		{"etcd://[::1]:3000,[fe80::1]", []string{"http://[::1]:3000", "http://[fe80::1]:2379"}},
		{"etcd://h:1/", []string{"http://h:1"}},
	} {
		got, err := ParseURL(tc.in)
		if err != nil || got.Scheme != "etcd" || !slices.Equal(got.Endpoints, tc.want) || !slices.Equal(got.Etcd.Endpoints, tc.want) {
			t.Errorf("ParseURL(%q) = %+v, %v; want endpoints %v", tc.in, got, err, tc.want)
		}
	}
	got, err := ParseURL("etcd://h:1?dialTimeout=2s&maxWatchBacklog=10")
	if err != nil || got.Etcd.DialTimeout != 2*time.Second || got.Etcd.MaxWatchBacklog != 10 {
		t.Errorf("options: %+v %v", got.Etcd, err)
	}
	if got, err := ParseURL("memory://unit-test_1"); err != nil || got.Name != "unit-test_1" {
		t.Errorf("memory: %+v %v", got, err)
	}
	for _, bad := range []string{"", "h1:2379", "zk://h:2181", "etcd://", "etcd://h:0", "etcd://h:99999", "etcd://h1:2379,,h2",
		"etcd://h:1/path", "etcd://u@h:1", "etcd://h:1?bogus=1", "etcd://h:1?dialTimeout=-1s", "memory://", "memory://a/b", "etcd://:2379", "etcd://a:b:c"} {
		if _, err := ParseURL(bad); !errors.Is(err, ErrBadURL) {
			t.Errorf("ParseURL(%q) err = %v, want ErrBadURL", bad, err)
		}
	}
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{"etcd://h1:2379,h2:2379", "etcd://[::1]", "memory://x", "etcd://h?dialTimeout=1s", "etcd://%", "etcd://[", "memory://../"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tg, err := ParseURL(s)
		if err != nil {
			if !errors.Is(err, ErrBadURL) {
				t.Fatalf("ParseURL(%q) error not ErrBadURL: %v", s, err)
			}
			return
		}
		switch tg.Scheme {
		case "etcd":
			if len(tg.Endpoints) == 0 || len(tg.Endpoints) > maxEndpoints {
				t.Fatalf("ParseURL(%q) endpoints %v", s, tg.Endpoints)
			}
			for _, e := range tg.Endpoints {
				if config.CheckMemberURL(e) != nil {
					t.Fatalf("ParseURL(%q) produced bad endpoint %q", s, e)
				}
			}
		case "memory":
			if tg.Name == "" || strings.ContainsAny(tg.Name, "/?#") {
				t.Fatalf("ParseURL(%q) name %q", s, tg.Name)
			}
		default:
			t.Fatalf("ParseURL(%q) scheme %q", s, tg.Scheme)
		}
	})
}

func TestOpenMemoryShared(t *testing.T) {
	ctx := context.Background()
	// Unique per run: memory stores live as long as the process (go test -count=N).
	name := fmt.Sprintf("memory://shared-%d", time.Now().UnixNano())
	a, err := Open(ctx, name, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, name, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "/k", []byte("v"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	if kv, err := b.Get(ctx, "/k"); err != nil || string(kv.Value) != "v" {
		t.Fatalf("other handle: %v %v", kv, err)
	}
	other, _ := Open(ctx, name+"-other", slog.Default())
	if _, err := other.Get(ctx, "/k"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("different name shares data: %v", err)
	}
}

func TestOpenEtcd(t *testing.T) {
	cfg := config.DefaultMetadataConfig()
	cfg.DataDir = filepath.Join(t.TempDir(), "etcd")
	cfg.ListenClientURLs = []string{"http://127.0.0.1:0"}
	cfg.ListenPeerURLs = []string{"http://127.0.0.1:0"}
	ctx := context.Background()
	m, err := etcdstore.StartEmbedded(ctx, cfg, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	url := "etcd://" + strings.TrimPrefix(m.ClientURLs()[0], "http://")
	s, err := Open(ctx, url, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Put(ctx, "/k", []byte("v"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, "etcd://127.0.0.1:1?dialTimeout=300ms", slog.Default()); err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
}

// TestOpenFailureIsANilStore: a store that does not answer gives a nil interface, not a typed
// nil pointer that a caller's `if store != nil { store.Close() }` would call into.
func TestOpenFailureIsANilStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	s, err := Open(ctx, "etcd://"+addr, slog.New(slog.DiscardHandler))
	if err == nil {
		t.Fatal("Open of a store nobody serves succeeded")
	}
	if s != nil {
		t.Fatalf("Open failed with %v but returned a non-nil store %#v", err, s)
	}
}
