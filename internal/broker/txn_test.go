package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// Transactions end to end with the official Go client's transaction API (what its
// pulsar/transaction_test.go TestTxn_* cover, against this broker).

func txnOn(c *config.BrokerConfig) {
	c.Transaction.CoordinatorEnabled = true
	c.Transaction.NumCoordinators = 2
}

func newTxnClient(t *testing.T, url string) pulsar.Client {
	t.Helper()
	c, err := pulsar.NewClient(pulsar.ClientOptions{
		URL: url, OperationTimeout: waitFor, ConnectionTimeout: 5 * time.Second,
		Logger: quietLogger(), EnableTransaction: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// receiveNone fails if c receives anything within a short while (the broker holds what it
// must, so nothing arrives however long one waits; the wait only bounds the test).
func receiveNone(t *testing.T, c pulsar.Consumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Fatalf("received %q at %v", m.Payload(), m.ID())
	}
}

func receiveN(t *testing.T, c pulsar.Consumer, n int) []pulsar.Message {
	t.Helper()
	out := make([]pulsar.Message, 0, n)
	for len(out) < n {
		m, err := c.Receive(ctxFor(t))
		if err != nil {
			t.Fatalf("after %d of %d messages: %v", len(out), n, err)
		}
		out = append(out, m)
	}
	return out
}

// TestTxnGoClientConsumeTransformProduce: a transaction consumes from one topic and
// produces to another; until it commits, the output is invisible and the input not
// acknowledged; after the commit both take effect together. An aborted transaction's
// messages are never delivered and its acknowledgements are released for redelivery.
func TestTxnGoClientConsumeTransformProduce(t *testing.T) {
	b := startBrokerOn(t, false, txnOn)
	client := newTxnClient(t, b.url)
	ctx := ctxFor(t)
	in, out := "persistent://public/default/txn-in", "persistent://public/default/txn-out"
	inProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: in, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	inCons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	outProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: out, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	outCons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := inProd.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "in-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}

	// Round 1: aborted. Nothing reaches the output; the input comes back.
	tx, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	msgs := receiveN(t, inCons, 10)
	for _, m := range msgs {
		if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: append([]byte("out-"), m.Payload()...)}); err != nil {
			t.Fatal(err)
		}
		if err := inCons.AckWithTxn(m, tx); err != nil {
			t.Fatal(err)
		}
	}
	receiveNone(t, outCons)
	if err := tx.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if tx.GetState() != pulsar.TxnAborted {
		t.Fatalf("state after abort: %v", tx.GetState())
	}
	receiveNone(t, outCons)
	inCons.Close() // its unacknowledged messages (released by the abort) go to the next one
	inCons, err = client.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}

	// Round 2: committed. The output holds each input once; the input is acknowledged.
	tx, err = client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	msgs = receiveN(t, inCons, 10)
	for i, m := range msgs {
		if want := fmt.Sprintf("in-%d", i); string(m.Payload()) != want {
			t.Fatalf("redelivered %q, want %q", m.Payload(), want)
		}
		if _, err := outProd.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: append([]byte("out-"), m.Payload()...)}); err != nil {
			t.Fatal(err)
		}
		if err := inCons.AckWithTxn(m, tx); err != nil {
			t.Fatal(err)
		}
	}
	receiveNone(t, outCons)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range receiveN(t, outCons, 10) {
		if want := fmt.Sprintf("out-in-%d", i); string(m.Payload()) != want {
			t.Fatalf("output %d: %q, want %q", i, m.Payload(), want)
		}
		if err := outCons.Ack(m); err != nil {
			t.Fatal(err)
		}
	}
	receiveNone(t, outCons)
	inCons.Close()
	inCons, err = client.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	receiveNone(t, inCons) // the committed acknowledgements hold across a new consumer

	// Ending twice: the transaction is gone (as TestTxn_ImplCommitOrAbort expects).
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("a second commit succeeded")
	}

	// pulsar_txn_* with Pulsar's names, per coordinator.
	mfs, err := b.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			got[mf.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	if got["pulsar_txn_created_total"] != 2 || got["pulsar_txn_committed_total"] != 1 || got["pulsar_txn_aborted_total"] != 1 ||
		got["pulsar_txn_active_count"] != 0 || got["pulsar_txn_append_log_total"] < 4 {
		t.Fatalf("transaction metrics: %v", got)
	}
}

// TestTxnGoClientTimeoutAborts: a transaction left open past its timeout is aborted by the
// coordinator: its messages are never delivered, its acknowledgements released, and a
// late commit fails. A second transaction acknowledging what the first holds conflicts.
func TestTxnGoClientTimeoutAborts(t *testing.T) {
	b := startBrokerOn(t, false, txnOn)
	client := newTxnClient(t, b.url)
	ctx := ctxFor(t)
	topic := "persistent://public/default/txn-timeout"
	prod, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("plain")}); err != nil {
		t.Fatal(err)
	}
	m := receiveN(t, cons, 1)[0]
	short, err := client.NewTransaction(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, short); err != nil {
		t.Fatal(err)
	}
	other, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.AckWithTxn(m, other); err == nil {
		t.Fatal("a second transaction acknowledged a message the first holds")
	}
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Transaction: short, Payload: []byte("never")}); err != nil {
		t.Fatal(err)
	}
	// The timeout aborts it: the plain message comes back (its acknowledgement released)
	// and "never" is never delivered.
	cons.Close()
	cons, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	if err != nil {
		t.Fatal(err)
	}
	got := receiveN(t, cons, 1)[0]
	if string(got.Payload()) != "plain" {
		t.Fatalf("after the timeout: %q", got.Payload())
	}
	if err := cons.Ack(got); err != nil {
		t.Fatal(err)
	}
	receiveNone(t, cons)
	if err := short.Commit(ctx); err == nil {
		t.Fatal("a timed-out transaction committed")
	}
	if st := other.GetState(); st != pulsar.TxnError {
		t.Fatalf("the conflicting transaction is %v, want TxnError (the client's state after a failed op)", st)
	}
}

// TestTxnDisabled: with transactionCoordinatorEnabled off, a client enabling transactions
// is refused with "Transactions are not enabled" (the Go client's TestTransactionDisabled).
func TestTxnDisabled(t *testing.T) {
	b := startBrokerOn(t, false, nil)
	c, err := pulsar.NewClient(pulsar.ClientOptions{URL: b.url, OperationTimeout: waitFor, Logger: quietLogger(), EnableTransaction: true})
	if err == nil {
		c.Close()
		t.Fatal("a client with transactions connected to a broker without them")
	}
	if !strings.Contains(err.Error(), "Transactions are not enabled") {
		t.Fatalf("error %q", err)
	}
}

// TestTxnGoClientBatchIndexAcks: members of one batch entry acknowledged within a
// transaction are held alone (batch-index acknowledgement): another transaction
// acknowledging one of them conflicts, an abort gives them back, a commit acknowledges
// exactly them and the rest of the batch is delivered again.
func TestTxnGoClientBatchIndexAcks(t *testing.T) {
	b := startBrokerOn(t, false, txnOn)
	client := newTxnClient(t, b.url)
	ctx := ctxFor(t)
	const topic = "persistent://public/default/txn-batch"
	sub := func() pulsar.Consumer {
		c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared,
			EnableBatchIndexAcknowledgment: true, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := sub()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10, BatchingMaxPublishDelay: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "b", 10) // one batch entry of 10
	p.Close()
	ackFirstHalf := func(c pulsar.Consumer, tx pulsar.Transaction) []pulsar.Message {
		t.Helper()
		msgs := receiveN(t, c, 10)
		for _, m := range msgs[:5] {
			if err := c.AckWithTxn(m, tx); err != nil {
				t.Fatal(err)
			}
		}
		return msgs
	}
	a, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	msgs := ackFirstHalf(c, a)
	other, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AckWithTxn(msgs[2], other); err == nil {
		t.Fatal("a second transaction acknowledged a batch member the first holds")
	}
	if err := a.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = sub()
	commit, err := client.NewTransaction(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	ackFirstHalf(c, commit) // all 10 are back after the abort
	if err := commit.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c = sub()
	defer c.Close()
	got := receiveN(t, c, 5)
	for i, m := range got {
		if want := fmt.Sprintf("b-%d", i+5); string(m.Payload()) != want {
			t.Fatalf("after the commit: %q, want %q", m.Payload(), want)
		}
	}
	receiveNone(t, c)
}
