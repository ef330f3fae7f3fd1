package topics

import (
	"errors"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
)

// compactNow runs one compaction and waits for its end; it returns the run's error text.
func compactNow(t *testing.T, svc *testService, name Name) string {
	t.Helper()
	if err := svc.Compact(ctxT(t), name); err != nil {
		t.Fatal(err)
	}
	var st CompactionStatus
	waitUntil(t, "compaction end", func() bool {
		var err error
		st, err = svc.CompactionStatus(ctxT(t), name)
		return err == nil && st.Status != "RUNNING"
	})
	return st.LastError
}

// compactedValues reads n messages' keys with a readCompacted reader from the start, and
// checks nothing follows.
func compactedValues(t *testing.T, svc *testService, name Name, n int) []string {
	t.Helper()
	tp, err := svc.Topic(ctxT(t), name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeConsumer()
	start := Earliest
	c, err := tp.Subscribe(ctxT(t), ConsumerSpec{ID: 9, Name: "r", Subscription: "reader-c", Type: Exclusive,
		Start: &start, ReadCompacted: true}, cc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Flow(1000)
	var got []string
	for range n {
		got = append(got, cc.next(t).e.Meta.Key)
	}
	cc.nothing(t)
	return got
}

// TestCompactionStopsSafelyAtEveryStep: a run stopped before its cursor record leaves the
// previous compacted ledger serving (and its own ledger, recorded as pending, deleted); one
// stopped after the record but before deleting the previous ledger serves the new ledger
// once the topic is loaded again (a restart), and the next run deletes the previous one;
// the bookkeeping never points at a deleted ledger.
func TestCompactionStopsSafelyAtEveryStep(t *testing.T) {
	b := newMemBackend(t)
	svc := b.start(t, nil)
	name := mustName(t, "persistent://public/default/compaction-crash")
	tp, err := svc.Topic(ctxT(t), name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctxT(t), ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(0)
	put := func(key, value string) {
		seq++
		publish(t, p, MessageSpec{Payload: []byte(value), Key: key, ProducerName: "p", SequenceID: seq})
	}
	put("a", "1")
	put("b", "1")
	put("a", "2")
	if msg := compactNow(t, svc, name); msg != "" {
		t.Fatal(msg)
	}
	first := tp.cmp.view.r.ID()
	if got := compactedValues(t, svc, name, 2); fmt.Sprint(got) != "[b a]" {
		t.Fatalf("after the first run: %v", got)
	}
	put("c", "1")
	put("b", "") // deletes b

	mem := b.ledgers.(*memledger.Client)
	var stopped int64 = -1
	compactionFault = func(step string) error {
		if step == "switch" {
			cur, _ := tp.log.ml.Cursor(compactionCursorName)
			stopped = cur.Properties()[compactionPendingProperty]
			return errors.New("stopped before the switch")
		}
		return nil
	}
	t.Cleanup(func() { compactionFault = nil })
	if msg := compactNow(t, svc, name); msg == "" {
		t.Fatal("the stopped run succeeded")
	}
	if tp.cmp.view.r.ID() != first {
		t.Fatal("a run stopped before its switch changed the compacted ledger")
	}
	if stopped <= 0 || mem.Exists(stopped) {
		t.Fatalf("the stopped run's ledger %d was not recorded as pending or is still there", stopped)
	}
	// The previous view still serves: b and a from the ledger, then c and b's deletion.
	if got := compactedValues(t, svc, name, 4); fmt.Sprint(got) != "[b a c b]" {
		t.Fatalf("after the stopped run: %v", got)
	}

	compactionFault = func(step string) error {
		if step == "delete" {
			return errors.New("stopped after the switch")
		}
		return nil
	}
	if msg := compactNow(t, svc, name); msg == "" {
		t.Fatal("the stopped run succeeded")
	}
	compactionFault = nil
	svc.stop()
	svc = b.start(t, nil) // a restart reads what the cursor recorded: b's deletion compacted
	if got := compactedValues(t, svc, name, 2); fmt.Sprint(got) != "[a c]" {
		t.Fatalf("after the restart: %v", got)
	}
	tp, err = svc.Topic(ctxT(t), name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := tp.compactedView(ctxT(t))
	if err != nil || v == nil || v.r.ID() == first {
		t.Fatalf("view after restart: %v %v", v, err)
	}
	second := v.r.ID()
	if !mem.Exists(first) {
		t.Fatal("the previous ledger is gone although the stopped run did not delete it")
	}
	// A later run deletes nothing it still needs and leaves a working view.
	if p, err = tp.AddProducer(ctxT(t), ProducerSpec{ID: 2, Name: "p2"}, &fakeProducer{}); err != nil {
		t.Fatal(err)
	}
	publish(t, p, MessageSpec{Payload: []byte("3"), Key: "a", ProducerName: "p2", SequenceID: 1})
	if msg := compactNow(t, svc, name); msg != "" {
		t.Fatal(msg)
	}
	if got := compactedValues(t, svc, name, 2); fmt.Sprint(got) != "[c a]" {
		t.Fatalf("after the last run: %v", got)
	}
	// The next run deleted what the stopped one left, and its own predecessor.
	if mem.Exists(first) || mem.Exists(second) {
		t.Fatalf("leftover compacted ledgers: %d %v, %d %v", first, mem.Exists(first), second, mem.Exists(second))
	}
}
