package broker

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger/memledger"
	"github.com/magnetar-io/magnetar/internal/managedledger"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestBrokerRestartKeepsMessagesAndAcks closes a broker and starts a new one on the same
// metadata store and ledgers: stored messages, topic records and acknowledgements survive,
// and the subscription resumes after the last acknowledged message.
func TestBrokerRestartKeepsMessagesAndAcks(t *testing.T) {
	store := memstore.New(memstore.DefaultOptions())
	bootstrapNamespaces(t, store)
	ledgers := memledger.New()
	logger := testLogger(t)
	start := func() (*Server, *managedledger.Factory, string) {
		f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: ledgers, Store: store,
			Config: config.DefaultManagedLedgerConfig(), Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		cfg := config.DefaultBrokerConfig()
		cfg.BindAddress, cfg.AdvertisedAddress, cfg.AllowAutoTopicCreation = "127.0.0.1", "127.0.0.1", false
		s := newTestServer(t, cfg, store, f, logger, nil, nil)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = s.Serve(ln) }()
		return s, f, "pulsar://" + ln.Addr().String()
	}
	stop := func(s *Server, f *managedledger.Factory) {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := closeServer(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}

	s1, f1, url := start()
	name, _ := topics.ParseName("persistent://public/default/restart")
	if err := s1.topics.CreateTopic(context.Background(), name, 0); err != nil {
		t.Fatal(err)
	}
	client := newClient(t, url)
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: name.String(), SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: name.String(), DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	produce(t, p, "m", 10)
	receive(t, c, 4, true)
	c.Close() // flushes the acks
	p.Close()
	client.Close()
	stop(s1, f1)

	s2, f2, url2 := start()
	defer stop(s2, f2)
	client2 := newClient(t, url2)
	c2, err := client2.Subscribe(pulsar.ConsumerOptions{Topic: name.String(), SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err) // the topic record survived: auto-creation is off
	}
	defer c2.Close()
	got := receive(t, c2, 6, true)
	for i, m := range got {
		if want := fmt.Sprint("m-", i+4); string(m.Payload()) != want {
			t.Fatalf("after restart message %d = %q, want %q", i, m.Payload(), want)
		}
	}
	expectNothing(t, c2)
}

// TestPublishThrottlingNeverDrops sends far more than the per-connection publish budget:
// the broker pauses reading instead of dropping, and every message is stored.
func TestPublishThrottlingNeverDrops(t *testing.T) {
	b := startBroker(t, func(c *config.BrokerConfig) {
		c.MaxPendingPublishBytesPerConnection = int64(c.MaxMessageSize) // 1 MiB
		c.MaxMessagePublishBufferSizeMB = 1
	})
	client := newClient(t, b.url)
	topic := "persistent://public/default/throttle"
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 200 // 200 x 64 KiB = 12.5 MiB through a 1 MiB window
	payload := make([]byte, 64<<10)
	done := make(chan error, n)
	for i := 0; i < n; i++ {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- err })
	}
	for i := 0; i < n; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	receive(t, c, n, true)
	if used := b.s.publishMem.inUse(); used != 0 {
		t.Fatalf("broker still accounts %d pending publish bytes", used)
	}
}
