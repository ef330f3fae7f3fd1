package broker

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
)

// TestTxnBatchedLogsAcrossRestart: with transactionLogBatchedWriteEnabled and
// transactionPendingAckBatchedWriteEnabled, concurrent consume-transform-produce
// transactions of several Go clients (each sends one coordinator request at a time) share
// log entries; after a broker restart on the same storage (the real stack unless
// MAGNETAR_BROKER_TEST_BACKEND=memory) the committed ones hold exactly once, and the ones
// left open come back from the batched entries, hold their acknowledgements and are
// aborted at their timeout: their output is never delivered and their input is delivered
// again.
func TestTxnBatchedLogsAcrossRestart(t *testing.T) {
	rs := newRestartableStack(t, func(c *config.BrokerConfig) {
		txnOn(c)
		c.Transaction.LogBatchedWriteEnabled = true
		c.Transaction.PendingAckBatchedWriteEnabled = true
	})
	const n, committed = 8, 6
	in, out := "persistent://public/default/txn-batched-in", "persistent://public/default/txn-batched-out"
	clients := make([]pulsar.Client, 4)
	for i := range clients {
		clients[i] = newTxnClient(t, rs.url)
	}
	ctx := ctxFor(t)
	inProd, err := clients[0].CreateProducer(pulsar.ProducerOptions{Topic: in, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	inCons, err := clients[0].Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	outProds := make([]pulsar.Producer, len(clients))
	for i, c := range clients {
		if outProds[i], err = c.CreateProducer(pulsar.ProducerOptions{Topic: out, SendTimeout: 0}); err != nil {
			t.Fatal(err)
		}
	}
	produce(t, inProd, "in", n)
	msgs := receiveN(t, inCons, n)

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[i%len(clients)]
			// The open ones time out after the restart; the committed ones end well before.
			tx, err := c.NewTransaction(5 * time.Second)
			if err == nil {
				_, err = outProds[i%len(clients)].Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: append([]byte("out-"), m.Payload()...)})
			}
			if err == nil {
				err = inCons.AckWithTxn(m, tx)
			}
			if err == nil && i < committed {
				err = tx.Commit(ctx)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		c.Close()
	}

	rs.restart()
	client := newTxnClient(t, rs.url)
	outCons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: out, SubscriptionName: "s", SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range receiveN(t, outCons, committed) {
		got = append(got, string(m.Payload()))
	}
	slices.Sort(got)
	var want []string
	for i := range committed {
		want = append(want, fmt.Sprintf("out-in-%d", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("output %q, want %q", got, want)
	}
	inCons2, err := client.Subscribe(pulsar.ConsumerOptions{Topic: in, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// Delivered again once the open transactions are aborted at their timeout; the
	// committed acknowledgements hold.
	var again []string
	for _, m := range receiveN(t, inCons2, n-committed) {
		again = append(again, string(m.Payload()))
	}
	slices.Sort(again)
	if want := []string{"in-6", "in-7"}; !slices.Equal(again, want) {
		t.Fatalf("input delivered again %q, want %q", again, want)
	}
	receiveNone(t, inCons2)
	receiveNone(t, outCons)
}
