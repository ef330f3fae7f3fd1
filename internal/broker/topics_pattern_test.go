package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/topics"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

func TestTopicsHash(t *testing.T) {
	// CRC32C("123456789") is 0xE3069283; Guava prints its bytes little-endian.
	if got := topicsHash([]string{"123456789"}); got != "839206e3" {
		t.Fatalf("hash %s", got)
	}
	a := topicsHash([]string{"persistent://t/n/b", "persistent://t/n/a"})
	if b := topicsHash([]string{"persistent://t/n/a", "persistent://t/n/b"}); a != b {
		t.Fatal("hash depends on order")
	}
	if a == topicsHash([]string{"persistent://t/n/a"}) || topicsHash(nil) != "00000000" {
		t.Fatal("hash does not depend on the set")
	}
}

// TestGetTopicsOfNamespacePatternAndHash: the broker filters by the pattern (partitions by
// their topic's name), returns the hash of the filtered list, and answers changed=false
// without topics when the client already has that hash.
func TestGetTopicsOfNamespacePatternAndHash(t *testing.T) {
	b := startBroker(t, nil)
	ctx := context.Background()
	for _, n := range []string{"pat-a", "pat-b", "other"} {
		name, _ := topics.ParseName("persistent://public/default/" + n)
		if err := b.s.topics.CreateTopic(ctx, name, 0); err != nil {
			t.Fatal(err)
		}
	}
	parted, _ := topics.ParseName("persistent://public/default/pat-parted")
	if err := b.s.topics.CreateTopic(ctx, parted, 2); err != nil {
		t.Fatal(err)
	}
	raw := dialRaw(t, b)
	raw.connect()
	rid := uint64(0)
	ask := func(pattern, hash *string) *pb.CommandGetTopicsOfNamespaceResponse {
		rid++
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_GET_TOPICS_OF_NAMESPACE.Enum(), GetTopicsOfNamespace: &pb.CommandGetTopicsOfNamespace{
			RequestId: proto.Uint64(rid), Namespace: proto.String("public/default"), Mode: pb.CommandGetTopicsOfNamespace_PERSISTENT.Enum(),
			TopicsPattern: pattern, TopicsHash: hash}})
		return raw.expect(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE).GetGetTopicsOfNamespaceResponse()
	}
	all := ask(nil, nil)
	if all.GetFiltered() || !all.GetChanged() || len(all.GetTopics()) != 5 || all.GetTopicsHash() != topicsHash(all.GetTopics()) {
		t.Fatalf("unfiltered: %v", all)
	}
	r := ask(proto.String("persistent://public/default/pat-.*"), nil)
	got := slices.Sorted(slices.Values(r.GetTopics()))
	want := []string{"persistent://public/default/pat-a", "persistent://public/default/pat-b",
		"persistent://public/default/pat-parted-partition-0", "persistent://public/default/pat-parted-partition-1"}
	if !r.GetFiltered() || !r.GetChanged() || fmt.Sprint(got) != fmt.Sprint(want) || r.GetTopicsHash() != topicsHash(want) {
		t.Fatalf("filtered: %v", r)
	}
	same := ask(proto.String("persistent://public/default/pat-.*"), proto.String(r.GetTopicsHash()))
	if same.GetChanged() || len(same.GetTopics()) != 0 || same.GetTopicsHash() != r.GetTopicsHash() {
		t.Fatalf("unchanged: %v", same)
	}
	// A pattern Go's regexp cannot compile is left to the client.
	if bad := ask(proto.String("public/default/(?<=x)pat"), nil); bad.GetFiltered() || len(bad.GetTopics()) != 5 {
		t.Fatalf("uncompilable pattern: %v", bad)
	}
}

// TestMultiTopicAndPatternDiscovery: a consumer of an explicit topic list gets all of
// them; a pattern consumer picks up a matching topic created after it subscribed.
func TestMultiTopicAndPatternDiscovery(t *testing.T) {
	b := startBroker(t, nil)
	client := newClient(t, b.url)
	topics := []string{"persistent://public/default/multi-1", "persistent://public/default/multi-2"}
	mc, err := client.Subscribe(pulsar.ConsumerOptions{Topics: topics, SubscriptionName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	pc, err := client.Subscribe(pulsar.ConsumerOptions{TopicsPattern: "persistent://public/default/multi-.*",
		SubscriptionName: "p", AutoDiscoveryPeriod: 100 * time.Millisecond,
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for _, tp := range append(topics, "persistent://public/default/multi-3") {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: tp, DisableBatching: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Send(context.Background(), &pulsar.ProducerMessage{Payload: []byte(tp)}); err != nil {
			t.Fatal(err)
		}
		p.Close()
	}
	if got := payloads(receive(t, mc, 2, true)); len(got) != 2 || got[0] == got[1] {
		t.Fatalf("multi-topic consumer got %v", got)
	}
	expectNothing(t, mc)
	got := payloads(receive(t, pc, 3, true))
	slices.Sort(got)
	if got[2] != "persistent://public/default/multi-3" {
		t.Fatalf("pattern consumer got %v", got)
	}
}
