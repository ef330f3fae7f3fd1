package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.magnetar.compat.proto.CompatProto;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Schemas with the official Java client: Avro and JSON POJOs, Protobuf (generated and
 *  native), AUTO_CONSUME, and compatibility refusals. */
class SchemaTest {
    static PulsarClient client;

    public static class User {
        public String name;
        public int age;

        public User() {}

        User(String name, int age) {
            this.name = name;
            this.age = age;
        }
    }

    public static class Other {
        public long id;
    }

    @BeforeAll
    static void connect() throws PulsarClientException {
        client = Env.client();
    }

    @AfterAll
    static void close() throws PulsarClientException {
        client.close();
    }

    <T> T roundTrip(String topic, Schema<T> schema, T value) throws Exception {
        try (Consumer<T> c = client.newConsumer(schema).topic(topic).subscriptionName("s").subscribe();
             Producer<T> p = client.newProducer(schema).topic(topic).create()) {
            p.send(value);
            return c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue();
        }
    }

    @Test
    void avro() throws Exception {
        User u = roundTrip(Env.topic("avro"), Schema.AVRO(User.class), new User("ada", 36));
        assertEquals("ada", u.name);
        assertEquals(36, u.age);
    }

    @Test
    void json() throws Exception {
        User u = roundTrip(Env.topic("json"), Schema.JSON(User.class), new User("alan", 41));
        assertEquals("alan", u.name);
    }

    @Test
    void protobuf() throws Exception {
        CompatProto.Order o = CompatProto.Order.newBuilder().setId("o-1").setAmount(42).addAllItems(List.of("a", "b")).build();
        assertEquals(o, roundTrip(Env.topic("protobuf"), Schema.PROTOBUF(CompatProto.Order.class), o));
    }

    @Test
    void protobufNative() throws Exception {
        CompatProto.Order o = CompatProto.Order.newBuilder().setId("o-2").setAmount(7).build();
        assertEquals(o, roundTrip(Env.topic("protobuf-native"), Schema.PROTOBUF_NATIVE(CompatProto.Order.class), o));
    }

    @Test
    void autoConsumeReadsTheRegisteredSchema() throws Exception {
        String topic = Env.topic("auto");
        try (Consumer<GenericRecord> c = client.newConsumer(Schema.AUTO_CONSUME()).topic(topic).subscriptionName("s").subscribe();
             Producer<User> p = client.newProducer(Schema.AVRO(User.class)).topic(topic).create()) {
            p.send(new User("grace", 85));
            GenericRecord r = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue();
            assertEquals("grace", r.getField("name").toString());
            assertEquals(85, r.getField("age"));
        }
    }

    @Test
    void incompatibleSchemaIsRefused() throws Exception {
        String topic = Env.topic("incompatible");
        try (Producer<User> p = client.newProducer(Schema.AVRO(User.class)).topic(topic).create()) {
            assertThrows(PulsarClientException.IncompatibleSchemaException.class,
                    () -> client.newProducer(Schema.AVRO(Other.class)).topic(topic).create());
        }
    }
}
