package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/magnetar-io/magnetar/internal/txn"
)

// TestTxnClusterCoordinatorOwnerSIGKILL: in a cluster of two brokers, the broker serving
// the transaction coordinator is SIGKILLed while a transaction is open with messages on a
// topic. The other broker takes the coordinator over from its log: the open transaction
// is still there and ends all or nothing (committed: every message delivered once;
// refused: none ever), and new transactions commit through it.
// It takes about 90 s (a cluster start, a lease expiry, participants retried until the
// killed broker's topics move): make soak runs it, make test does not.
func TestTxnClusterCoordinatorOwnerSIGKILL(t *testing.T) {
	if !txnSoak {
		t.Skip("a two-broker cluster with a SIGKILL takes ~90 s: make soak runs it (-tags soak)")
	}
	c := startClusterWith(t, 2, "--transaction-coordinator-enabled=true", "--num-transaction-coordinators", "1")
	owner := ownerOf(t, c, txn.AssignPartition(0))
	cl, err := pulsar.NewClient(pulsar.ClientOptions{URL: c.BrokerServiceURL(), OperationTimeout: 60 * time.Second,
		ConnectionTimeout: 3 * time.Second, EnableTransaction: true, Logger: plog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "persistent://public/default/txn-cluster"
	cons, err := cl.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	prod, err := cl.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	open, err := cl.NewTransaction(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Transaction: open, Payload: fmt.Appendf(nil, "a-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("killing %s, the coordinator's owner", owner.Name)
	owner.Kill()

	committed := open.Commit(ctx) == nil
	t.Logf("commit of the transaction open across the kill: committed=%v", committed)
	// A new transaction goes through the coordinator's new owner.
	var next pulsar.Transaction
	waitFor(t, "a transaction on the coordinator's new owner", func() (bool, error) {
		var err error
		next, err = cl.NewTransaction(30 * time.Second)
		return err == nil, err
	})
	if _, err := prod.Send(ctx, &pulsar.ProducerMessage{Transaction: next, Payload: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := next.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"b": true}
	if committed {
		for i := range 5 {
			want[fmt.Sprintf("a-%d", i)] = true
		}
	}
	got := map[string]int{}
	for len(got) < len(want) {
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatalf("received %v of %v: %v", got, want, err)
		}
		got[string(m.Payload())]++
		_ = cons.Ack(m)
	}
	// Nothing else arrives: not the aborted transaction's messages, no duplicate.
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	if m, err := cons.Receive(rctx); err == nil {
		got[string(m.Payload())]++
	}
	for p, n := range got {
		if !want[p] || n != 1 {
			t.Fatalf("delivered %v, want each of %v once", got, want)
		}
	}
	if now := ownerOf(t, c, txn.AssignPartition(0)); now == owner {
		t.Fatal("the coordinator is still owned by the killed broker")
	}
}
