package broker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/ownership"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// clusterBroker is one broker of an in-process cluster sharing a store and ledger client.
type clusterBroker struct {
	s   *Server
	own *ownership.Manager
	url string
}

func startClusterBroker(t *testing.T, store metadata.Store, ledgers ledger.Client) *clusterBroker {
	t.Helper()
	logger := testLogger(t)
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: ledgers, Store: store, Config: mlCfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "pulsar://" + ln.Addr().String()
	own, err := ownership.Start(context.Background(), ownership.Options{Store: store, Resources: resources.New(store),
		BrokerURL: url, HTTPURL: "http://" + ln.Addr().String(), TTL: 2 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultBrokerConfig()
	cfg.BindAddress, cfg.AdvertisedAddress = "127.0.0.1", "127.0.0.1"
	s := newTestServer(t, cfg, store, f, logger, nil, own)
	own.SetUnloader(s.topics)
	go func() { _ = s.Serve(ln) }()
	if err := own.Register(context.Background(), s.topics.LoadStats); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = own.Release(ctx)
		_ = closeServer(ctx, s)
		_ = f.Close(ctx)
	})
	return &clusterBroker{s: s, own: own, url: url}
}

// TestStaleOwnerAcknowledgesNothingAfterFence: broker A serves a topic and loses its bundle
// without noticing (its key vanishes as if its lease expired while it was paused); broker B
// takes the bundle and opens the topic, fencing A's ledger. A's producer keeps sending to
// A: A must acknowledge none of it (the adds fail on the fenced ledger), must not take the
// topic back on its stale belief, and the client must end up on B with every acknowledged
// message readable there.
func TestStaleOwnerAcknowledgesNothingAfterFence(t *testing.T) {
	store, ledgers := newTestStorage(t, testLogger(t))
	bootstrapNamespaces(t, store)
	a := startClusterBroker(t, store, ledgers)
	b := startClusterBroker(t, store, ledgers)
	ctx := context.Background()
	topic := "persistent://public/default/stale-owner"
	if err := a.own.Acquire(ctx, topic); err != nil {
		t.Fatal(err)
	}
	ca := newClient(t, a.url)
	// Batching stays on: pulsar-client-go v0.19.0's unbatched send path races with its own
	// reconnect (grabCnx vs internalSingleSend), which -race reports.
	pa, err := ca.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]pulsar.MessageID{}
	for i := range 5 {
		id, err := pa.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "a-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		acked[fmt.Sprintf("a-%d", i)] = id
	}
	staleLedger := acked["a-0"].LedgerID()

	// A's key vanishes (lease expiry) while A still believes it owns the bundle.
	bundle, err := b.own.BundleOf(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, ownership.OwnershipPrefix+bundle.String(), metadata.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := b.own.Acquire(ctx, topic); err != nil {
		t.Fatal(err)
	}
	cb := newClient(t, b.url)
	pb, err := cb.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err) // B loads the topic: its managed-ledger open fences A's ledger
	}
	for i := range 5 {
		id, err := pb.Send(ctx, &pulsar.ProducerMessage{Payload: fmt.Appendf(nil, "b-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		acked[fmt.Sprintf("b-%d", i)] = id
	}

	// A's producer keeps going through A.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 20 {
		payload := fmt.Sprintf("late-%d", i)
		wg.Add(1)
		pa.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte(payload)}, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer wg.Done()
			if err != nil {
				t.Errorf("late send %s: %v", payload, err)
				return
			}
			mu.Lock()
			acked[payload] = id
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range 20 {
		p := fmt.Sprintf("late-%d", i)
		if id, ok := acked[p]; ok && id.LedgerID() == staleLedger {
			t.Errorf("%s acknowledged in the fenced ledger %d: %v", p, staleLedger, id)
		}
	}
	if a.own.Holds(topic) {
		t.Error("A still believes it holds the bundle")
	}
	if a.s.topics.Loaded(mustParse(t, topic)) != nil {
		t.Error("A still serves the topic")
	}

	cons, err := cb.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "check",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	got := map[string]bool{}
	for len(got) < len(acked) {
		m, err := cons.Receive(rctx)
		if err != nil {
			t.Fatalf("consumed %d of %d acknowledged messages: %v", len(got), len(acked), err)
		}
		p := string(m.Payload())
		if id, ok := acked[p]; ok && !got[p] {
			if id.LedgerID() != m.ID().LedgerID() || id.EntryID() != m.ID().EntryID() {
				t.Errorf("%s acknowledged as %v, stored at %v", p, id, m.ID())
			}
			got[p] = true
		}
		_ = cons.Ack(m)
	}
}

func mustParse(t *testing.T, topic string) topics.Name {
	t.Helper()
	n, err := topics.ParseName(topic)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
