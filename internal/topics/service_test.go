package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
)

// fakeProducer is a front end's producer client that records what the service told it.
type fakeProducer struct {
	mu           sync.Mutex
	granted      int
	disconnected int
	refused      error
}

func (p *fakeProducer) Granted(*Producer) { p.mu.Lock(); p.granted++; p.mu.Unlock() }
func (p *fakeProducer) Disconnect()       { p.mu.Lock(); p.disconnected++; p.mu.Unlock() }
func (p *fakeProducer) Refuse(err error)  { p.mu.Lock(); p.refused = err; p.mu.Unlock() }
func (p *fakeProducer) Alive() bool       { return true }
func (p *fakeProducer) Address() string   { return "fake:1" }
func (p *fakeProducer) Version() string   { return "fake" }

// fakeConsumer is a front end's consumer client: deliveries go to a channel.
type fakeConsumer struct {
	got          chan delivery
	mu           sync.Mutex
	disconnected bool
}

type delivery struct {
	e            Entry
	redeliveries uint32
	count        int
}

func newFakeConsumer() *fakeConsumer { return &fakeConsumer{got: make(chan delivery, 1000)} }

func (c *fakeConsumer) Send(e Entry, redeliveries uint32, count int, _ []int64) {
	c.got <- delivery{e, redeliveries, count}
}
func (c *fakeConsumer) ActiveChanged(bool) {}
func (c *fakeConsumer) Disconnect()        { c.mu.Lock(); c.disconnected = true; c.mu.Unlock() }
func (c *fakeConsumer) Address() string    { return "fake:2" }

func (c *fakeConsumer) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-c.got:
		return d
	case <-time.After(waitFor):
		t.Fatal("no delivery")
		return delivery{}
	}
}

func (c *fakeConsumer) nothing(t *testing.T) {
	t.Helper()
	select {
	case d := <-c.got:
		t.Fatalf("unexpected delivery of %v", d.e.Position)
	case <-time.After(100 * time.Millisecond):
	}
}

// publish stores one message built from spec and waits for its position.
func publish(t *testing.T, p *Producer, spec MessageSpec) Position {
	t.Helper()
	m, err := BuildMessage(spec)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var pos Position
	if err := p.Publish(m, func(ps Position, err error) { pos = ps; done <- err }); err != nil {
		t.Fatalf("publish %d: %v", spec.SequenceID, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return pos
}

// The service without any wire protocol: a message built by BuildMessage (as a non-Pulsar
// front end would) is stored, dispatched with its metadata to a consumer with permits,
// redelivered after a negative ack, and gone after the ack; a reader sees it as stored.
func TestPublishDispatchAckWithoutAProtocol(t *testing.T) {
	svc := newMemBackend(t).start(t, nil)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/plain")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	pc := &fakeProducer{}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "kafka-1"}, pc)
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeConsumer()
	c, err := tp.Subscribe(ctx, ConsumerSpec{ID: 7, Name: "c", Subscription: "s", Type: Shared, Durable: true}, cc)
	if err != nil {
		t.Fatal(err)
	}
	var ps []Position
	for i := 0; i < 3; i++ {
		ps = append(ps, publish(t, p, MessageSpec{Payload: []byte(fmt.Sprint("m", i)), Key: "k", ProducerName: p.Name(),
			SequenceID: int64(i), Properties: map[string]string{"h": "v"}}))
	}
	cc.nothing(t) // no permits yet
	c.Flow(10)
	for i := 0; i < 3; i++ {
		d := cc.next(t)
		if d.e.Position != ps[i] || d.count != 1 || d.e.Meta.Key != "k" || !d.e.Meta.Parsed {
			t.Fatalf("delivery %d: %+v", i, d)
		}
	}
	c.Redeliver([]Position{ps[1]})
	if d := cc.next(t); d.e.Position != ps[1] || d.redeliveries != 1 {
		t.Fatalf("redelivery: %+v", d)
	}
	if err := c.Ack(ctx, []AckID{{Position: ps[0]}, {Position: ps[1]}, {Position: ps[2]}}, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "backlog 0", func() bool { st := tp.Stats(); return st.Subscriptions["s"].MsgBacklog == 0 })
	st := tp.Stats()
	if len(st.Publishers) != 1 || st.Publishers[0].ProducerName != "kafka-1" || st.Publishers[0].ProducerID != 1 ||
		st.MsgInCounter != 3 || len(st.Subscriptions["s"].Consumers) != 1 {
		t.Fatalf("stats %+v", st)
	}

	r, err := tp.NewReader(ctx, Earliest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	es, err := r.Read(ctx, 10)
	if err != nil || len(es) != 3 || es[2].Position != ps[2] || es[0].Meta.Key != "k" {
		t.Fatalf("reader: %v %v", es, err)
	}
	if r.HasMore() {
		t.Fatal("reader has more after the last entry")
	}
	r.Seek(ps[1])
	if es, err := r.Read(ctx, 10); err != nil || len(es) != 2 || es[0].Position != ps[1] {
		t.Fatalf("reader after seek: %v %v", es, err)
	}

	c.Close()
	p.Close()
	if pc.disconnected != 0 {
		t.Fatal("a producer that closed itself was disconnected")
	}
}

// TestAccessModesWithoutAProtocol: an exclusive producer fences shared ones out, a
// WaitForExclusive one waits and is granted the topic when the holder leaves.
func TestAccessModesWithoutAProtocol(t *testing.T) {
	svc := newMemBackend(t).start(t, nil)
	ctx := ctxT(t)
	tp, err := svc.Topic(ctx, mustName(t, "persistent://public/default/modes"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := tp.AddProducer(ctx, ProducerSpec{Name: "ex", Mode: ExclusiveAccess}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.AddProducer(ctx, ProducerSpec{Name: "sh"}, &fakeProducer{}); !errors.Is(err, ErrProducerBusy) {
		t.Fatalf("shared next to exclusive: %v", err)
	}
	wc := &fakeProducer{}
	w, err := tp.AddProducer(ctx, ProducerSpec{Name: "w", Mode: WaitForExclusive}, wc)
	if !errors.Is(err, ErrProducerWaiting) || w == nil || w.Ready() || tp.WaitingProducers() != 1 {
		t.Fatalf("waiting producer: %v %v", w, err)
	}
	epoch := ex.TopicEpoch()
	ex.Close()
	if !w.Ready() || wc.granted != 1 || w.TopicEpoch() <= epoch {
		t.Fatalf("waiter not granted: ready %v granted %d epoch %d", w.Ready(), wc.granted, w.TopicEpoch())
	}
}

// TestHooks: the authorizer sees the principal of the call and its refusal stops it;
// transactional publishes and acks are refused while transactions are not plugged in.
func TestHooks(t *testing.T) {
	svc := newMemBackend(t).start(t, nil)
	var mu sync.Mutex
	var asked []string
	svc.authz = AuthorizerFunc(func(_ context.Context, r Request) error {
		mu.Lock()
		asked = append(asked, r.Principal.Role+" "+r.Action.String()+" "+r.Topic.Local+r.Subscription)
		mu.Unlock()
		if r.Principal.Role == "mallory" {
			return fmt.Errorf("%w: %s may not %s", ErrAuthorization, r.Principal, r.Action)
		}
		return nil
	})
	name := mustName(t, "persistent://public/default/hooks")
	ctx := WithPrincipal(ctxT(t), auth.Principal{Role: "alice"})
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	bad := WithPrincipal(ctxT(t), auth.Principal{Role: "mallory"})
	if _, err := tp.AddProducer(bad, ProducerSpec{Name: "q"}, &fakeProducer{}); !errors.Is(err, ErrAuthorization) {
		t.Fatalf("mallory produced: %v", err)
	}
	if _, err := tp.Subscribe(bad, ConsumerSpec{Subscription: "s", Durable: true}, newFakeConsumer()); !errors.Is(err, ErrAuthorization) {
		t.Fatalf("mallory subscribed: %v", err)
	}
	mu.Lock()
	got := fmt.Sprint(asked)
	mu.Unlock()
	if got != "[alice lookup hooks alice produce hooks mallory produce hooks mallory consume hookss]" {
		t.Fatalf("authorizer asked %s", got)
	}
	m, err := BuildMessage(MessageSpec{Payload: []byte("x"), ProducerName: "p"})
	if err != nil {
		t.Fatal(err)
	}
	m.Txn = &TxnID{Most: 1, Least: 2}
	if err := p.Publish(m, func(Position, error) { t.Error("done called for a refused publish") }); !errors.Is(err, ErrTransactionsDisabled) {
		t.Fatalf("transactional publish: %v", err)
	}
	c, err := tp.Subscribe(ctx, ConsumerSpec{Subscription: "s", Durable: true}, newFakeConsumer())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AckTxn(ctx, []AckID{{Position: Position{LedgerID: 1}}}, false, &TxnID{Most: 1, Least: 2}); !errors.Is(err, ErrTransactionsDisabled) {
		t.Fatalf("transactional ack: %v", err)
	}
}

// setDedup turns deduplication on or off in the namespace policies.
func setDedup(t *testing.T, svc *testService, on bool) {
	t.Helper()
	err := resources.New(svc.store).UpdateNamespace(ctxT(t), "public", "default", func(p *resources.Policies) error {
		p.DeduplicationEnabled = &on
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDedupReplaysAfterLostSnapshot: when the deduplication snapshot did not make it (a
// crash), the next load replays the entries after the snapshot cursor, so resends are still
// recognised.
func TestDedupReplaysAfterLostSnapshot(t *testing.T) {
	b := newMemBackend(t)
	svc := b.start(t, nil)
	setDedup(t, svc, true)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/dedup-replay")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{Name: "prod"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		publish(t, p, MessageSpec{Payload: []byte("x"), ProducerName: "prod", SequenceID: int64(i)})
	}
	// "Crash": no snapshot is taken from now on, so the cursor stays behind.
	tp.dedup.mu.Lock()
	tp.dedup.cursor = nil
	tp.dedup.mu.Unlock()
	for i := 5; i < 8; i++ {
		publish(t, p, MessageSpec{Payload: []byte("x"), ProducerName: "prod", SequenceID: int64(i)})
	}
	svc.stop()

	svc = b.start(t, nil)
	tp, err = svc.Topic(ctx, name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	p, err = tp.AddProducer(ctx, ProducerSpec{Name: "prod"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.LastSequenceID(); got != 7 {
		t.Fatalf("last sequence id after the replay %d, want 7", got)
	}
	m, _ := BuildMessage(MessageSpec{Payload: []byte("x"), ProducerName: "prod", SequenceID: 6})
	if err := p.Publish(m, func(Position, error) {}); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("resend after the replay: %v", err)
	}
}

// TestDedupProducersBounded: on a live topic the producers deduplication tracks stay within
// brokerDeduplicationMaxNumberOfProducers (least recently used forgotten).
func TestDedupProducersBounded(t *testing.T) {
	svc := newMemBackend(t).start(t, func(c *config.BrokerConfig) {
		c.Policies.BrokerDeduplicationMaxNumberOfProducers = 2
	})
	setDedup(t, svc, true)
	ctx := ctxT(t)
	tp, err := svc.Topic(ctx, mustName(t, "persistent://public/default/dedup-bound"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "dedup on", tp.DeduplicationEnabled)
	for i := 0; i < 4; i++ {
		name := fmt.Sprint("other-", i)
		p, err := tp.AddProducer(ctx, ProducerSpec{Name: name}, &fakeProducer{})
		if err != nil {
			t.Fatal(err)
		}
		publish(t, p, MessageSpec{Payload: []byte("x"), ProducerName: name})
		p.Close()
	}
	tp.dedup.mu.Lock()
	n := len(tp.dedup.producers)
	tp.dedup.mu.Unlock()
	if n > 2 {
		t.Fatalf("tracking %d producers, limit 2", n)
	}
}
