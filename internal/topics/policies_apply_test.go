package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/ledger"
	"github.com/magnetar-io/magnetar/internal/offload"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/wire"
)

// Each stored policy has an effect here, not just a record: topic policies over namespace
// policies over the broker's keys.

// recordingLedgers records the options of every ledger created.
type recordingLedgers struct {
	ledger.Client
	mu      sync.Mutex
	created []ledger.CreateOptions
}

func (r *recordingLedgers) Create(ctx context.Context, opts ledger.CreateOptions) (ledger.Writer, error) {
	r.mu.Lock()
	r.created = append(r.created, opts)
	r.mu.Unlock()
	return r.Client.Create(ctx, opts)
}

func (r *recordingLedgers) last() [3]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.created) == 0 {
		return [3]int{}
	}
	o := r.created[len(r.created)-1]
	return [3]int{o.EnsembleSize, o.WriteQuorum, o.AckQuorum}
}

func setNS(t *testing.T, b *memBackend, f func(*resources.Policies)) {
	t.Helper()
	must := resources.New(b.store).UpdateNamespace(ctxT(t), "public", "default", func(p *resources.Policies) error { f(p); return nil })
	if must != nil {
		t.Fatal(must)
	}
}

func setTopic(t *testing.T, b *memBackend, local string, f func(*resources.TopicPolicies)) {
	t.Helper()
	err := resources.New(b.store).UpdateTopicPolicies(ctxT(t), "persistent", "public", "default", local,
		func(p *resources.TopicPolicies) error { f(p); return nil })
	if err != nil {
		t.Fatal(err)
	}
}

// Persistence: the namespace's E/Qw/Qa is used for the first ledger of a topic loaded
// under it, a topic-level policy wins over it (applied on change, for the next ledger),
// and removing the topic's policy brings the namespace's back.
func TestPersistencePolicyAppliesToNewLedgers(t *testing.T) {
	b := newMemBackend(t)
	rec := &recordingLedgers{Client: b.ledgers}
	b.ledgers = rec
	setNS(t, b, func(p *resources.Policies) {
		p.Persistence = &resources.PersistencePolicies{BookkeeperEnsemble: 3, BookkeeperWriteQuorum: 3, BookkeeperAckQuorum: 2, ManagedLedgerMaxMarkDeleteRate: 7}
	})
	svc := b.start(t, nil)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/persist")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	publish(t, p, MessageSpec{Payload: []byte("x"), ProducerName: "p"})
	if got := rec.last(); got != [3]int{3, 3, 2} {
		t.Fatalf("first ledger E/Qw/Qa = %v, want the namespace's 3/3/2", got)
	}
	if r := tp.log.ml.Config().MarkDeleteRateLimit; r != 7 {
		t.Fatalf("mark-delete rate %v, want the namespace's 7", r)
	}

	setTopic(t, b, "persist", func(tp *resources.TopicPolicies) {
		tp.Persistence = &resources.PersistencePolicies{BookkeeperEnsemble: 2, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 1}
	})
	waitUntil(t, "topic persistence applied", func() bool { return tp.log.ml.Config().EnsembleSize == 2 })
	if err := svc.UnloadTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	tp, err = svc.Topic(ctx, name, Load{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.last(); got != [3]int{2, 2, 1} {
		t.Fatalf("ledger after reload E/Qw/Qa = %v, want the topic's 2/2/1", got)
	}
	setTopic(t, b, "persist", func(tp *resources.TopicPolicies) { tp.Persistence = nil })
	waitUntil(t, "namespace persistence back", func() bool { return tp.log.ml.Config().EnsembleSize == 3 })
}

// Max subscriptions per topic (namespace, overridden by the topic), max consumers per
// subscription (broker key), and the refusals' classes.
func TestSubscriptionAndConsumerLimits(t *testing.T) {
	b := newMemBackend(t)
	setNS(t, b, func(p *resources.Policies) { two := 2; p.MaxSubscriptionsPerTopic = &two })
	svc := b.start(t, func(c *config.BrokerConfig) { c.Policies.MaxConsumersPerSubscription = 1 })
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/sublimits")
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	sub := func(id uint64, s string) error {
		_, err := tp.Subscribe(ctx, ConsumerSpec{ID: id, Name: fmt.Sprint("c", id), Subscription: s, Type: Shared, Durable: true}, newFakeConsumer())
		return err
	}
	for i, s := range []string{"a", "b"} {
		if err := sub(uint64(i), s); err != nil {
			t.Fatal(err)
		}
	}
	if err := sub(3, "c"); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("third subscription: %v, want NotAllowed", err)
	}
	if err := svc.CreateSubscription(ctx, name, "d", Earliest); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("third subscription by admin: %v, want NotAllowed", err)
	}
	if err := sub(4, "a"); !errors.Is(err, wire.ErrConsumerBusy) {
		t.Fatalf("second consumer on a: %v, want ConsumerBusy (maxConsumersPerSubscription 1)", err)
	}
	setTopic(t, b, "sublimits", func(p *resources.TopicPolicies) {
		three, five := 3, 5
		p.MaxSubscriptionsPerTopic, p.MaxConsumersPerSubscription = &three, &five
	})
	waitUntil(t, "topic limits applied", func() bool { return tp.pol.get().maxSubscriptions == 3 })
	if err := sub(5, "c"); err != nil {
		t.Fatalf("third subscription under the topic's limit 3: %v", err)
	}
	if err := sub(6, "a"); err != nil {
		t.Fatalf("second consumer under the topic's limit 5: %v", err)
	}
	if err := sub(7, "e"); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("fourth subscription: %v, want NotAllowed", err)
	}
}

// maxUnackedMessagesOnConsumer: a consumer with permits stops receiving at the topic's
// limit and receives again after an ack; removing the policy brings the broker's back.
func TestMaxUnackedPolicy(t *testing.T) {
	b := newMemBackend(t)
	setNS(t, b, func(p *resources.Policies) { n := 1; p.MaxUnackedPerConsumer = &n })
	svc := b.start(t, nil)
	ctx := ctxT(t)
	name := mustName(t, "persistent://public/default/unacked")
	setTopic(t, b, "unacked", func(p *resources.TopicPolicies) { n := 2; p.MaxUnackedMessagesOnConsumer = &n })
	tp, err := svc.Topic(ctx, name, Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	cc := newFakeConsumer()
	c, err := tp.Subscribe(ctx, ConsumerSpec{ID: 1, Name: "c", Subscription: "s", Type: Shared, Durable: true}, cc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tp.AddProducer(ctx, ProducerSpec{ID: 1, Name: "p"}, &fakeProducer{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		publish(t, p, MessageSpec{Payload: []byte(fmt.Sprint(i)), ProducerName: "p", SequenceID: int64(i)})
	}
	c.Flow(100)
	first := cc.next(t)
	cc.next(t)
	cc.nothing(t) // the topic's 2, not the namespace's 1 nor the broker's 50000
	if err := c.Ack(ctx, []AckID{{Position: first.e.Position}}, false); err != nil {
		t.Fatal(err)
	}
	cc.next(t)
	cc.nothing(t)
	setTopic(t, b, "unacked", func(p *resources.TopicPolicies) { p.MaxUnackedMessagesOnConsumer = nil })
	setNS(t, b, func(p *resources.Policies) { p.MaxUnackedPerConsumer = nil })
	cc.next(t) // the broker's limit: the rest comes
	cc.next(t)
}

// maxTopicsPerNamespace counts partitions one by one and refuses with NotAllowed.
func TestMaxTopicsPerNamespace(t *testing.T) {
	b := newMemBackend(t)
	setNS(t, b, func(p *resources.Policies) { n := 3; p.MaxTopicsPerNamespace = &n })
	svc := b.start(t, nil)
	ctx := ctxT(t)
	if err := svc.CreateTopic(ctx, mustName(t, "persistent://public/default/part"), 2); err != nil {
		t.Fatal(err)
	}
	if err := svc.CreateTopic(ctx, mustName(t, "persistent://public/default/big"), 2); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("2 more partitions over 3: %v, want NotAllowed", err)
	}
	if _, err := svc.Topic(ctx, mustName(t, "persistent://public/default/one"), Load{Create: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Topic(ctx, mustName(t, "persistent://public/default/two"), Load{Create: true}); !errors.Is(err, wire.ErrNotAllowed) {
		t.Fatalf("auto-created fourth topic: %v, want NotAllowed", err)
	}
}

// Offload policies reach the managed ledger's trigger (which offloads by it on its own,
// managedledger/ml_offload.go:offloadMaintenance): the namespace's legacy fields, its
// offload_policies over them, the topic's over both.
func TestOffloadPoliciesDriveTheTrigger(t *testing.T) {
	b := newMemBackend(t)
	i64 := func(v int64) *int64 { return &v }
	setNS(t, b, func(p *resources.Policies) {
		p.OffloadThreshold, p.OffloadThresholdInSeconds, p.OffloadDeletionLagMs = i64(1000), i64(60), i64(5)
	})
	svc := b.start(t, nil)
	ctx := ctxT(t)
	tp, err := svc.Topic(ctx, mustName(t, "persistent://public/default/off"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	trig := func() offload.Trigger { return tp.log.ml.Config().Offload }
	if g := trig(); g.ThresholdBytes != 1000 || g.ThresholdSeconds != 60 || g.DeletionLagMillis != 5 {
		t.Fatalf("legacy namespace fields: %+v", g)
	}
	setNS(t, b, func(p *resources.Policies) {
		p.OffloadPolicies = &resources.OffloadPolicies{ThresholdInBytes: i64(2000)}
	})
	waitUntil(t, "namespace offloadPolicies", func() bool { return trig().ThresholdBytes == 2000 && trig().ThresholdSeconds == 60 })
	bucket := "topic-bucket"
	setTopic(t, b, "off", func(p *resources.TopicPolicies) {
		p.OffloadPolicies = &resources.OffloadPolicies{ThresholdInBytes: i64(0), DeletionLagInMillis: i64(-1), S3Bucket: &bucket}
	})
	waitUntil(t, "topic offloadPolicies", func() bool { return trig().ThresholdBytes == 0 && trig().DeletionLagMillis == -1 })
	// The driver settings reach the managed ledger, whose factory picks the offloader by
	// them (managedledger/ml_offload.go:acquireOffloader).
	if got := tp.log.ml.Config().OffloadPolicies; got.S3Bucket == nil || *got.S3Bucket != bucket || *got.ThresholdInBytes != 0 {
		t.Fatalf("managed ledger's offload policies: %+v", got)
	}
}

// The publish rate: a window's budget then a pause until the window ends; the topic's
// publishRate over the namespace's for this cluster over the broker's key.
func TestPublishRatePolicy(t *testing.T) {
	now := time.Unix(1000, 0)
	r := publishRate{now: func() time.Time { return now }}
	if d := r.take(100, 1<<20); d != 0 {
		t.Fatalf("unlimited: pause %v", d)
	}
	r.set(3, 0)
	r.take(1, 10)
	if d := r.take(1, 10); d != 0 {
		t.Fatalf("2 of 3: pause %v", d)
	}
	now = now.Add(300 * time.Millisecond)
	if d := r.take(1, 10); d != 700*time.Millisecond {
		t.Fatalf("3 of 3: pause %v, want the rest of the window", d)
	}
	now = now.Add(700 * time.Millisecond)
	if d := r.take(1, 10); d != 0 {
		t.Fatalf("next window: pause %v", d)
	}
	r.set(0, 100)
	if d := r.take(1, 150); d <= 0 {
		t.Fatalf("over the byte rate: pause %v", d)
	}

	b := newMemBackend(t)
	setNS(t, b, func(p *resources.Policies) {
		p.PublishMaxMessageRate = map[string]resources.PublishRate{"standalone": {RateInMsg: 50}, "elsewhere": {RateInMsg: 1}}
	})
	svc := b.start(t, func(c *config.BrokerConfig) { c.Policies.MaxPublishRatePerTopicInMessages = 1000 })
	tp, err := svc.Topic(ctxT(t), mustName(t, "persistent://public/default/rate"), Load{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	limit := func() int64 {
		tp.pol.pubRate.mu.Lock()
		defer tp.pol.pubRate.mu.Unlock()
		return tp.pol.pubRate.maxMsgs
	}
	if l := limit(); l != 50 {
		t.Fatalf("rate %d, want the namespace's for this cluster, 50", l)
	}
	setTopic(t, b, "rate", func(p *resources.TopicPolicies) { p.PublishRate = &resources.PublishRate{RateInMsg: 7} })
	waitUntil(t, "the topic's rate", func() bool { return limit() == 7 })
	setTopic(t, b, "rate", func(p *resources.TopicPolicies) { p.PublishRate = nil })
	setNS(t, b, func(p *resources.Policies) { p.PublishMaxMessageRate = nil })
	waitUntil(t, "the broker's rate", func() bool { return limit() == 1000 })
}
