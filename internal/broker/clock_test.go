package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/magnetar-io/magnetar/internal/clock"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/txn"
)

// TestInjectedClockDrivesTTLAndTxnTimeout: the broker's clock is the managed-ledger
// factory's (FactoryOptions.Clock), which the topic service and the transaction
// coordinators share; here a clock.Fake. Jumping it, instead of sleeping through the
// durations, (1) past the namespace's one-hour message TTL expires a subscription's
// backlog (the periodic policy check reads the clock), and (2) past a transaction's
// one-hour timeout aborts it: its messages are never delivered and its commit is refused.
// Neither could happen within the test on the system clock.
func TestInjectedClockDrivesTTLAndTxnTimeout(t *testing.T) {
	logger := testLogger(t)
	store := memstore.New(memstore.DefaultOptions())
	bootstrapNamespaces(t, store)
	clk := clock.NewFake(time.Now())
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: memledger.New(), Store: store, Config: mlCfg, Logger: logger, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testBrokerConfig(func(c *config.BrokerConfig) {
		txnOn(c)
		c.Policies.PolicyCheckIntervalSeconds = 1 // the check runs often; what it finds depends on the clock
	})
	s := newTestServer(t, cfg, store, f, logger, prometheus.NewRegistry(), nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = closeServer(ctx, s)
		_ = f.Close(ctx)
	})
	client := newTxnClient(t, "pulsar://"+ln.Addr().String())
	ctx := ctxFor(t)

	// (1) Message TTL of one hour on the namespace; five unconsumed messages.
	ttl := 3600
	if err := resources.New(store).UpdateNamespace(ctx, "public", "default", func(p *resources.Policies) error {
		p.MessageTTLInSeconds = &ttl
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	topic := "persistent://public/default/clock-ttl"
	cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	cons.Close() // the durable subscription stays, with nobody reading
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "ttl", 5)
	name, _ := topics.ParseName(topic)
	ml, err := f.Open(ctx, name.ManagedLedgerName(), f.DefaultConfig()) // the topic's, already open
	if err != nil {
		t.Fatal(err)
	}
	sub, ok := ml.Cursor("idle")
	if !ok {
		t.Fatal("no cursor for the subscription")
	}
	if n := sub.Backlog(); n != 5 {
		t.Fatalf("backlog %d before the jump, want 5", n)
	}
	clk.Advance(2 * time.Hour)
	waitUntil(t, "the TTL to expire the backlog after the clock jumped two hours", func() bool { return sub.Backlog() == 0 })

	// (2) A transaction with a one-hour timeout, three messages in it.
	txTopic := "persistent://public/default/clock-txn"
	txCons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: txTopic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer txCons.Close()
	txProd, err := client.CreateProducer(pulsar.ProducerOptions{Topic: txTopic, SendTimeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer txProd.Close()
	tx, err := client.NewTransaction(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := txProd.Send(ctx, &pulsar.ProducerMessage{Transaction: tx, Payload: fmt.Appendf(nil, "tx-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	tid := tx.GetTxnID()
	id := txn.ID{Most: tid.MostSigBits, Least: tid.LeastSigBits}
	coord, err := s.Coordinators().Get(ctx, id.Most)
	if err != nil {
		t.Fatal(err)
	}
	if md, ok := coord.Get(id); !ok || md.Status != txn.Open {
		t.Fatalf("transaction %s before the jump: %+v %v, want open", id, md, ok)
	}
	waitUntil(t, "the coordinator to arm its timeout timer", func() bool { return clk.Pending() > 0 })
	clk.Advance(time.Hour + time.Second)
	waitUntil(t, "the timed-out transaction to be aborted and forgotten", func() bool { _, ok := coord.Get(id); return !ok })
	if st := coord.Stats(); st.TimedOut != 1 {
		t.Fatalf("coordinator stats %+v, want one timed out", st)
	}
	if err := tx.Commit(ctx); err == nil {
		t.Fatal("a transaction aborted at its timeout committed")
	}
	receiveNone(t, txCons)
}
