package admin_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pa "github.com/apache/pulsar-client-go/pulsaradmin/pkg/admin"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// compactAndWait triggers a compaction through pulsaradmin and waits for its end.
func compactAndWait(t *testing.T, admin pa.Client, topic string) {
	t.Helper()
	tn := topicName(t, topic)
	must(t, "compact", admin.Topics().Compact(*tn))
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := admin.Topics().CompactStatus(*tn)
		must(t, "compaction status", err)
		switch st.Status {
		case utils.SUCCESS:
			return
		case utils.ERROR:
			t.Fatalf("compaction failed: %s", st.LastError)
		}
		if time.Now().After(deadline) {
			t.Fatalf("compaction still %s", st.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type keyed struct{ key, value string }

func send(t *testing.T, p pulsar.Producer, key, value string) pulsar.MessageID {
	t.Helper()
	id, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: key, Payload: []byte(value)})
	must(t, "send", err)
	return id
}

// readAll reads with r until the message whose value is last, and returns what it got.
func readAll(t *testing.T, r pulsar.Reader, last string) ([]keyed, []pulsar.MessageID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []keyed
	var ids []pulsar.MessageID
	for {
		m, err := r.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, keyed{m.Key(), string(m.Payload())})
		ids = append(ids, m.ID())
		if string(m.Payload()) == last {
			return got, ids
		}
	}
}

// TestCompactionReadCompacted: after PUT …/compaction a readCompacted reader sees the
// newest value of every key once, no deleted key and no message without a key, in the
// order they were published (batched members with their own ids), then what was published
// after; a reader without readCompacted still sees every message; Shared subscriptions
// may not read compacted.
func TestCompactionReadCompacted(t *testing.T) {
	topic := "persistent://public/default/compaction-basic"
	client := pulsarClient(t)
	admin := adminClient(t)
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	must(t, "producer", err)
	defer prod.Close()
	st, err := admin.Topics().CompactStatus(*topicName(t, topic))
	must(t, "status before", err)
	if st.Status != utils.NOTRUN {
		t.Fatalf("status before any run: %s", st.Status)
	}
	for i := range 5 {
		send(t, prod, fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i))
	}
	send(t, prod, "k1", "v1-new")
	send(t, prod, "k2", "") // deletes k2
	if _, err := prod.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte("no key")}); err != nil {
		t.Fatal(err)
	}
	// One batch of three keys, the middle one superseded afterwards.
	batcher, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 3,
		BatchingMaxPublishDelay: time.Minute})
	must(t, "batching producer", err)
	defer batcher.Close()
	done := make(chan pulsar.MessageID, 3)
	for _, k := range []string{"b0", "b1", "b2"} {
		batcher.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: k, Payload: []byte(k + "-v")},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Error(err)
				}
				done <- id
			})
	}
	must(t, "flush", batcher.FlushWithCtx(context.Background()))
	var batchIDs []pulsar.MessageID
	for range 3 {
		batchIDs = append(batchIDs, <-done)
	}
	if batchIDs[0].EntryID() != batchIDs[2].EntryID() {
		t.Fatalf("the three messages are not one batch: %v", batchIDs)
	}
	send(t, prod, "b1", "b1-new")

	compactAndWait(t, admin, topic)
	send(t, prod, "k0", "after")

	want := []keyed{{"k0", "v0"}, {"k3", "v3"}, {"k4", "v4"}, {"k1", "v1-new"}, {"b0", "b0-v"}, {"b2", "b2-v"},
		{"b1", "b1-new"}, {"k0", "after"}}
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	must(t, "compacted reader", err)
	got, ids := readAll(t, r, "after")
	r.Close()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("compacted reader got\n%v\nwant\n%v", got, want)
	}
	// Batched members keep their ids: b0 and b2 at batch indexes 0 and 2 of the entry.
	if ids[4].EntryID() != batchIDs[0].EntryID() || ids[4].BatchIdx() != 0 || ids[5].BatchIdx() != 2 {
		t.Fatalf("batch members' ids: %v %v, batch %v", ids[4], ids[5], batchIDs)
	}

	plain, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	must(t, "plain reader", err)
	all, _ := readAll(t, plain, "after")
	plain.Close()
	// 12 of the 13: the Go client drops a message with an empty payload as corrupt (its
	// MessageReceived takes a nil payload for one), the deletion of k2 included.
	if len(all) != 12 {
		t.Fatalf("plain reader got %d messages: %v", len(all), all)
	}

	// Seeking a compacted reader back to the start reads the compacted view again.
	r, err = client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	must(t, "compacted reader", err)
	_, firstIDs := readAll(t, r, "after")
	// The Go reader seeks to a received id only (it needs the partition index); whether it
	// hands out that message again is the client's start-inclusive rule.
	must(t, "seek", r.Seek(firstIDs[0]))
	got, _ = readAll(t, r, "after")
	r.Close()
	if fmt.Sprint(got) != fmt.Sprint(want) && fmt.Sprint(got) != fmt.Sprint(want[1:]) {
		t.Fatalf("after a seek to the first message: %v", got)
	}

	// A reader starting at a message inside the compacted range continues from there.
	r, err = client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[3], ReadCompacted: true})
	must(t, "reader at an id", err)
	got, _ = readAll(t, r, "after")
	r.Close()
	if fmt.Sprint(got) != fmt.Sprint(want[4:]) {
		t.Fatalf("from %v: got %v, want %v", ids[3], got, want[4:])
	}

	// A durable Exclusive consumer reads the same view, and after a redelivery the same
	// messages again.
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "compacted-sub",
		ReadCompacted: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
		NackRedeliveryDelay: 100 * time.Millisecond})
	must(t, "compacted consumer", err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var first []keyed
	for range 2 {
		m, err := cons.Receive(ctx)
		must(t, "receive", err)
		first = append(first, keyed{m.Key(), string(m.Payload())})
		cons.Nack(m)
	}
	m, err := cons.Receive(ctx)
	must(t, "receive", err)
	for m.Key() != "k0" || string(m.Payload()) != "v0" { // redelivered from the start
		m, err = cons.Receive(ctx)
		must(t, "receive after nack", err)
	}
	cons.Close()
	if fmt.Sprint(first) != fmt.Sprint(want[:2]) {
		t.Fatalf("consumer got %v", first)
	}

	// Failover reads compacted too.
	fo, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "failover-compacted",
		Type: pulsar.Failover, ReadCompacted: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	must(t, "failover consumer", err)
	var fgot []keyed
	for len(fgot) < len(want) {
		m, err := fo.Receive(ctx)
		must(t, "failover receive", err)
		fgot = append(fgot, keyed{m.Key(), string(m.Payload())})
		must(t, "ack", fo.Ack(m))
	}
	fo.Close()
	if fmt.Sprint(fgot) != fmt.Sprint(want) {
		t.Fatalf("failover consumer got %v", fgot)
	}

	_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "shared-compacted",
		Type: pulsar.Shared, ReadCompacted: true})
	if err == nil {
		t.Fatal("a Shared subscription was allowed to read compacted")
	}

	// Internal stats name the compacted ledger; topic stats have the run.
	var internal struct {
		CompactedLedger struct {
			LedgerID int64 `json:"ledgerId"`
			Entries  int64 `json:"entries"`
		} `json:"compactedLedger"`
	}
	getJSON(t, "/admin/v2/persistent/public/default/compaction-basic/internalStats", &internal)
	if internal.CompactedLedger.LedgerID < 0 || internal.CompactedLedger.Entries != 6 {
		t.Fatalf("compactedLedger %+v, want 6 entries (k0 k3 k4 k1, the batch, b1)", internal.CompactedLedger)
	}
	var stats struct {
		Compaction struct {
			Removed   int64 `json:"lastCompactionRemovedEventCount"`
			Succeeded int64 `json:"lastCompactionSucceedTimestamp"`
		} `json:"compaction"`
	}
	getJSON(t, "/admin/v2/persistent/public/default/compaction-basic/stats", &stats)
	if stats.Compaction.Succeeded == 0 || stats.Compaction.Removed != 5 {
		t.Fatalf("stats compaction %+v, want 5 removed (k1, k2 twice, no key, b1)", stats.Compaction)
	}
	resp, err := http.Get("http://" + sa.HTTPAddr() + "/metrics")
	must(t, "metrics", err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !regexp.MustCompile(`(?m)^pulsar_compaction_succeed_count [1-9]`).Match(raw) ||
		!regexp.MustCompile(`(?m)^pulsar_compaction_removed_event_count [1-9]`).Match(raw) {
		t.Fatal("pulsar_compaction_* do not count the run")
	}
}

// TestCompactionThresholdPolicy: a topic whose compactionThreshold policy its backlog
// exceeds is compacted by the broker without a request; a topic without one is not.
func TestCompactionThresholdPolicy(t *testing.T) {
	client := pulsarClient(t)
	admin := adminClient(t)
	off := "persistent://public/default/compaction-threshold-off"
	on := "persistent://public/default/compaction-threshold-on"
	produce := func(topic string) {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
		must(t, "producer", err)
		defer p.Close()
		for round := range 2 {
			for k := range 5 {
				send(t, p, fmt.Sprintf("k%d", k), fmt.Sprintf("round %d %0100d", round, k))
			}
		}
	}
	produce(off)
	produce(on)
	// Set once everything is stored, so one run covers it all.
	must(t, "set threshold", admin.Topics().SetCompactionThreshold(*topicName(t, on), 500))
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := admin.Topics().CompactStatus(*topicName(t, on))
		must(t, "status", err)
		if st.Status == utils.SUCCESS {
			break
		}
		if st.Status == utils.ERROR || time.Now().After(deadline) {
			t.Fatalf("threshold compaction: %+v", st)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, err := admin.Topics().CompactStatus(*topicName(t, off))
	must(t, "status", err)
	if st.Status != utils.NOTRUN {
		t.Fatalf("a topic without a threshold was compacted: %+v", st)
	}
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: on, StartMessageID: pulsar.EarliestMessageID(), ReadCompacted: true})
	must(t, "reader", err)
	defer r.Close()
	got, _ := readAll(t, r, fmt.Sprintf("round 1 %0100d", 4))
	if len(got) != 5 || got[0].value != fmt.Sprintf("round 1 %0100d", 0) {
		t.Fatalf("compacted view: %v", got)
	}
}

// TestCompactionTableViewPartitioned: PUT …/compaction on a partitioned topic compacts
// every partition (its status is theirs combined), and the Go client's TableView, which
// reads each partition compacted, holds the newest value of every key.
func TestCompactionTableViewPartitioned(t *testing.T) {
	topic := "persistent://public/default/compaction-tableview"
	admin := adminClient(t)
	client := pulsarClient(t)
	must(t, "create", admin.Topics().Create(*topicName(t, topic), 2))
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true,
		Schema: pulsar.NewStringSchema(nil)})
	must(t, "producer", err)
	defer p.Close()
	put := func(k int, v string) {
		_, err := p.Send(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", k), Value: v})
		must(t, "send", err)
	}
	for k := range 6 {
		put(k, "v1")
	}
	for k := range 3 {
		put(k, "v2")
	}
	compactAndWait(t, admin, topic)
	for i := range 2 {
		var internal struct {
			CompactedLedger struct {
				Entries int64 `json:"entries"`
			} `json:"compactedLedger"`
		}
		getJSON(t, fmt.Sprintf("/admin/v2/persistent/public/default/compaction-tableview-partition-%d/internalStats", i), &internal)
		if internal.CompactedLedger.Entries <= 0 {
			t.Fatalf("partition %d has no compacted ledger: %+v", i, internal)
		}
	}
	tv, err := client.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil),
		SchemaValueType: reflect.TypeOf(new(string))}) // the client's StringSchema decodes into a **string
	must(t, "table view", err)
	defer tv.Close()
	if tv.Size() != 6 {
		t.Fatalf("table view has %d keys: %v", tv.Size(), tv.Keys())
	}
	for k := range 6 {
		want := "v1"
		if k < 3 {
			want = "v2"
		}
		if got, _ := tv.Get(fmt.Sprintf("k%d", k)).(*string); got == nil || *got != want {
			t.Fatalf("k%d = %v, want %s", k, tv.Get(fmt.Sprintf("k%d", k)), want)
		}
	}
}
