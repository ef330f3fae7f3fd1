package broker

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// TestSharedPriorityLevels: the Go client cannot set priority_level, so two raw consumers
// subscribe with levels 0 and 1. The level-0 consumer gets everything its permits allow;
// only the rest goes to level 1.
func TestSharedPriorityLevels(t *testing.T) {
	b := startBroker(t, nil)
	topic := "persistent://public/default/priority"
	raw := dialRaw(t, b)
	raw.connect()
	for id, prio := range map[uint64]int32{1: 0, 2: 1} {
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{
			Topic: proto.String(topic), Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(),
			ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(id), PriorityLevel: proto.Int32(prio)}})
		raw.expect(pb.BaseCommand_SUCCESS)
	}
	for id, permits := range map[uint64]uint32{1: 5, 2: 100} {
		raw.send(&pb.BaseCommand{Type: pb.BaseCommand_FLOW.Enum(), Flow: &pb.CommandFlow{
			ConsumerId: proto.Uint64(id), MessagePermits: proto.Uint32(permits)}})
	}
	raw.ping() // the FLOWs are handled (in order) before anything is produced
	client := newClient(t, b.url)
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	produce(t, p, "m", 8)
	got := map[uint64]int{}
	for i := 0; i < 8; i++ {
		got[raw.expect(pb.BaseCommand_MESSAGE).GetMessage().GetConsumerId()]++
	}
	if got[1] != 5 || got[2] != 3 {
		t.Fatalf("messages per consumer %v, want 5 for level 0 and 3 for level 1", got)
	}
}
