package broker

import (
	"context"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// TestRetentionPolicyOnLiveTopic: the namespace retention decides whether consumed ledgers
// of a loaded topic survive a trim, and a change applies without reloading the topic.
func TestRetentionPolicyOnLiveTopic(t *testing.T) {
	if testBackend() == "memory" {
		t.Skip("retention needs the managed ledger")
	}
	logger := testLogger(t)
	store, ledgers := newTestStorage(t, logger)
	bootstrapNamespaces(t, store)
	rs := &restartableStack{t: t, store: store, ledgers: ledgers, mlMod: func(c *config.ManagedLedgerConfig) {
		c.MaxEntriesPerLedger, c.MinLedgerRolloverTimeMinutes = 2, 0
	}}
	rs.start()
	t.Cleanup(rs.stop)
	setRetention := func(minutes int, mb int64) {
		t.Helper()
		err := resources.New(store).UpdateNamespace(context.Background(), "public", "default", func(p *resources.Policies) error {
			p.RetentionPolicies = &resources.RetentionPolicies{RetentionTimeInMinutes: minutes, RetentionSizeInMB: mb}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setRetention(-1, -1) // keep everything
	topic := "persistent://public/default/retention-live"
	client := newClient(t, rs.url)
	defer client.Close()
	c, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "m", 10)
	receive(t, c, 10, true)
	name, _ := topics.ParseName(topic)
	ml, err := rs.f.Open(context.Background(), name.ManagedLedgerName(), rs.f.DefaultConfig()) // the topic's, already open
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := ml.Cursor("s")
	waitUntil(t, "acks applied", func() bool { return sub.Backlog() == 0 })
	trim := func() {
		t.Helper()
		if err := ml.Retention().Trim(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	trim()
	if n := ml.NumberOfEntries(); n != 10 {
		t.Fatalf("infinite retention kept %d of 10 consumed entries", n)
	}
	setRetention(0, 0) // keep nothing consumed
	waitUntil(t, "retention change applied", func() bool {
		cfg := ml.Config()
		return cfg.RetentionTime == 0 && cfg.RetentionSizeBytes == 0
	})
	trim()
	if n := ml.NumberOfEntries(); n >= 10 {
		t.Fatalf("no retention still keeps %d consumed entries", n)
	}
}

// TestTopicPoliciesGoWithTheTopic: deleting a topic deletes its topic-level policies.
func TestTopicPoliciesGoWithTheTopic(t *testing.T) {
	b := startBroker(t, nil)
	ctx := context.Background()
	name, _ := topics.ParseName("persistent://public/default/policies-deleted")
	if err := b.s.topics.CreateTopic(ctx, name, 0); err != nil {
		t.Fatal(err)
	}
	res := resources.New(b.store)
	ttl := 30
	err := res.UpdateTopicPolicies(ctx, name.Domain, name.Tenant, name.Namespace, name.Local, func(p *resources.TopicPolicies) error {
		p.MessageTTLInSeconds = &ttl
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.s.topics.DeleteTopic(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	tp, err := res.TopicPolicies(ctx, name.Domain, name.Tenant, name.Namespace, name.Local)
	if err != nil || tp.MessageTTLInSeconds != nil {
		t.Fatalf("policies after delete: %+v, %v", tp, err)
	}
}
