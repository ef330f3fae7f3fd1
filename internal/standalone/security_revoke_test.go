package standalone_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/wire/pb"
)

// TestRevokedPermissionClosesLiveProducersAndConsumers: permissions are decided when a
// producer or consumer attaches, and rechecked every authorizationRecheckIntervalSeconds;
// after a revocation the broker closes the live ones, and refuses them when they come back.
func TestRevokedPermissionClosesLiveProducersAndConsumers(t *testing.T) {
	f := startSecure(t, func(c *config.StandaloneConfig) { c.Broker.Security.Authz.RecheckIntervalSeconds = 1 })
	const topic = "persistent://private/auth/revoked"
	tok := []byte(f.token(t, "token-principal", 0))
	c := dialRaw(t, f.s.BrokerAddr())
	if r := c.connect("token", tok, true, nil); r.GetType() != pb.BaseCommand_CONNECTED {
		t.Fatal(r)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(1), RequestId: proto.Uint64(1)}})
	if r, err := c.next(); err != nil || r.GetType() != pb.BaseCommand_PRODUCER_SUCCESS {
		t.Fatalf("PRODUCER: %v %v", r, err)
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_SUBSCRIBE.Enum(), Subscribe: &pb.CommandSubscribe{Topic: proto.String(topic),
		Subscription: proto.String("s"), SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(2), RequestId: proto.Uint64(2)}})
	if r, err := c.next(); err != nil || r.GetType() != pb.BaseCommand_SUCCESS {
		t.Fatalf("SUBSCRIBE: %v %v", r, err)
	}
	if code, body := f.rest(t, "Bearer "+f.adminToken, "DELETE", "/admin/v2/namespaces/private/auth/permissions/token-principal", ""); code >= 300 {
		t.Fatalf("revoke: %d %s", code, body)
	}
	closedProducer, closedConsumer := false, false
	for !closedProducer || !closedConsumer {
		r, err := c.next() // waits on the broker, bounded only against hangs
		if err != nil {
			t.Fatalf("waiting for the broker to close the revoked producer and consumer: %v", err)
		}
		switch r.GetType() {
		case pb.BaseCommand_CLOSE_PRODUCER:
			closedProducer = r.GetCloseProducer().GetProducerId() == 1
		case pb.BaseCommand_CLOSE_CONSUMER:
			closedConsumer = r.GetCloseConsumer().GetConsumerId() == 2
		}
	}
	c.send(&pb.BaseCommand{Type: pb.BaseCommand_PRODUCER.Enum(), Producer: &pb.CommandProducer{Topic: proto.String(topic),
		ProducerId: proto.Uint64(3), RequestId: proto.Uint64(3)}})
	if r, err := c.next(); err != nil || r.GetError().GetError() != pb.ServerError_AuthorizationError {
		t.Fatalf("PRODUCER after the revocation: %v %v", r, err)
	}
}
