package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// History classes of schema.history.internal (database.history in Debezium 1.x): Pulsar's
// topic-backed ones, and Debezium's in-memory one (nothing survives a restart).
const (
	historyPulsar        = "org.apache.pulsar.io.debezium.PulsarSchemaHistory"
	historyPulsarV1      = "org.apache.pulsar.io.debezium.PulsarDatabaseHistory"
	historyMemory        = "io.debezium.relational.history.MemorySchemaHistory"
	historyMemoryV1      = "io.debezium.relational.history.MemoryDatabaseHistory"
	historyTopicSuffix   = "-debezium-history-topic" // Pulsar's default: {tenant}/{namespace}/{name}-debezium-history-topic
	historySubscription  = "magnetar-schema-history"
	historyReplayTimeout = 2 * time.Minute
)

// historyStore keeps the schema history in a topic. A durable subscription that never
// acknowledges holds every record against retention (the topic has no other reader, so a
// namespace without retention would otherwise trim it); the replay reads with a reader.
type historyStore struct {
	client pulsar.Client
	own    bool // client was opened for schema.history.internal.pulsar.service.url
	prod   pulsar.Producer
}

// openHistory connects to the history topic and hands every record on it to replay, in order.
func openHistory(ctx context.Context, sc connector.SourceContext, cfg *config, replay func([]byte) error) (*historyStore, error) {
	h := &historyStore{}
	if cfg.historyURL != "" {
		c, err := pulsar.NewClient(pulsar.ClientOptions{URL: cfg.historyURL, ConnectionTimeout: 10 * time.Second, OperationTimeout: 30 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("debezium-mysql: schema history client for %s: %w", cfg.historyURL, err)
		}
		h.client, h.own = c, true
	} else if cp, ok := sc.(connector.ClientProvider); ok {
		h.client = cp.PulsarClient()
	} else {
		return nil, fmt.Errorf("debezium-mysql: no Pulsar client for the schema history; set schema.history.internal.pulsar.service.url")
	}
	if err := h.open(ctx, cfg.historyTopic, replay); err != nil {
		h.close()
		return nil, err
	}
	return h, nil
}

func (h *historyStore) open(ctx context.Context, topic string, replay func([]byte) error) error {
	pin, err := h.client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: historySubscription,
		Type: pulsar.Shared, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	if err != nil {
		return fmt.Errorf("debezium-mysql: schema history subscription on %s: %w", topic, err)
	}
	pin.Close()
	r, err := h.client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		return fmt.Errorf("debezium-mysql: schema history reader on %s: %w", topic, err)
	}
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, historyReplayTimeout)
	defer cancel()
	for r.HasNext() {
		m, err := r.Next(rctx)
		if err != nil {
			return fmt.Errorf("debezium-mysql: reading the schema history %s: %w", topic, err)
		}
		if err := replay(m.Payload()); err != nil {
			return err
		}
	}
	h.prod, err = h.client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("debezium-mysql: schema history producer on %s: %w", topic, err)
	}
	return nil
}

// append writes one record and returns once the broker has it: the checkpoint must never
// pass a DDL statement the history does not hold.
func (h *historyStore) append(ctx context.Context, b []byte) error {
	if _, err := h.prod.Send(ctx, &pulsar.ProducerMessage{Payload: b}); err != nil {
		return fmt.Errorf("debezium-mysql: writing the schema history: %w", err)
	}
	return nil
}

func (h *historyStore) close() {
	if h == nil {
		return
	}
	if h.prod != nil {
		h.prod.Close()
	}
	if h.own {
		h.client.Close()
	}
}
