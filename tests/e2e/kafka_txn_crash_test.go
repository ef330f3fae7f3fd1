package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/testenv"
)

// A Kafka consume-transform-produce loop (franz-go's GroupTransactSession: records of
// "kin" written to "kout" and the group's offsets committed in one transaction) with the
// standalone SIGKILLed in the middle of a transaction and restarted on the same data: the
// open transaction is aborted, committed ones stay, and the output read with
// read_committed holds every input exactly once.
func TestKafkaTxnSIGKILLExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	port := testenv.FreePort(t)
	p, _, _, addr := startKafkaStandalone(t, dir, port)
	ctx := ctxFor(t, 5*time.Minute)
	adm := kadm.NewClient(kafkaClient(t, addr))
	for _, tp := range []string{"kin", "kout"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	const n = 100
	src := kafkaClient(t, addr, kgo.DefaultProduceTopic("kin"))
	for i := 0; i < n; i++ {
		if err := src.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("m%03d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	newSession := func() *kgo.GroupTransactSession {
		s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("e2e-ctp"),
			kgo.ConsumerGroup("kctp"), kgo.ConsumeTopics("kin"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("kout"),
			kgo.RetryTimeout(90*time.Second), kgo.FetchMaxWait(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	done := func() bool {
		offs, err := adm.FetchOffsets(ctx, "kctp")
		if err != nil {
			return false
		}
		o, ok := offs.Lookup("kin", 0)
		return ok && o.At == n
	}
	rounds, killed := 0, false
	for !done() {
		if ctx.Err() != nil {
			t.Fatalf("the loop did not consume every input; the standalone's log:\n%s", tail(p.log(), 60))
		}
		sess := newSession()
		for !done() && ctx.Err() == nil {
			if rounds > 30 {
				t.Fatalf("30 rounds without consuming every input; the standalone's log:\n%s", tail(p.log(), 80))
			}
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			recs := sess.PollRecords(pctx, 10).Records()
			cancel()
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				t.Fatal(err)
			}
			failed := false
			for _, r := range recs {
				if err := sess.ProduceSync(ctx, &kgo.Record{Value: append([]byte("out-"), r.Value...)}).FirstErr(); err != nil {
					t.Logf("produce: %v", err)
					failed = true
					break
				}
			}
			rounds++
			if rounds == 3 && !killed {
				// Outputs written, offsets not committed, transaction open.
				killed = true
				p.kill()
				p, _, _, _ = startKafkaStandalone(t, dir, port)
				break
			}
			if failed {
				break
			}
			if _, err := sess.End(ctx, kgo.TryCommit); err != nil {
				t.Logf("end: %v", err)
				break
			}
		}
		sess.Close()
	}
	if !killed {
		t.Fatal("the broker was never killed")
	}
	cons := kafkaClient(t, addr, kgo.ConsumeTopics("kout"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range consumeKafka(t, cons, n) {
		seen[string(r.Value)]++
	}
	// Anything beyond n committed would show as a duplicate of one of the n.
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	cons.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
	cancel()
	for i := 0; i < n; i++ {
		if v := fmt.Sprintf("out-m%03d", i); seen[v] != 1 {
			t.Errorf("%s is in the output %d times", v, seen[v])
		}
	}
	if len(seen) != n {
		t.Errorf("the output has %d distinct records, want %d", len(seen), n)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
