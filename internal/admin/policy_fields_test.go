package admin_test

import (
	"errors"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/rest"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestMorePolicyEndpoints drives the policy endpoints that pulsaradmin's own tests found
// missing (docs/compatibility.md) through pulsaradmin: unset reads back as nil / the
// client's default, a value set reads back, removal reads back as unset, and refusals carry
// Pulsar's reason text where the client compares it.
func TestMorePolicyEndpoints(t *testing.T) {
	a := adminClient(t)
	topic := topicName(t, "persistent://public/default/more-policy-endpoints")
	must(t, "create", a.Topics().Create(*topic, 2))

	if p, err := a.Topics().GetPersistence(*topic); err != nil || p != nil {
		t.Fatalf("unset topic persistence = %+v, %v", p, err)
	}
	must(t, "set persistence", a.Topics().SetPersistence(*topic, utils.PersistenceData{BookkeeperEnsemble: 1, BookkeeperWriteQuorum: 1, BookkeeperAckQuorum: 1}))
	if p, err := a.Topics().GetPersistence(*topic); err != nil || p == nil || p.BookkeeperEnsemble != 1 {
		t.Fatalf("topic persistence = %+v, %v", p, err)
	}
	if err := a.Topics().SetPersistence(*topic, utils.PersistenceData{BookkeeperEnsemble: 1, BookkeeperWriteQuorum: 2, BookkeeperAckQuorum: 1}); err == nil {
		t.Fatal("E1/Qw2 accepted")
	}
	must(t, "remove persistence", a.Topics().RemovePersistence(*topic))
	if p, err := a.Topics().GetPersistence(*topic); err != nil || p != nil {
		t.Fatalf("removed topic persistence = %+v, %v", p, err)
	}

	must(t, "set dispatch rate", a.Topics().SetDispatchRate(*topic, utils.DispatchRateData{DispatchThrottlingRateInMsg: 100, RatePeriodInSecond: 1}))
	if d, err := a.Topics().GetDispatchRate(*topic); err != nil || d == nil || d.DispatchThrottlingRateInMsg != 100 {
		t.Fatalf("dispatch rate = %+v, %v", d, err)
	}
	must(t, "set max subscriptions", a.Topics().SetMaxSubscriptionsPerTopic(*topic, 3))
	if n, err := a.Topics().GetMaxSubscriptionsPerTopic(*topic); err != nil || n != 3 {
		t.Fatalf("max subscriptions = %d, %v", n, err)
	}
	must(t, "set offload policies", a.Topics().SetOffloadPolicies(*topic, utils.OffloadPolicies{ManagedLedgerOffloadThresholdInBytes: 1 << 30}))
	if o, err := a.Topics().GetOffloadPolicies(*topic); err != nil || o == nil || o.ManagedLedgerOffloadThresholdInBytes != 1<<30 {
		t.Fatalf("offload policies = %+v, %v", o, err)
	}

	ns, _ := utils.GetNamespaceName("public/default")
	if p, err := a.Namespaces().GetPersistence("public/default"); err != nil || p != nil {
		t.Fatalf("unset namespace persistence = %+v, %v", p, err)
	}
	if g, err := a.Namespaces().GetBookieAffinityGroup("public/default"); err != nil || g != nil {
		t.Fatalf("unset bookie affinity = %+v, %v", g, err)
	}
	if v, err := a.Namespaces().GetOffloadThreshold(*ns); err != nil || v != -1 {
		t.Fatalf("unset offload threshold = %d, %v", v, err)
	}
	if v, err := a.Namespaces().GetMaxTopicsPerNamespace(*ns); err != nil || v != 0 {
		t.Fatalf("unset max topics = %d, %v", v, err)
	}
	for what, err := range map[string]error{
		"Invalid value for subscription expiration time": a.Namespaces().SetSubscriptionExpirationTime(*ns, -60),
		"maxTopicsPerNamespace must be 0 or more":        a.Namespaces().SetMaxTopicsPerNamespace(*ns, -1),
		"Invalid value for offloadThresholdInSecond":     a.Namespaces().SetOffloadThresholdInSeconds(*ns, -60),
	} {
		var re rest.Error
		if !errors.As(err, &re) || re.Code != 400 || re.Reason != what {
			t.Errorf("refusal %q: %v", what, err)
		}
	}
	must(t, "set deletion lag", a.Namespaces().SetOffloadDeleteLag(*ns, 1000))
	if v, err := a.Namespaces().GetOffloadDeleteLag(*ns); err != nil || v != 1000 {
		t.Fatalf("deletion lag = %d, %v", v, err)
	}
	// Rates in a namespace of their own: the other tests publish to public/default.
	must(t, "create namespace", a.Namespaces().CreateNamespace("public/policy-rates"))
	rns, _ := utils.GetNamespaceName("public/policy-rates")
	must(t, "set publish rate", a.Namespaces().SetPublishRate(*rns, utils.PublishRate{PublishThrottlingRateInMsg: 40, PublishThrottlingRateInByte: -1}))
	if r, err := a.Namespaces().GetPublishRate(*rns); err != nil || r.PublishThrottlingRateInMsg != 40 {
		t.Fatalf("namespace publish rate = %+v, %v", r, err)
	}
	must(t, "set dispatch rate", a.Namespaces().SetDispatchRate(*rns, utils.DispatchRate{DispatchThrottlingRateInMsg: 9, RatePeriodInSecond: 1}))
	if r, err := a.Namespaces().GetDispatchRate(*rns); err != nil || r.DispatchThrottlingRateInMsg != 9 {
		t.Fatalf("namespace dispatch rate = %+v, %v", r, err)
	}
	must(t, "clear deletion lag", a.Namespaces().ClearOffloadDeleteLag(*ns))
	if v, err := a.Namespaces().GetOffloadDeleteLag(*ns); err != nil || v != -1 {
		t.Fatalf("cleared deletion lag = %d, %v", v, err)
	}
}

// TestPulsarAdminSuiteFixes are regressions of pulsaradmin's own tests
// (docs/compatibility.md): the auto-topic-creation refusals' texts and disabling without a
// type, peek creating a missing subscription at the earliest message, and the stats
// options excludePublishers / excludeConsumers.
func TestPulsarAdminSuiteFixes(t *testing.T) {
	a := adminClient(t)
	ns, _ := utils.GetNamespaceName("public/default")
	err := a.Namespaces().SetTopicAutoCreation(*ns, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned})
	var re rest.Error
	if !errors.As(err, &re) || re.Reason != "Invalid configuration for autoTopicCreationOverride. the detail is [defaultNumPartitions] cannot be null when the type is partitioned." {
		t.Fatalf("partitioned without partitions: %v", err)
	}
	must(t, "disable auto creation", a.Namespaces().SetTopicAutoCreation(*ns, utils.TopicAutoCreationConfig{Allow: false}))
	must(t, "remove override", a.Namespaces().RemoveTopicAutoCreation(*ns))

	const topic = "persistent://public/default/admin-suite-fixes"
	c := pulsarClient(t)
	produce(t, c, topic, 3)
	tn := topicName(t, topic)
	msgs, err := a.Subscriptions().PeekMessages(*tn, "never-created", 2)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("peek on a missing subscription: %d messages, %v", len(msgs), err)
	}
	subs, err := a.Subscriptions().List(*tn)
	if err != nil || !contains(subs, "never-created") {
		t.Fatalf("subscriptions after the peek: %v, %v", subs, err)
	}

	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	must(t, "producer", err)
	defer p.Close()
	cons, err := c.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "attached"})
	must(t, "consumer", err)
	defer cons.Close()
	st, err := a.Topics().GetStatsWithOption(*tn, utils.GetStatsOptions{ExcludePublishers: true, ExcludeConsumers: true})
	must(t, "stats", err)
	if len(st.Publishers) != 0 || len(st.Subscriptions["attached"].Consumers) != 0 {
		t.Fatalf("excluded publishers/consumers listed: %d, %d", len(st.Publishers), len(st.Subscriptions["attached"].Consumers))
	}
	st, err = a.Topics().GetStats(*tn)
	must(t, "stats", err)
	if len(st.Publishers) != 1 || len(st.Subscriptions["attached"].Consumers) != 1 {
		t.Fatalf("stats without the options: %d publishers, %d consumers", len(st.Publishers), len(st.Subscriptions["attached"].Consumers))
	}
}
