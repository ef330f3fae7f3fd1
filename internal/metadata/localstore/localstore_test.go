package localstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/metadata/registrationtest"
	"github.com/magnetar-io/magnetar/internal/metadata/storetest"
)

func open(t *testing.T, dir string, opts Options) *Store {
	t.Helper()
	s, err := Open(dir, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) metadata.Store { return open(t, t.TempDir(), Options{}) })
}

func TestRegistration(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	defer s.Close()
	registrationtest.Run(t, s, s.ExpireSession)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestReopenKeepsPersistentDropsEphemeral: what a clean restart must keep and lose.
func TestReopenKeepsPersistentDropsEphemeral(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxFor(t)
	s := open(t, dir, Options{})
	v1, err := s.Put(ctx, "/a", []byte("one"), metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/gone", []byte("x"), metadata.NotExists); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/gone", metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	sess, err := s.NewSession(ctx, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	eph, err := sess.PutEphemeral(ctx, "/eph", []byte("e"), metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the process going away without ending its session: close only the database
	// (as a crash would leave it), not the handle.
	if err := s.j.close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(t, dir, Options{})
	defer s2.Close()
	kv, err := s2.Get(ctx, "/a")
	if err != nil || string(kv.Value) != "one" || kv.Version != v1 {
		t.Fatalf("/a after reopen = %+v, %v; want one at %d", kv, err, v1)
	}
	if _, err := s2.Get(ctx, "/gone"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("deleted key after reopen: %v", err)
	}
	if _, err := s2.Get(ctx, "/eph"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("previous process's ephemeral key after reopen: %v, want ErrNotFound", err)
	}
	// Versions never repeat: the next change is newer than anything the first process saw,
	// including the ephemeral key and its deletion at open.
	v, err := s2.Put(ctx, "/b", nil, metadata.NotExists)
	if err != nil {
		t.Fatal(err)
	}
	if v <= eph+1 {
		t.Fatalf("version after reopen %d, want > %d (ephemeral put %d and its deletion)", v, eph+1, eph)
	}
	// And a third open still agrees (the deletion of the ephemeral key was durable).
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	s3 := open(t, dir, Options{})
	defer s3.Close()
	kvs, err := s3.List(ctx, "/")
	if err != nil || len(kvs) != 2 || kvs[0].Key != "/a" || kvs[1].Key != "/b" || kvs[1].Version != v {
		t.Fatalf("List after second reopen = %+v, %v", kvs, err)
	}
}

func TestSpaceQuota(t *testing.T) {
	s := open(t, t.TempDir(), Options{MaxBytes: 100})
	defer s.Close()
	ctx := ctxFor(t)
	if _, err := s.Put(ctx, "/k", make([]byte, 60), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/j", make([]byte, 60), metadata.AnyVersion); !errors.Is(err, memstore.ErrSpaceExceeded) {
		t.Fatalf("put beyond the quota: %v, want ErrSpaceExceeded", err)
	}
	if _, err := s.Get(ctx, "/j"); !errors.Is(err, metadata.ErrNotFound) {
		t.Fatalf("refused put left a key: %v", err)
	}
	// Shrinking a value and deleting always work.
	if _, err := s.Put(ctx, "/k", make([]byte, 10), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "/j", make([]byte, 60), metadata.AnyVersion); err != nil {
		t.Fatalf("put within the quota after shrinking: %v", err)
	}
}

func TestOpenRefusesForeignData(t *testing.T) {
	for name, setup := range map[string]func(db *pebble.DB) error{
		"no format key": func(db *pebble.DB) error { return db.Set([]byte("kx"), make([]byte, 9), pebble.Sync) },
		"newer format":  func(db *pebble.DB) error { return db.Set(formatKey, []byte{0, 0, 0, 9}, pebble.Sync) },
		"short value": func(db *pebble.DB) error {
			_ = db.Set(formatKey, []byte{0, 0, 0, 1}, pebble.Sync)
			return db.Set([]byte("kx"), []byte{1}, pebble.Sync)
		},
		"version beyond revision": func(db *pebble.DB) error {
			_ = db.Set(formatKey, []byte{0, 0, 0, 1}, pebble.Sync)
			return db.Set([]byte("kx"), []byte{0, 0, 0, 0, 0, 0, 0, 5, 0}, pebble.Sync)
		},
		"unknown key": func(db *pebble.DB) error {
			_ = db.Set(formatKey, []byte{0, 0, 0, 1}, pebble.Sync)
			return db.Set([]byte("zz"), nil, pebble.Sync)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			db, err := pebble.Open(dir, &pebble.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := setup(db); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err := Open(dir, Options{}, nil); !errors.Is(err, ErrCorrupt) {
				if s != nil {
					_ = s.Close()
				}
				t.Fatalf("Open = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestGroupCommitKeepsOrder: many writers at once, each group one commit; the values read
// back after a reopen are the last ones each writer was told were stored.
func TestGroupCommitKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxFor(t)
	s := open(t, dir, Options{})
	const writers, each = 16, 50
	var wg sync.WaitGroup
	last := make([]metadata.Version, writers)
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v, err := s.Put(ctx, fmt.Sprintf("/w/%02d", w), []byte(strconv.Itoa(i)), metadata.AnyVersion)
				if err != nil {
					errs <- err
					return
				}
				if v <= last[w] {
					errs <- fmt.Errorf("writer %d: version %d after %d", w, v, last[w])
					return
				}
				last[w] = v
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, dir, Options{})
	defer s2.Close()
	for w := range writers {
		kv, err := s2.Get(ctx, fmt.Sprintf("/w/%02d", w))
		if err != nil || string(kv.Value) != strconv.Itoa(each-1) || kv.Version != last[w] {
			t.Fatalf("writer %d after reopen: %+v, %v; want %d at %d", w, kv, err, each-1, last[w])
		}
	}
}

// crashChildEnv makes the test binary a writer that the crash test SIGKILLs.
const crashChildEnv = "LOCALSTORE_CRASH_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir, os.Getenv(crashChildEnv+"_ROUND")))
	}
	os.Exit(m.Run())
}

// crashChild writes keys from 8 goroutines until killed, printing "key version" for each
// put the store acknowledged.
func crashChild(dir, round string) int {
	s, err := Open(dir, Options{}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%s/%d/%06d", round, w, i)
				v, err := s.Put(context.Background(), key, []byte(key), metadata.NotExists)
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				mu.Lock()
				fmt.Fprintf(out, "%s %d\n", key, v)
				_ = out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}

// TestCrashKeepsEveryAcknowledgedPut SIGKILLs a writing process and checks that every put it
// was told had succeeded is there after reopening, with its version, and that versions handed
// out after the crash are newer.
func TestCrashKeepsEveryAcknowledgedPut(t *testing.T) {
	dir := t.TempDir()
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_ROUND=%d", crashChildEnv, round))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := map[string]metadata.Version{}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() && len(acked) < 300*(round+1) {
			key, v, ok := strings.Cut(sc.Text(), " ")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				t.Fatalf("child wrote %q", sc.Text())
			}
			acked[key] = metadata.Version(n)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		for sc.Scan() { // acknowledged before the kill landed
			key, v, _ := strings.Cut(sc.Text(), " ")
			n, _ := strconv.ParseInt(v, 10, 64)
			acked[key] = metadata.Version(n)
		}
		_ = cmd.Wait()
		if len(acked) == 0 {
			t.Fatal("the child acknowledged nothing")
		}

		s := open(t, dir, Options{})
		ctx := ctxFor(t)
		var newest metadata.Version
		for key, v := range acked {
			kv, err := s.Get(ctx, key)
			if err != nil || kv.Version != v || string(kv.Value) != key {
				t.Fatalf("round %d: acknowledged %s at %d, after the crash: %+v, %v", round, key, v, kv, err)
			}
			newest = max(newest, v)
		}
		v, err := s.Put(ctx, fmt.Sprintf("/after/%d", round), nil, metadata.NotExists)
		if err != nil || v <= newest {
			t.Fatalf("round %d: put after the crash got version %d (%v), want > %d", round, v, err, newest)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
