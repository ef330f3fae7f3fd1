package managedledger

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// Entry metadata travels with the entry: what AddEntryMeta was given comes back from the
// cache and the tail without the parser, and entries read from a ledger are parsed on the
// way into the cache.
func TestEntryMetaTravelsWithTheEntry(t *testing.T) {
	e := newEnv(t)
	f := e.factory()
	var parsed atomic.Int64
	f.SetMetaParser(func(data []byte) EntryMeta {
		parsed.Add(1)
		n, _ := strconv.Atoi(strings.TrimPrefix(string(data), "m-"))
		return EntryMeta{Parsed: true, Count: n + 100}
	})
	ml := open(t, f, "t/meta", func(c *Config) { c.MaxEntriesPerLedger = 3 })
	c := activeCursor(t, ml, "live")
	for i := 0; i < 6; i++ {
		done := make(chan error, 1)
		must(t, ml.AddEntryMeta([]byte("m-"+strconv.Itoa(i)), EntryMeta{Parsed: true, Count: i + 1, Key: "k"},
			func(_ Position, err error) { done <- err }))
		must(t, <-done)
	}
	for i, en := range readAll(t, c) {
		if m := en.Meta; !m.Parsed || m.Count != i+1 || m.Key != "k" {
			t.Fatalf("entry %d from the cache/tail has meta %+v, want what it was added with", i, m)
		}
	}
	if n := parsed.Load(); n != 0 {
		t.Fatalf("the parser ran %d times for entries added with their meta", n)
	}
	// A cursor nobody marked active reads from the ledgers once the cache lost them.
	f.EvictCache()
	r, err := ml.NewNonDurableCursor(Earliest, true)
	must(t, err)
	fromLedger := 0
	for i, en := range readAll(t, r) {
		// The newest entries may still come from the current ledger's tail, with their meta.
		switch m := en.Meta; {
		case m.Parsed && m.Count == i+100:
			fromLedger++
		case m.Parsed && m.Count == i+1 && m.Key == "k":
		default:
			t.Fatalf("entry %d read again has meta %+v", i, m)
		}
	}
	if fromLedger == 0 || parsed.Load() == 0 {
		t.Fatal("no entry was read from a ledger and parsed")
	}
}
