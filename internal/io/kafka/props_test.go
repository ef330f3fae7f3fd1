package kafka

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// client builds (without dialing) the franz-go client a Validate configured.
func client(t *testing.T, opts []kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// producerConfigProperties reach the client; the connector's own field wins over the same
// setting given as a property; the flat form works; serializers are ignored and unknown
// properties named, not refused.
func TestProducerConfigProperties(t *testing.T) {
	c := connector.NewConfig(map[string]any{"bootstrapServers": "127.0.0.1:1", "topic": "out", "acks": "all",
		"producerConfigProperties": map[string]any{"compression.type": "zstd", "linger.ms": "25", "acks": "1",
			"client.id": "magnetar-sink", "max.in.flight.requests.per.connection": 1, "enable.idempotence": "false",
			"key.serializer": "org.apache.kafka.common.serialization.ByteArraySerializer", "sasl.kerberos.service.name": "kafka"},
		"producerConfigProperties.max.request.size": "2097152",
	}, nil)
	var s sink
	if err := s.Validate(c); err != nil || c.Err() != nil {
		t.Fatalf("Validate: %v %v", err, c.Err())
	}
	if s.batchTime != 25*time.Millisecond {
		t.Errorf("linger.ms 25 gave batchTimeMs %v", s.batchTime)
	}
	if !slices.Equal(s.unknown, []string{"sasl.kerberos.service.name"}) {
		t.Errorf("unknown properties %v", s.unknown)
	}
	cl := client(t, s.opts)
	if got := cl.OptValue(kgo.ClientID); got != "magnetar-sink" {
		t.Errorf("client.id: %v", got)
	}
	if got := cl.OptValue(kgo.ProducerBatchCompression); stringOf(got) != stringOf([]kgo.CompressionCodec{kgo.ZstdCompression()}) {
		t.Errorf("compression.type: %v", got)
	}
	if got := cl.OptValue(kgo.MaxProduceRequestsInflightPerBroker); got != 1 {
		t.Errorf("max.in.flight.requests.per.connection: %v", got)
	}
	if got := cl.OptValue(kgo.ProducerBatchMaxBytes); got != int32(2<<20) {
		t.Errorf("max.request.size (flat form): %v", got)
	}
	if got := cl.OptValue(kgo.RequiredAcks); stringOf(got) != stringOf(kgo.AllISRAcks()) {
		t.Errorf("acks: the field (all) must win over the property (1); got %v", got)
	}
}

func stringOf(v any) string { return strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\n", " ")) }

// consumerConfigProperties reach the client, a property replaces a field's default, and a
// bad value is an error naming the property.
func TestConsumerConfigProperties(t *testing.T) {
	c := connector.NewConfig(map[string]any{"bootstrapServers": "127.0.0.1:1", "topic": "in",
		"consumerConfigProperties": map[string]any{"group.id": "from-props", "isolation.level": "read_committed",
			"max.partition.fetch.bytes": 65536, "fetch.max.wait.ms": 100, "session.timeout.ms": 45000,
			"partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
	}, nil)
	var s source
	if err := s.Validate(c); err != nil || c.Err() != nil {
		t.Fatalf("Validate: %v %v", err, c.Err())
	}
	cl := client(t, s.opts)
	for name, c := range map[string]struct {
		opt  any
		want any
	}{
		"group.id (as groupId)":     {kgo.ConsumerGroup, "from-props"},
		"session.timeout.ms":        {kgo.SessionTimeout, 45 * time.Second},
		"max.partition.fetch.bytes": {kgo.FetchMaxPartitionBytes, int32(65536)},
		"fetch.max.wait.ms":         {kgo.FetchMaxWait, 100 * time.Millisecond},
		"isolation.level":           {kgo.FetchIsolationLevel, int8(1)},
	} {
		if got := cl.OptValue(c.opt); got != c.want {
			t.Errorf("%s: %v (%T), want %v", name, got, got, c.want)
		}
	}
	if bs, ok := cl.OptValue(kgo.Balancers).([]kgo.GroupBalancer); !ok || len(bs) != 1 || bs[0].ProtocolName() != "cooperative-sticky" {
		t.Errorf("partition.assignment.strategy: %v", cl.OptValue(kgo.Balancers))
	}

	bad := connector.NewConfig(map[string]any{"bootstrapServers": "127.0.0.1:1", "topic": "in", "groupId": "g",
		"consumerConfigProperties": map[string]any{"isolation.level": "read_some", "fetch.max.bytes": "lots"}}, nil)
	_ = (&source{}).Validate(bad)
	err := bad.Err()
	if err == nil || !strings.Contains(err.Error(), "consumerConfigProperties.isolation.level") ||
		!strings.Contains(err.Error(), "consumerConfigProperties.fetch.max.bytes") {
		t.Fatalf("bad properties: %v, want errors naming both", err)
	}
}

func fmtAny(v any) string { return fmt.Sprintf("%v", v) }
