package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/standalone"
)

// compactedLedgerOf reads the compacted ledger's id and entries from internal stats.
func compactedLedgerOf(t *testing.T, s *standalone.Standalone, path string) (int64, int64) {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + path + "/internalStats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st struct {
		CompactedLedger struct {
			LedgerID int64 `json:"ledgerId"`
			Entries  int64 `json:"entries"`
		} `json:"compactedLedger"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return st.CompactedLedger.LedgerID, st.CompactedLedger.Entries
}

// TestCompactedViewAcrossRestart: a topic compacted on the real bookie keeps its compacted
// view across a restart of the whole stack: the same compacted ledger, and a readCompacted
// reader sees the newest value per key, then what came after the compaction.
func TestCompactedViewAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := start(t, cfg)
	const topic = "persistent://public/default/compaction-restart"
	const path = "/admin/v2/persistent/public/default/compaction-restart"
	c := client(t, s)
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, kv := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}, {"c", "1"}, {"b", "2"}} {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: kv[0], Payload: []byte(kv[1]), SequenceID: ptr(int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, "http://"+s.HTTPAddr()+path+"/compaction", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PUT compaction: %s", resp.Status)
	}
	for {
		resp, err := http.Get("http://" + s.HTTPAddr() + path + "/compaction")
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Status, LastError string }
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if st.Status == "SUCCESS" {
			break
		}
		if st.Status == "ERROR" || ctx.Err() != nil {
			t.Fatalf("compaction: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: "c", Payload: []byte("after")}); err != nil {
		t.Fatal(err)
	}
	before, entries := compactedLedgerOf(t, s, path)
	if before < 0 || entries != 3 {
		t.Fatalf("compacted ledger %d with %d entries", before, entries)
	}
	p.Close()
	c.Close()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	s = start(t, cfg)
	defer s.Close(context.Background())
	c = client(t, s)
	defer c.Close()
	r, err := c.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for len(got) < 4 {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, m.Key()+"="+string(m.Payload()))
	}
	if want := "[a=2 c=1 b=2 c=after]"; fmt.Sprint(got) != want {
		t.Fatalf("after the restart: %v, want %s", got, want)
	}
	if after, _ := compactedLedgerOf(t, s, path); after != before {
		t.Fatalf("compacted ledger %d after the restart, %d before", after, before)
	}
}

func ptr[T any](v T) *T { return &v }
