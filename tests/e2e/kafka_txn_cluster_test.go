//go:build kafkacompat

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka transactions on two brokers: partitions (and so a transaction's participants)
// are owned by both, the transaction coordinator and the group coordinator may be on
// either, and markers reach the other broker through internal/txn's participants. A
// committed transaction over every partition is read once by read_committed, an aborted
// one never; a GroupTransactSession moves every input to the output exactly once.
func TestKafkaTxnOnCluster(t *testing.T) {
	c := startClusterWith(t, 2, "--kafka-listeners", "PLAINTEXT://127.0.0.1:0",
		"--transaction-coordinator-enabled=true", "--num-transaction-coordinators", "2")
	seed := kafkaAddrOf(t, c.Brokers[0])
	ctx := ctxFor(t, 4*time.Minute)
	adm := kadm.NewClient(kafkaClient(t, seed))
	for _, tp := range []string{"ctx", "cin", "cout"} {
		if _, err := adm.CreateTopic(ctx, 4, 1, nil, tp); err != nil {
			t.Fatal(err)
		}
	}
	prod := kafkaClient(t, seed, kgo.TransactionalID("cluster-tx"), kgo.DefaultProduceTopic("ctx"))
	for _, commit := range []bool{true, false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 4; p++ {
			v := fmt.Sprintf("%v-%d", commit, p)
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	cons := kafkaClient(t, seed, kgo.ConsumeTopics("ctx"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	for _, r := range consumeKafka(t, cons, 8) {
		seen[string(r.Value)]++
	}
	for p := 0; p < 4; p++ {
		if v := fmt.Sprintf("true-%d", p); seen[v] != 2 {
			t.Errorf("%s read %d times, want 2", v, seen[v])
		}
		if v := fmt.Sprintf("false-%d", p); seen[v] != 0 {
			t.Errorf("aborted %s read %d times", v, seen[v])
		}
	}

	// The admin APIs on two brokers: each broker lists the ids it coordinates, so the id
	// is listed exactly once; it is described by its coordinator; the partitions it wrote
	// to (the partitioner chose them), on either broker, know it and that nothing is open.
	pid, _, err := prod.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	raw := kafkaClient(t, seed)
	listed := 0
	for _, b := range meta.Brokers {
		resp, err := kmsg.NewPtrListTransactionsRequest().RequestWith(ctx, raw.Broker(int(b.NodeID)))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("ListTransactions on node %d: %v %+v", b.NodeID, err, resp)
		}
		for _, st := range resp.TransactionStates {
			if st.TransactionalID == "cluster-tx" {
				listed++
			}
		}
	}
	if listed != 1 {
		t.Fatalf("cluster-tx listed %d times by the brokers, want once", listed)
	}
	ds, err := adm.DescribeTransactions(ctx, "cluster-tx")
	if err != nil {
		t.Fatal(err)
	}
	if d := ds["cluster-tx"]; d.Err != nil || d.State != "CompleteCommit" || d.ProducerID != pid {
		t.Fatalf("cluster-tx described as %+v, want CompleteCommit of producer %d", d, pid)
	}
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"ctx": {0: {}, 1: {}, 2: {}, 3: {}}})
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, "ctx")
	if err != nil {
		t.Fatal(err)
	}
	dp.EachPartition(func(p kadm.DescribedProducersPartition) {
		ps := p.ActiveProducers.Sorted()
		want := 0
		if o, _ := ends.Lookup("ctx", p.Partition); o.Offset > 0 {
			want = 1
		}
		if p.Err != nil || len(ps) != want || want == 1 && (ps[0].ProducerID != pid || ps[0].CurrentTxnStartOffset != -1) {
			t.Errorf("producers of ctx/%d (leader %d): %+v %v", p.Partition, p.Leader, ps, p.Err)
		}
	})

	const n = 80
	src := kafkaClient(t, seed, kgo.DefaultProduceTopic("cin"))
	for i := 0; i < n; i++ {
		if err := src.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("m%02d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(seed), kgo.TransactionalID("cluster-ctp"),
		kgo.ConsumerGroup("cluster-g"), kgo.ConsumeTopics("cin"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic("cout"),
		kgo.RetryTimeout(90*time.Second), kgo.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	for consumed := 0; consumed < n; {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		recs := sess.PollRecords(pctx, 15).Records()
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d", consumed, n)
		}
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := sess.ProduceSync(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value...)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatal(err)
		}
		if committed {
			consumed += len(recs)
		}
	}
	out := kafkaClient(t, seed, kgo.ConsumeTopics("cout"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := map[string]int{}
	for _, r := range consumeKafka(t, out, n) {
		got[string(r.Value)]++
	}
	for i := 0; i < n; i++ {
		if v := fmt.Sprintf("out-m%02d", i); got[v] != 1 {
			t.Errorf("%s in the output %d times", v, got[v])
		}
	}
	offs, err := adm.FetchOffsets(ctx, "cluster-g")
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	offs.Each(func(o kadm.OffsetResponse) { total += o.At })
	if total != n {
		t.Errorf("the group's offsets add up to %d, want %d", total, n)
	}
}
