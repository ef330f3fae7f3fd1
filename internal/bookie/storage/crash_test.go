package storage_test

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/bookie/storage"
	st "github.com/magnetar-io/magnetar/internal/bookie/storage/storagetest"
	"github.com/magnetar-io/magnetar/internal/config"
)

// crashChildEnv makes the test binary run crashChild instead of the tests.
const crashChildEnv = "MAGNETAR_STORAGE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashConfig flushes, rotates and trims often, so kills land in every phase.
func crashConfig(dir string) config.BookieStorageConfig {
	c := testConfig(dir)
	c.FlushInterval = 30 * time.Millisecond
	c.JournalMaxSizeMB = 1
	c.EntryLogSizeLimit = 1 << 20
	c.WriteCacheMaxSizeMB = 4
	return c
}

// crashChild adds entries of random sizes from several goroutines until it is killed and
// prints "ack <ledger> <entry> <size>" for every acknowledged add.
func crashChild(dir string) {
	var base int64
	fmt.Sscan(os.Getenv(crashChildEnv+"_BASE"), &base)
	s, err := storage.Open(crashConfig(dir), nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := os.Stdout
	var wg sync.WaitGroup
	for w := int64(0); w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := base + w
			r := rand.New(rand.NewPCG(uint64(l), 1))
			sem := make(chan struct{}, 32) // adds in flight per writer
			for e := int64(0); ; e++ {
				size := r.IntN(8 << 10)
				if r.IntN(20) == 0 {
					size = 64<<10 + r.IntN(64<<10)
				}
				sem <- struct{}{}
				s.AddEntry(l, e, key, e-1, st.Payload(l, e, size), false, func(err error) {
					<-sem
					if err != nil {
						return
					}
					mu.Lock()
					fmt.Fprintf(out, "ack %d %d %d\n", l, e, size)
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
}

type acked struct {
	ledger, entry int64
	size          int
}

func TestSoakCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test re-executes the test binary")
	}
	dir := t.TempDir()
	var all []acked
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	for it := 0; it < crashIterations; it++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir, fmt.Sprintf("%s_BASE=%d", crashChildEnv, 100*(it+1)))
		stdout, _ := cmd.StdoutPipe()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var got []acked
		done := make(chan struct{})
		flowing := make(chan struct{}) // closed at the first acknowledgement
		go func() {
			defer close(done)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var a acked
				if n, _ := fmt.Sscanf(sc.Text(), "ack %d %d %d", &a.ledger, &a.entry, &a.size); n == 3 {
					got = append(got, a)
					if len(got) == 1 {
						close(flowing)
					}
				}
			}
			_, _ = io.Copy(io.Discard, stdout)
		}()
		// Kill at a random moment once adds are flowing (not during open or before the
		// first acknowledgement: a loaded machine can take a while to get there).
		select {
		case <-flowing:
		case <-done:
			_ = cmd.Process.Kill()
			t.Fatalf("iteration %d: child exited before acknowledging anything; stderr: %s", it, stderr.String())
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Fatalf("iteration %d: no acknowledgement from the child after a minute", it)
		}
		time.Sleep(time.Duration(r.IntN(600)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		_ = cmd.Wait()
		if len(got) == 0 {
			t.Fatalf("iteration %d: child acknowledged nothing; stderr: %s", it, stderr.String())
		}
		all = append(all, got...)

		s, err := storage.Open(crashConfig(dir), nil, nil)
		if err != nil {
			t.Fatalf("iteration %d: reopen after SIGKILL: %v", it, err)
		}
		for _, a := range all {
			p, err := s.ReadEntry(a.ledger, a.entry)
			if err != nil {
				t.Fatalf("iteration %d: acknowledged (%d,%d) unreadable after SIGKILL: %v", it, a.ledger, a.entry, err)
			}
			if string(p) != string(st.Payload(a.ledger, a.entry, a.size)) {
				t.Fatalf("iteration %d: acknowledged (%d,%d) differs after SIGKILL", it, a.ledger, a.entry)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		t.Logf("iteration %d: %d acknowledged this run, %d checked in total", it, len(got), len(all))
	}
}
