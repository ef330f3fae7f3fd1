package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.BatcherBuilder;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Produce and consume with the official Java client: every subscription type, batching,
 *  compression, keys and properties, readers, seeks, redelivery, dead letters, delays. */
class ClientTest {
    static PulsarClient client;

    @BeforeAll
    static void connect() throws PulsarClientException {
        client = Env.client();
    }

    @AfterAll
    static void close() throws PulsarClientException {
        client.close();
    }

    static List<String> receiveAll(Consumer<String> c, int n) throws PulsarClientException {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Message<String> m = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(m, "message " + i + " of " + n + " not received");
            out.add(m.getValue());
            c.acknowledge(m);
        }
        return out;
    }

    @Test
    void produceConsumeWithKeyPropertiesAndEventTime() throws Exception {
        String topic = Env.topic("basic");
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s").subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).producerName("java-p").create()) {
            MessageId id = p.newMessage().key("k").value("hello").property("a", "1").eventTime(1234).send();
            Message<String> m = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertEquals("hello", m.getValue());
            assertEquals("k", m.getKey());
            assertEquals("1", m.getProperty("a"));
            assertEquals(1234, m.getEventTime());
            assertEquals("java-p", m.getProducerName());
            assertEquals(id, m.getMessageId());
            c.acknowledge(m);
            assertNull(c.receive(300, TimeUnit.MILLISECONDS));
        }
    }

    @ParameterizedTest
    @EnumSource(value = SubscriptionType.class)
    void everySubscriptionTypeDeliversEverything(SubscriptionType type) throws Exception {
        String topic = Env.topic("sub-" + type);
        try (Consumer<String> c1 = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                .subscriptionType(type).subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).create()) {
            Consumer<String> c2 = null;
            if (type != SubscriptionType.Exclusive) {
                c2 = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s").subscriptionType(type).subscribe();
            } else {
                assertThrows(PulsarClientException.ConsumerBusyException.class, () -> client.newConsumer(Schema.STRING)
                        .topic(topic).subscriptionName("s").subscriptionType(type).subscribe());
            }
            for (int i = 0; i < 50; i++) {
                p.newMessage().key("key-" + (i % 5)).value(Integer.toString(i)).send();
            }
            Set<String> got = new HashSet<>();
            Map<String, Consumer<String>> keyOwner = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (got.size() < 50 && System.nanoTime() < deadline) {
                for (Consumer<String> c : c2 == null ? List.of(c1) : List.of(c1, c2)) {
                    Message<String> m = c.receive(100, TimeUnit.MILLISECONDS);
                    if (m == null) {
                        continue;
                    }
                    if (type == SubscriptionType.Key_Shared) {
                        Consumer<String> owner = keyOwner.putIfAbsent(m.getKey(), c);
                        assertTrue(owner == null || owner == c, "key " + m.getKey() + " moved between consumers");
                    }
                    got.add(m.getValue());
                    c.acknowledge(m);
                }
            }
            assertEquals(50, got.size());
            if (c2 != null) {
                c2.close();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = CompressionType.class)
    void compressionAndBatching(CompressionType compression) throws Exception {
        String topic = Env.topic("compress-" + compression);
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s").subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).compressionType(compression)
                     .enableBatching(true).batchingMaxPublishDelay(50, TimeUnit.MILLISECONDS).create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                sent.add(p.sendAsync("message-" + i + "-" + "x".repeat(200)));
            }
            p.flush();
            CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(60, TimeUnit.SECONDS);
            List<String> got = receiveAll(c, 100);
            for (int i = 0; i < 100; i++) {
                assertEquals("message-" + i + "-" + "x".repeat(200), got.get(i));
            }
        }
    }

    @Test
    void keyBasedBatchingAndBatchIndexAck() throws Exception {
        String topic = Env.topic("batch-ack");
        try (Producer<String> p = client.newProducer(Schema.STRING).topic(topic).batcherBuilder(BatcherBuilder.KEY_BASED)
                .batchingMaxMessages(10).batchingMaxPublishDelay(1, TimeUnit.SECONDS).create()) {
            Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                    .subscriptionType(SubscriptionType.Shared).enableBatchIndexAcknowledgment(true).subscribe();
            for (int i = 0; i < 10; i++) {
                p.sendAsync(Integer.toString(i));
            }
            p.flush();
            for (int i = 0; i < 10; i++) {
                Message<String> m = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
                if (Integer.parseInt(m.getValue()) < 5) {
                    c.acknowledge(m);
                }
            }
            c.close();
            c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                    .subscriptionType(SubscriptionType.Shared).enableBatchIndexAcknowledgment(true).subscribe();
            Set<String> rest = new HashSet<>(receiveAll(c, 5));
            assertEquals(Set.of("5", "6", "7", "8", "9"), rest);
            c.close();
        }
    }

    @Test
    void readerAndSeek() throws Exception {
        String topic = Env.topic("reader");
        List<MessageId> ids = new ArrayList<>();
        try (Producer<String> p = client.newProducer(Schema.STRING).topic(topic).enableBatching(false).create()) {
            for (int i = 0; i < 10; i++) {
                ids.add(p.send(Integer.toString(i)));
            }
        }
        try (Reader<String> r = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest).create()) {
            for (int i = 0; i < 10; i++) {
                assertEquals(Integer.toString(i), r.readNext(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
            }
            assertTrue(!r.hasMessageAvailable());
        }
        try (Reader<String> r = client.newReader(Schema.STRING).topic(topic).startMessageId(ids.get(4))
                .startMessageIdInclusive().create()) {
            assertEquals("4", r.readNext(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("seek")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            receiveAll(c, 10);
            // The Java consumer's seek is exclusive (resetIncludeHead=false): the broker resets
            // to 6 and the client drops 6 itself (ConsumerImpl.isPriorEntryIndex).
            c.seek(ids.get(6));
            assertEquals("7", c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
            c.seek(0L);
            assertEquals("0", c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
    }

    @Test
    void negativeAckRedeliveryAndDeadLetter() throws Exception {
        String topic = Env.topic("dlq");
        String dlq = topic + "-DLQ";
        try (Consumer<String> dlqConsumer = client.newConsumer(Schema.STRING).topic(dlq).subscriptionName("d").subscribe();
             Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                     .subscriptionType(SubscriptionType.Shared).negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS)
                     .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(2).deadLetterTopic(dlq).build())
                     .subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).create()) {
            p.send("poison");
            for (int i = 0; i < 3; i++) {
                Message<String> m = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
                assertEquals(i, m.getRedeliveryCount());
                c.negativeAcknowledge(m);
            }
            assertEquals("poison", dlqConsumer.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
    }

    @Test
    void delayedDelivery() throws Exception {
        String topic = Env.topic("delayed");
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s")
                .subscriptionType(SubscriptionType.Shared).subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).create()) {
            p.newMessage().value("later").deliverAfter(2, TimeUnit.SECONDS).send();
            p.send("now");
            assertEquals("now", c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
            assertEquals("later", c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
    }

    @Test
    void partitionedTopic() throws Exception {
        String topic = Env.topic("partitioned");
        try (var admin = Env.admin()) {
            admin.topics().createPartitionedTopic(topic, 4);
        }
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s").subscribe();
             Producer<String> p = client.newProducer(Schema.STRING).topic(topic).enableBatching(false).create()) {
            for (int i = 0; i < 40; i++) {
                p.send(Integer.toString(i));
            }
            Set<String> partitions = new HashSet<>();
            Set<String> got = new HashSet<>();
            for (int i = 0; i < 40; i++) {
                Message<String> m = c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
                partitions.add(m.getTopicName());
                got.add(m.getValue());
                c.acknowledge(m);
            }
            assertEquals(40, got.size());
            assertEquals(4, partitions.size());
        }
    }
}
