package broker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
	"github.com/magnetar-io/magnetar/internal/topics"
)

// Schema registry end to end with the Go client: PRODUCER and SUBSCRIBE with schemas,
// GET_SCHEMA from the consumer decoding by the message's schema version, IncompatibleSchema.

const (
	userV1Avro = `{"type":"record","name":"User","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	userV2Avro = `{"type":"record","name":"User","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int","default":7}]}`
	userV3Avro = `{"type":"record","name":"User","namespace":"test","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":"string"}]}`
)

type userV1 struct {
	ID   int64  `avro:"id" json:"id"`
	Name string `avro:"name" json:"name"`
}

type userV2 struct {
	ID   int64  `avro:"id" json:"id"`
	Name string `avro:"name" json:"name"`
	Age  int32  `avro:"age" json:"age"`
}

func setNamespaceStrategy(t *testing.T, tb *testBroker, s schema.Strategy) {
	t.Helper()
	err := resources.New(tb.store).UpdateNamespace(context.Background(), "public", "default", func(p *resources.Policies) error {
		p.SchemaCompatibility = string(s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSchemaEndToEnd(t *testing.T) {
	tb := startBroker(t, nil)
	client := newClient(t, tb.url)
	setNamespaceStrategy(t, tb, schema.Backward)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	t.Run("avro evolution", func(t *testing.T) {
		topic := "persistent://public/default/schema-avro"
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			Schema: pulsar.NewAvroSchema(userV1Avro, nil), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		// The consumer registered the first version on the schema-less topic.
		if e, err := tb.s.topics.Schemas().Latest(ctx, schema.ID{Tenant: "public", Namespace: "default", Topic: "schema-avro"}); err != nil || e.Version != 0 {
			t.Fatalf("after subscribe: latest = %+v, %v", e, err)
		}
		p1, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV1Avro, nil)})
		if err != nil {
			t.Fatal(err)
		}
		defer p1.Close()
		if _, err := p1.Send(ctx, &pulsar.ProducerMessage{Value: &userV1{ID: 1, Name: "ann"}}); err != nil {
			t.Fatal(err)
		}
		// Added field without default: a BACKWARD break.
		_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV3Avro, nil)})
		if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
			t.Fatalf("incompatible producer: err = %v, want IncompatibleSchema", err)
		}
		// Added field with default: accepted as version 1.
		p2, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV2Avro, nil)})
		if err != nil {
			t.Fatalf("compatible producer refused: %v", err)
		}
		defer p2.Close()
		if _, err := p2.Send(ctx, &pulsar.ProducerMessage{Value: &userV2{ID: 2, Name: "bob", Age: 42}}); err != nil {
			t.Fatal(err)
		}
		// The consumer decodes each message with the schema of its own version (GET_SCHEMA).
		m1, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var u1 userV1
		if err := m1.GetSchemaValue(&u1); err != nil || u1 != (userV1{1, "ann"}) {
			t.Fatalf("message 1 = %+v, %v", u1, err)
		}
		if v, _ := schema.ParseVersionBytes(m1.SchemaVersion()); v != 0 {
			t.Fatalf("message 1 schema version %x", m1.SchemaVersion())
		}
		m2, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var u2 userV2
		if err := m2.GetSchemaValue(&u2); err != nil || u2 != (userV2{2, "bob", 42}) {
			t.Fatalf("message 2 = %+v, %v", u2, err)
		}
		if v, _ := schema.ParseVersionBytes(m2.SchemaVersion()); v != 1 {
			t.Fatalf("message 2 schema version %x", m2.SchemaVersion())
		}
		// A consumer that cannot read the latest schema is refused.
		_, err = client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s2", Schema: pulsar.NewAvroSchema(userV3Avro, nil)})
		if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
			t.Fatalf("incompatible consumer: err = %v", err)
		}
		// A producer of another type is refused.
		_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil)})
		if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
			t.Fatalf("type change: err = %v", err)
		}
	})

	t.Run("json on a partitioned topic", func(t *testing.T) {
		topic := "persistent://public/default/schema-json"
		name, _ := topics.ParseName(topic)
		if err := tb.s.topics.CreateTopic(ctx, name, 2); err != nil {
			t.Fatal(err)
		}
		js := pulsar.NewJSONSchema(userV1Avro, nil)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: js})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s",
			Schema: pulsar.NewJSONSchema(userV1Avro, nil), SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		for i := range 4 {
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Key: string(rune('a' + i)), Value: &userV1{ID: int64(i), Name: "n"}}); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[int64]bool{}
		for range 4 {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var u userV1
			if err := m.GetSchemaValue(&u); err != nil {
				t.Fatal(err)
			}
			seen[u.ID] = true
			_ = cons.Ack(m)
		}
		if len(seen) != 4 {
			t.Fatalf("decoded ids %v", seen)
		}
		// Both partitions share the base topic's one version.
		all, err := tb.s.topics.Schemas().All(ctx, schema.ID{Tenant: "public", Namespace: "default", Topic: "schema-json"})
		if err != nil || len(all) != 1 || all[0].Schema.Type != schema.JSON {
			t.Fatalf("versions = %+v, %v", all, err)
		}
	})

	t.Run("bytes producer and auto update off", func(t *testing.T) {
		topic := "persistent://public/default/schema-noauto"
		f := false
		err := resources.New(tb.store).UpdateNamespace(ctx, "public", "default", func(p *resources.Policies) error {
			p.IsAllowAutoUpdateSchema = &f
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = resources.New(tb.store).UpdateNamespace(ctx, "public", "default", func(p *resources.Policies) error {
				p.IsAllowAutoUpdateSchema = nil
				return nil
			})
		}()
		_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV1Avro, nil)})
		if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
			t.Fatalf("auto update off: err = %v", err)
		}
		if _, err := tb.s.topics.Schemas().Put(ctx, schema.ID{Tenant: "public", Namespace: "default", Topic: "schema-noauto"},
			schema.Schema{Type: schema.Avro, Data: []byte(pulsar.NewAvroSchema(userV1Avro, nil).GetSchemaInfo().Schema)}); err != nil {
			t.Fatal(err)
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV1Avro, nil)})
		if err != nil {
			t.Fatalf("registered schema refused: %v", err)
		}
		p.Close()
		// A producer without schema is fine while validation is not enforced.
		pb, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		pb.Close()
	})

	t.Run("topic deletion drops the schema", func(t *testing.T) {
		topic := "persistent://public/default/schema-deleted"
		name, _ := topics.ParseName(topic)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewStringSchema(nil)})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		id := topics.SchemaID(name)
		if _, err := tb.s.topics.Schemas().Latest(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := tb.s.topics.DeleteTopic(ctx, name, true); err != nil {
			t.Fatal(err)
		}
		if _, err := tb.s.topics.Schemas().Latest(ctx, id); !errors.Is(err, schema.ErrNotFound) {
			t.Fatalf("schema after topic deletion: %v", err)
		}
		// Created again, the topic takes any schema.
		p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userV1Avro, nil)})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
	})

	// As the Go client's TestMultipleSchemaProducerConsumer: one producer sends messages
	// with two schemas (GET_OR_CREATE_SCHEMA for the second), the consumer decodes both.
	t.Run("multi-schema producer", func(t *testing.T) {
		setNamespaceStrategy(t, tb, schema.Full)
		defer setNamespaceStrategy(t, tb, schema.Backward)
		topic := "persistent://public/default/schema-multi"
		s1 := pulsar.NewAvroSchema(`{"fields":[{"name":"id","type":"int"},{"default":null,"name":"name","type":["null","string"]}],"name":"MyAvro3","namespace":"PulsarTestCase","type":"record"}`, nil)
		s2 := pulsar.NewAvroSchema(`{"fields":[{"name":"id","type":"int"},{"default":null,"name":"name","type":["null","string"]},{"default":null,"name":"age","type":["null","int"]}],"name":"MyAvro3","namespace":"PulsarTestCase","type":"record"}`, nil)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: s1})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		v1 := map[string]any{"id": 1, "name": map[string]any{"string": "a"}}
		v2 := map[string]any{"id": 2, "name": map[string]any{"string": "b"}, "age": map[string]any{"int": 10}}
		for i := range 4 {
			sc, v := pulsar.Schema(s1), v1
			if i%2 == 1 {
				sc, v = s2, v2
			}
			b, err := sc.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: b, Schema: sc}); err != nil {
				t.Fatal(err)
			}
		}
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: s1,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		for i := range 4 {
			m, err := cons.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := m.GetSchemaValue(&v); err != nil {
				t.Fatalf("message %d: %v", i, err)
			}
			if ver, _ := schema.ParseVersionBytes(m.SchemaVersion()); ver != int64(i%2) {
				t.Fatalf("message %d has schema version %d", i, ver)
			}
		}
	})

	// As the Go client's TestProducerWithSchemaAndConsumerSchemaNotFound: after the
	// schema is deleted, decoding an older message fails cleanly.
	t.Run("decode after schema deletion", func(t *testing.T) {
		topic := "persistent://public/default/schema-gone"
		sc := pulsar.NewAvroSchema(userV1Avro, nil)
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: sc})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Schema: sc,
			SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Value: &userV1{ID: 1, Name: "x"}}); err != nil {
			t.Fatal(err)
		}
		name, _ := topics.ParseName(topic)
		if _, err := tb.s.topics.Schemas().Delete(ctx, topics.SchemaID(name), false); err != nil {
			t.Fatal(err)
		}
		m, err := cons.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var u userV1
		if err := m.GetSchemaValue(&u); err == nil {
			t.Fatalf("decoded %+v with a deleted schema", u)
		}
	})
}
