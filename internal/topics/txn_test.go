package topics

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/magnetar-io/magnetar/internal/auth"
	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/txn"
	"github.com/magnetar-io/magnetar/internal/wire"
)

func txnOn(c *config.BrokerConfig) { c.Transaction.CoordinatorEnabled = true }

// publishTxn stores one message within transaction id.
func publishTxn(t *testing.T, p *Producer, payload string, seq int64, id TxnID) Position {
	t.Helper()
	m, err := BuildMessage(MessageSpec{Payload: []byte(payload), ProducerName: p.Name(), SequenceID: seq})
	if err != nil {
		t.Fatal(err)
	}
	m.Txn = &id
	done := make(chan error, 1)
	var pos Position
	if err := p.Publish(m, func(ps Position, err error) { pos = ps; done <- err }); err != nil {
		t.Fatalf("transactional publish %s: %v", payload, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return pos
}

func expectAt(t *testing.T, cc *fakeConsumer, want ...Position) {
	t.Helper()
	for _, w := range want {
		if d := cc.next(t); d.e.Position != w {
			t.Fatalf("delivered %s, want %s", d.e.Position, w)
		}
	}
}

// The topic service's side of transactions, on the real managed ledger: a transaction's
// entries (and everything after them) are invisible until its commit marker is durable;
// an aborted transaction's entries are never delivered and hold no backlog; transactional
// acknowledgements are held, conflict with other transactions', are applied by a commit
// and released by an abort; a restart brings back an open transaction's hold.
func TestTxnBufferAndPendingAcksOnTopics(t *testing.T) {
	be := newMemBackend(t)
	svc := be.start(t, txnOn)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/txn")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeConsumer()
	c, err := tp.Subscribe(ctx, ConsumerSpec{ID: 1, Name: "c", Subscription: "s", Type: Exclusive, Durable: true, InitialEarliest: true}, cc)
	if err != nil {
		t.Fatal(err)
	}
	c.Flow(1000)
	a, b := TxnID{Most: 0, Least: 1}, TxnID{Most: 0, Least: 2}
	m0 := publish(t, p, MessageSpec{Payload: []byte("m0"), ProducerName: "p", SequenceID: 0})
	expectAt(t, cc, m0)
	a1 := publishTxn(t, p, "a1", 1, a)
	m1 := publish(t, p, MessageSpec{Payload: []byte("m1"), ProducerName: "p", SequenceID: 2})
	cc.nothing(t) // a is open: a1 and everything after it wait
	if err := svc.EndTxnOnPartition(ctx, name, a, true, 0); err != nil {
		t.Fatal(err)
	}
	expectAt(t, cc, a1, m1)

	b1 := publishTxn(t, p, "b1", 3, b)
	if err := svc.EndTxnOnPartition(ctx, name, b, false, 0); err != nil {
		t.Fatal(err)
	}
	m2 := publish(t, p, MessageSpec{Payload: []byte("m2"), ProducerName: "p", SequenceID: 4})
	expectAt(t, cc, m2) // b1 and both markers are skipped
	if last, _, err := tp.LastMessageID(ctx); err != nil || last != m2 {
		t.Fatalf("last message id %s (%v), want %s", last, err, m2)
	}
	if err := c.Ack(ctx, []AckID{{Position: m0}, {Position: a1}, {Position: m1}}, false); err != nil {
		t.Fatal(err)
	}

	// Pending acknowledgements: c1 holds m2, c2 conflicts, c1's abort redelivers it; c3
	// commits its acknowledgement.
	c1, c2, c3 := TxnID{Most: 0, Least: 3}, TxnID{Most: 0, Least: 4}, TxnID{Most: 0, Least: 5}
	if err := c.AckTxn(ctx, []AckID{{Position: m2}}, false, &c1); err != nil {
		t.Fatal(err)
	}
	if err := c.AckTxn(ctx, []AckID{{Position: m2}}, false, &c2); !errors.Is(err, wire.ErrTransactionConflict) {
		t.Fatalf("conflicting acknowledgement: %v", err)
	}
	if err := svc.EndTxnOnSubscription(ctx, name, "s", c1, false, 0); err != nil {
		t.Fatal(err)
	}
	expectAt(t, cc, m2)
	if err := c.AckTxn(ctx, []AckID{{Position: m2}}, true, &c3); err != nil {
		t.Fatal(err)
	}
	if st := tp.Stats(); st.Subscriptions["s"].MsgBacklog == 0 {
		t.Fatal("a pending acknowledgement acknowledged before its commit")
	}
	if err := svc.EndTxnOnSubscription(ctx, name, "s", c3, true, 0); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "backlog 0 after the commit", func() bool { return tp.Stats().Subscriptions["s"].MsgBacklog == 0 })
	if n := len(cc.got); n != 0 {
		t.Fatalf("%d deliveries left; b1 at %s must never be one", n, b1)
	}

	// An open transaction survives a restart: its entry and what follows stay hidden.
	d := TxnID{Most: 0, Least: 6}
	d1 := publishTxn(t, p, "d1", 5, d)
	m3 := publish(t, p, MessageSpec{Payload: []byte("m3"), ProducerName: "p", SequenceID: 6})
	cc.nothing(t)
	if last, _, err := tp.LastMessageID(ctx); err != nil || !last.Less(d1) {
		t.Fatalf("last message id %s (%v) while %s is open", last, err, d1)
	}
	svc.stop()
	svc = be.start(t, txnOn)
	tp, err = svc.Topic(ctx, name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	cc = newFakeConsumer()
	c, err = tp.Subscribe(ctx, ConsumerSpec{ID: 1, Name: "c", Subscription: "s", Type: Exclusive, Durable: true}, cc)
	if err != nil {
		t.Fatal(err)
	}
	c.Flow(1000)
	cc.nothing(t)
	if err := svc.EndTxnOnPartition(ctx, name, d, true, 0); err != nil {
		t.Fatal(err)
	}
	expectAt(t, cc, d1, m3)
	_ = c
}

func mustTxnMsg(t *testing.T, p *Producer, id TxnID) Message {
	t.Helper()
	m, err := BuildMessage(MessageSpec{Payload: []byte("late"), ProducerName: p.Name(), SequenceID: 100})
	if err != nil {
		t.Fatal(err)
	}
	m.Txn = &id
	return m
}

// A late publish of an aborted transaction is refused (it would open a transaction nobody
// ends); transactions on a service without them are refused as before.
func TestTxnRefusals(t *testing.T) {
	svc := newMemBackend(t).start(t, txnOn)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/txn-refuse")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	id := TxnID{Most: 0, Least: 9}
	publishTxn(t, p, "x", 0, id)
	if err := svc.EndTxnOnPartition(ctx, name, id, false, 0); err != nil {
		t.Fatal(err)
	}
	err = p.Publish(mustTxnMsg(t, p, id), func(Position, error) { t.Error("done called for a refused publish") })
	if !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("late publish of an aborted transaction: %v", err)
	}
	if err := svc.EndTxnOnPartition(ctx, name, id, true, 0); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("commit after abort: %v", err)
	}
	if err := svc.EndTxnOnSubscription(ctx, name, "nope", id, true, 0); !errors.Is(err, wire.ErrSubscriptionNotFound) {
		t.Fatalf("end on a missing subscription: %v", err)
	}
	np, err := svc.Topic(ctx, mustName(t, "non-persistent://public/default/np"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	npp, err := np.AddProducer(ctx, ProducerSpec{ID: 2, Name: "q"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := npp.Publish(mustTxnMsg(t, npp, id), nil); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("transaction on a non-persistent topic: %v", err)
	}
}

// TestTxnReaderGivesWhatConsumersGet: the read-only Reader skips markers and entries of
// aborted transactions (reading ahead past them for HasMore) and stops before an open
// transaction's first entry until it commits.
func TestTxnReaderGivesWhatConsumersGet(t *testing.T) {
	be := newMemBackend(t)
	svc := be.start(t, txnOn)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/txn-reader")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	committed, aborted, open := TxnID{Most: 0, Least: 1}, TxnID{Most: 0, Least: 2}, TxnID{Most: 0, Least: 3}
	m0 := publish(t, p, MessageSpec{Payload: []byte("m0"), ProducerName: "p", SequenceID: 0})
	c1 := publishTxn(t, p, "c1", 1, committed)
	publishTxn(t, p, "a1", 2, aborted)
	if err := svc.EndTxnOnPartition(ctx, name, committed, true, 0); err != nil {
		t.Fatal(err)
	}
	if err := svc.EndTxnOnPartition(ctx, name, aborted, false, 0); err != nil {
		t.Fatal(err)
	}
	r, err := tp.NewReader(ctx, Earliest)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	readAll := func() []Position {
		t.Helper()
		var got []Position
		for r.HasMore() {
			es, err := r.Read(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				got = append(got, e.Position)
			}
		}
		return got
	}
	check := func(got []Position, want ...Position) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("read %v, want %v", got, want)
		}
	}
	// The log ends with the two markers: HasMore reads past them and says no.
	check(readAll(), m0, c1)
	m1 := publish(t, p, MessageSpec{Payload: []byte("m1"), ProducerName: "p", SequenceID: 3})
	o1 := publishTxn(t, p, "o1", 4, open)
	m2 := publish(t, p, MessageSpec{Payload: []byte("m2"), ProducerName: "p", SequenceID: 5})
	check(readAll(), m1)
	if err := svc.EndTxnOnPartition(ctx, name, open, true, 0); err != nil {
		t.Fatal(err)
	}
	check(readAll(), o1, m2)

	// A reader moved back reads the same again.
	r.Seek(Earliest)
	check(readAll(), m0, c1, m1, o1, m2)
}

// noGrants is a policy source that grants nothing to anyone.
type noGrants struct{}

func (noGrants) Tenant(context.Context, string) (auth.TenantPolicy, error) {
	return auth.TenantPolicy{}, nil
}

func (noGrants) Namespace(context.Context, string, string) (auth.NamespacePolicy, error) {
	return auth.NamespacePolicy{}, nil
}

// TestTxnAssignTopicLookupNeedsNoGrant: any authenticated role may look up the
// coordinators' assign topic (a transactional client must), nothing else of pulsar/system.
func TestTxnAssignTopicLookupNeedsNoGrant(t *testing.T) {
	zcfg := config.DefaultAuthorizationConfig()
	zcfg.Enabled = true
	a, err := auth.NewAuthorizer(zcfg, noGrants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	authz := NewAuthorizer(a)
	ctx := WithPrincipal(context.Background(), auth.Principal{Role: "tenant-user"})
	ask := func(action Action, topic string) error {
		return authz.Authorize(ctx, Request{Principal: PrincipalFrom(ctx), Action: action, Topic: mustName(t, topic)})
	}
	if err := ask(ActionLookup, txn.AssignPartition(3)); err != nil {
		t.Fatalf("lookup of the assign topic: %v", err)
	}
	if err := ask(ActionConsume, txn.AssignPartition(3)); err == nil {
		t.Fatal("consuming the assign topic is allowed")
	}
	if err := ask(ActionLookup, "persistent://pulsar/system/other"); err == nil {
		t.Fatal("lookup of another pulsar/system topic is allowed")
	}
}
