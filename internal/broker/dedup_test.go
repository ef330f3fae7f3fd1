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
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// restartableStack is a broker that can be stopped and started again on the same metadata
// store and ledgers (the real stack unless MAGNETAR_BROKER_TEST_BACKEND=memory).
type restartableStack struct {
	t       *testing.T
	store   metadata.Store
	ledgers ledger.Client
	mutate  func(*config.BrokerConfig)
	mlMod   func(*config.ManagedLedgerConfig)
	s       *Server
	f       *managedledger.Factory
	url     string
}

func newRestartableStack(t *testing.T, mutate func(*config.BrokerConfig)) *restartableStack {
	logger := testLogger(t)
	store, ledgers := newTestStorage(t, logger)
	bootstrapNamespaces(t, store)
	rs := &restartableStack{t: t, store: store, ledgers: ledgers, mutate: mutate}
	rs.start()
	t.Cleanup(rs.stop)
	return rs
}

func (rs *restartableStack) start() {
	t := rs.t
	logger := testLogger(t)
	mlCfg := config.DefaultManagedLedgerConfig()
	mlCfg.EnsembleSize, mlCfg.WriteQuorum, mlCfg.AckQuorum = 1, 1, 1
	if rs.mlMod != nil {
		rs.mlMod(&mlCfg)
	}
	f, err := managedledger.NewFactory(managedledger.FactoryOptions{Ledger: rs.ledgers, Store: rs.store, Config: mlCfg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.DefaultBrokerConfig()
	cfg.BindAddress, cfg.AdvertisedAddress, cfg.ServicePort = "127.0.0.1", "127.0.0.1", 0
	cfg.MaxMessageSize = 1 << 20
	if rs.mutate != nil {
		rs.mutate(&cfg)
	}
	s := newTestServer(t, cfg, rs.store, f, logger, nil, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	rs.s, rs.f, rs.url = s, f, "pulsar://"+ln.Addr().String()
}

func (rs *restartableStack) stop() {
	if rs.s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := closeServer(ctx, rs.s); err != nil {
		rs.t.Error(err)
	}
	if err := rs.f.Close(ctx); err != nil {
		rs.t.Error(err)
	}
	rs.s = nil
}

func (rs *restartableStack) restart() {
	rs.stop()
	rs.start()
}

// sendSeq sends one message per sequence id with SendAsync and returns the message ids.
func sendSeq(t *testing.T, p pulsar.Producer, seqs []int64) []pulsar.MessageID {
	t.Helper()
	ids := make([]pulsar.MessageID, len(seqs))
	errs := make([]error, len(seqs))
	var wg sync.WaitGroup
	for i, s := range seqs {
		wg.Add(1)
		seq := s
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint("m-", seq)), SequenceID: &seq},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				ids[i], errs[i] = id, err
				wg.Done()
			})
	}
	if err := p.FlushWithCtx(context.Background()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("send seq %d: %v", seqs[i], err)
		}
	}
	return ids
}

func sendAuto(t *testing.T, p pulsar.Producer, payload string) {
	t.Helper()
	if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func setNamespaceDedup(t *testing.T, store metadata.Store, on bool) {
	t.Helper()
	err := resources.New(store).UpdateNamespace(context.Background(), "public", "default", func(p *resources.Policies) error {
		p.DeduplicationEnabled = &on
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDeduplicationAcrossRestart: with deduplication on, resent sequence ids are answered
// with (-1, -1) and not stored, before and after a broker restart (clean close: final
// snapshot; "crash": snapshot skipped, state rebuilt by replay), and PRODUCER_SUCCESS
// carries the last persisted sequence id.
func TestDeduplicationAcrossRestart(t *testing.T) {
	if testBackend() == "memory" {
		t.Skip("deduplication persistence needs the managed ledger")
	}
	rs := newRestartableStack(t, func(c *config.BrokerConfig) {
		c.Policies.BrokerDeduplicationEntriesInterval = 4
	})
	setNamespaceDedup(t, rs.store, true)
	topic := "persistent://public/default/dedup-restart"
	client := newClient(t, rs.url)
	sub, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.LastSequenceID(); got != -1 {
		t.Fatalf("first producer LastSequenceID %d, want -1", got)
	}
	sendSeq(t, p, seqRange(0, 9))
	ids := sendSeq(t, p, seqRange(5, 12)) // 5..9 are duplicates
	for i, id := range ids {
		dup := i < 5
		if isDup := id.LedgerID() == -1 && id.EntryID() == -1; isDup != dup {
			t.Fatalf("resend seq %d: id %v, duplicate=%v want %v", 5+i, id, isDup, dup)
		}
	}
	p.Close()
	client.Close()

	rs.restart() // clean: the final snapshot covers everything
	client = newClient(t, rs.url)
	p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	// The client numbers its next message from PRODUCER_SUCCESS.last_sequence_id + 1.
	sendAuto(t, p, "m-13")
	if got := p.LastSequenceID(); got != 13 {
		t.Fatalf("sequence id after restart %d, want 13", got)
	}
	ids = sendSeq(t, p, seqRange(10, 15)) // 10..13 duplicates
	for i, id := range ids {
		if isDup := id.LedgerID() == -1; isDup != (i < 4) {
			t.Fatalf("after restart seq %d: id %v", 10+i, id)
		}
	}
	p.Close()
	client.Close()

	// Restart again: the state comes back from the snapshot (the replay of the entries after a
	// snapshot that was lost is internal/topics' TestDedupReplaysAfterLostSnapshot).
	name, _ := topics.ParseName(topic)
	rs.restart()
	client = newClient(t, rs.url)
	defer client.Close()
	p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	sendAuto(t, p, "m-16")
	if got := p.LastSequenceID(); got != 16 {
		t.Fatalf("sequence id after replay %d, want 16", got)
	}
	sendSeq(t, p, seqRange(14, 17))
	p.Close()

	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := receive(t, c, 18, true)
	for i, m := range got {
		if want := fmt.Sprint("m-", i); string(m.Payload()) != want {
			t.Fatalf("message %d = %q, want %q", i, m.Payload(), want)
		}
	}
	expectNothing(t, c)
	// The deduplication cursor is not a subscription.
	st, err := rs.s.topics.TopicStats(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Subscriptions["pulsar.dedup"]; ok {
		t.Fatalf("stats list the deduplication cursor: %+v", st.Subscriptions)
	}
}

// TestDeduplicationToggledOnLiveTopic: turning the namespace policy on and off applies to a
// loaded topic without restart; with it off, resends are stored again.
func TestDeduplicationToggledOnLiveTopic(t *testing.T) {
	if testBackend() == "memory" {
		t.Skip("needs the managed ledger")
	}
	b := startBroker(t, nil)
	topic := "persistent://public/default/dedup-toggle"
	client := newClient(t, b.url)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "prod", DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sendSeq(t, p, []int64{0, 1})
	if id := sendSeq(t, p, []int64{1})[0]; id.LedgerID() == -1 {
		t.Fatal("duplicate detected while deduplication is off")
	}
	name, _ := topics.ParseName(topic)
	setNamespaceDedup(t, b.store, true)
	waitUntil(t, "dedup on", func() bool {
		lt := b.s.topics.Loaded(name)
		return lt != nil && lt.DeduplicationEnabled()
	})
	sendSeq(t, p, []int64{2})
	if id := sendSeq(t, p, []int64{2})[0]; id.LedgerID() != -1 {
		t.Fatalf("resend with deduplication on stored as %v", id)
	}
	// (That the tracked producers stay bounded on a live topic is internal/topics'
	// TestDedupProducersBounded.)
	lt := b.s.topics.Loaded(name)
	setNamespaceDedup(t, b.store, false)
	waitUntil(t, "dedup off", func() bool { return !lt.DeduplicationEnabled() })

	// Retention set on the namespace reaches the live topic's managed ledger.
	err = resources.New(b.store).UpdateNamespace(context.Background(), "public", "default", func(p *resources.Policies) error {
		p.RetentionPolicies = &resources.RetentionPolicies{RetentionTimeInMinutes: 60, RetentionSizeInMB: -1}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ml, err := b.f.Open(context.Background(), name.ManagedLedgerName(), b.f.DefaultConfig()) // the topic's, already open
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "retention applied", func() bool {
		cfg := ml.Config()
		return cfg.RetentionTime == time.Hour && cfg.RetentionSizeBytes == -1
	})
	if id := sendSeq(t, p, []int64{2})[0]; id.LedgerID() == -1 {
		t.Fatal("duplicate detected after deduplication was turned off")
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeduplicationWithBatches: batches from the Go client (which sends no highest sequence
// id) are deduplicated as a whole, and the highest id of the last batch survives a restart.
func TestDeduplicationWithBatches(t *testing.T) {
	if testBackend() == "memory" {
		t.Skip("deduplication persistence needs the managed ledger")
	}
	rs := newRestartableStack(t, func(c *config.BrokerConfig) { c.Policies.BrokerDeduplicationEnabled = true })
	topic := "persistent://public/default/dedup-batches"
	opts := pulsar.ProducerOptions{Topic: topic, Name: "batcher", BatchingMaxMessages: 5, BatchingMaxPublishDelay: time.Second}
	client := newClient(t, rs.url)
	sub, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sub.Close()
	p, err := client.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range sendSeq(t, p, seqRange(0, 19)) {
		if id.LedgerID() == -1 {
			t.Fatalf("first send answered as a duplicate: %v", id)
		}
	}
	for i, id := range sendSeq(t, p, seqRange(0, 19)) {
		if id.LedgerID() != -1 {
			t.Fatalf("resent seq %d stored again as %v", i, id)
		}
	}
	p.Close()
	client.Close()

	rs.restart()
	client = newClient(t, rs.url)
	defer client.Close()
	p, err = client.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	sendAuto(t, p, "m-20")
	if got := p.LastSequenceID(); got != 20 {
		t.Fatalf("sequence id after restart %d, want 20", got)
	}
	p.Close()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, m := range receive(t, c, 21, true) {
		if want := fmt.Sprint("m-", i); string(m.Payload()) != want {
			t.Fatalf("message %d = %q, want %q", i, m.Payload(), want)
		}
	}
	expectNothing(t, c)
}
