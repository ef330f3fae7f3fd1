package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.policies.data.RetentionPolicies;
import org.apache.pulsar.common.policies.data.TenantInfo;
import org.apache.pulsar.common.policies.data.TopicStats;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The official Java admin client: clusters, tenants, namespaces and their policies, topics,
 *  subscriptions, stats and schemas. */
class AdminTest {
    static PulsarAdmin admin;
    static PulsarClient client;

    @BeforeAll
    static void connect() throws Exception {
        admin = Env.admin();
        client = Env.client();
    }

    @AfterAll
    static void close() throws Exception {
        client.close();
        admin.close();
    }

    @Test
    void clustersTenantsNamespaces() throws Exception {
        assertTrue(admin.clusters().getClusters().contains("standalone"));
        String tenant = "jt-" + UUID.randomUUID().toString().substring(0, 6);
        admin.tenants().createTenant(tenant, TenantInfo.builder().allowedClusters(Set.of("standalone")).build());
        assertTrue(admin.tenants().getTenants().contains(tenant));
        String ns = tenant + "/ns";
        admin.namespaces().createNamespace(ns);
        assertTrue(admin.namespaces().getNamespaces(tenant).contains(ns));
        admin.namespaces().setRetention(ns, new RetentionPolicies(60, 100));
        assertEquals(new RetentionPolicies(60, 100), admin.namespaces().getRetention(ns));
        admin.namespaces().setNamespaceMessageTTL(ns, 120);
        assertEquals(120, admin.namespaces().getNamespaceMessageTTL(ns));
        assertThrows(PulsarAdminException.ConflictException.class, () -> admin.namespaces().createNamespace(ns));
        admin.namespaces().deleteNamespace(ns);
        admin.tenants().deleteTenant(tenant);
        assertThrows(PulsarAdminException.NotFoundException.class, () -> admin.tenants().getTenantInfo(tenant));
    }

    @Test
    void topicsSubscriptionsAndStats() throws Exception {
        String topic = Env.topic("admin");
        admin.topics().createNonPartitionedTopic(topic);
        assertTrue(admin.topics().getList("public/default").contains(topic));
        admin.topics().createSubscription(topic, "sub", MessageId.earliest);
        assertTrue(admin.topics().getSubscriptions(topic).contains("sub"));
        try (Producer<String> p = client.newProducer(Schema.STRING).topic(topic).create()) {
            for (int i = 0; i < 5; i++) {
                p.send("m" + i);
            }
        }
        TopicStats stats = admin.topics().getStats(topic);
        assertEquals(5, stats.getMsgInCounter());
        assertEquals(5, stats.getSubscriptions().get("sub").getMsgBacklog());
        assertEquals(1, admin.topics().peekMessages(topic, "sub", 1).size());
        admin.topics().skipMessages(topic, "sub", 2);
        assertEquals(3, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
        admin.topics().resetCursor(topic, "sub", MessageId.earliest);
        try (Consumer<String> c = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub").subscribe()) {
            assertEquals("m0", c.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
        admin.topics().deleteSubscription(topic, "sub");
        admin.topics().delete(topic, true);
        assertTrue(!admin.topics().getList("public/default").contains(topic));
    }

    @Test
    void partitionedTopics() throws Exception {
        String topic = Env.topic("admin-part");
        admin.topics().createPartitionedTopic(topic, 2);
        assertEquals(2, admin.topics().getPartitionedTopicMetadata(topic).partitions);
        admin.topics().updatePartitionedTopic(topic, 3);
        assertEquals(3, admin.topics().getPartitionedTopicMetadata(topic).partitions);
        assertTrue(admin.topics().getPartitionedTopicList("public/default").contains(topic));
        admin.topics().deletePartitionedTopic(topic, true);
    }

    @Test
    void schemas() throws Exception {
        String topic = Env.topic("admin-schema");
        try (Producer<SchemaTest.User> p = client.newProducer(Schema.AVRO(SchemaTest.User.class)).topic(topic).create()) {
            p.send(new SchemaTest.User("x", 1));
        }
        assertEquals("AVRO", admin.schemas().getSchemaInfo(topic).getType().name());
        admin.schemas().deleteSchema(topic);
    }
}
