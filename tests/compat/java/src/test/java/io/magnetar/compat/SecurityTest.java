package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.EnumSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.api.Authentication;
import org.apache.pulsar.client.api.AuthenticationFactory;
import org.apache.pulsar.client.api.ClientBuilder;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.policies.data.AuthAction;
import org.apache.pulsar.common.policies.data.SubscriptionAuthMode;
import org.junit.jupiter.api.Test;

/** The Java client and admin over TLS with token authentication (issue 16): pulsar+ssl:// and
 *  https:// verified against the CI configuration's CA, tokens read from their files, and the
 *  refusals a user would meet (no token, a forged one, a role without the permission). */
class SecurityTest {
    static String read(String file) throws Exception {
        return new String(Files.readAllBytes(Paths.get(file)), StandardCharsets.UTF_8).trim();
    }

    static PulsarClient tlsClient(Authentication auth) throws PulsarClientException {
        ClientBuilder b = PulsarClient.builder().serviceUrl(Env.SERVICE_URL_TLS).tlsTrustCertsFilePath(Env.CA_FILE)
                .enableTlsHostnameVerification(true).allowTlsInsecureConnection(false)
                .operationTimeout(30, TimeUnit.SECONDS);
        if (auth != null) {
            b.authentication(auth);
        }
        return b.build();
    }

    static PulsarAdmin httpsAdmin(Authentication auth) throws PulsarClientException {
        return PulsarAdmin.builder().serviceHttpUrl(Env.ADMIN_URL_TLS).tlsTrustCertsFilePath(Env.CA_FILE)
                .enableTlsHostnameVerification(true).allowTlsInsecureConnection(false).authentication(auth).build();
    }

    static String privateTopic() {
        return "persistent://private/auth/java-tls-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @Test
    void produceConsumeOverTlsWithToken() throws Exception {
        String topic = privateTopic();
        // The token as a supplier reading its file, as token auth with file:// does.
        Authentication auth = AuthenticationFactory.token(() -> {
            try {
                return read(Env.TOKEN_FILE);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        try (PulsarClient client = tlsClient(auth);
                Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("s").subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).create()) {
            for (int i = 0; i < 10; i++) {
                producer.send("m-" + i);
            }
            for (int i = 0; i < 10; i++) {
                Message<String> m = consumer.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
                assertNotNull(m, "message " + i + " not received");
                assertEquals("m-" + i, m.getValue());
                consumer.acknowledge(m);
            }
        }
    }

    @Test
    void tlsWithoutPermissionOrValidTokenIsRefused() throws Exception {
        String topic = privateTopic();
        // No token: the anonymous role, which has nothing on private/auth.
        try (PulsarClient anonymous = tlsClient(null)) {
            assertThrows(PulsarClientException.class, () -> anonymous.newProducer().topic(topic).create());
        }
        String token = read(Env.TOKEN_FILE);
        String forged = token.substring(0, token.length() - 4) + "AAAA";
        try (PulsarClient bad = tlsClient(AuthenticationFactory.token(forged))) {
            assertThrows(PulsarClientException.class, () -> bad.newProducer().topic(topic).create());
        }
    }

    @Test
    void adminOverHttpsWithToken() throws Exception {
        String topic = privateTopic();
        try (PulsarAdmin admin = httpsAdmin(AuthenticationFactory.token(read(Env.ADMIN_TOKEN_FILE)))) {
            List<String> tenants = admin.tenants().getTenants();
            assertTrue(tenants.contains("private"), "tenants " + tenants);
            admin.topics().createNonPartitionedTopic(topic);
            assertTrue(admin.topics().getList("private/auth").contains(topic));
        }
        try (PulsarAdmin user = httpsAdmin(AuthenticationFactory.token(read(Env.TOKEN_FILE)))) {
            // token-principal may produce and consume on private/auth: its topic stats, not the tenants.
            assertNotNull(user.topics().getStats(topic));
            assertThrows(PulsarAdminException.NotAuthorizedException.class, () -> user.tenants().getTenants());
        }
        try (PulsarAdmin none = PulsarAdmin.builder().serviceHttpUrl(Env.ADMIN_URL_TLS)
                .authentication(AuthenticationFactory.token(read(Env.ADMIN_TOKEN_FILE))).build()) {
            // The JVM's own trust store does not know the CI configuration's CA.
            assertThrows(PulsarAdminException.class, () -> none.tenants().getTenants());
        }
    }

    @Test
    void subscriptionAuthModePrefix() throws Exception {
        String ns = "private/java-prefix-" + UUID.randomUUID().toString().substring(0, 8);
        String topic = "persistent://" + ns + "/t";
        try (PulsarAdmin admin = httpsAdmin(AuthenticationFactory.token(read(Env.ADMIN_TOKEN_FILE)))) {
            admin.namespaces().createNamespace(ns);
            admin.namespaces().grantPermissionOnNamespace(ns, "token-principal", EnumSet.of(AuthAction.consume, AuthAction.produce));
            assertEquals(SubscriptionAuthMode.None, admin.namespaces().getSubscriptionAuthMode(ns));
            admin.namespaces().setSubscriptionAuthMode(ns, SubscriptionAuthMode.Prefix);
            assertEquals(SubscriptionAuthMode.Prefix, admin.namespaces().getSubscriptionAuthMode(ns));
        }
        try (PulsarClient client = tlsClient(AuthenticationFactory.token(read(Env.TOKEN_FILE)))) {
            // Permissions are read through a short cache: wait (bounded) until the mode bites.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                try {
                    client.newConsumer().topic(topic).subscriptionName("orders").subscribe().close();
                } catch (PulsarClientException.AuthorizationException e) {
                    break;
                }
                assertTrue(System.nanoTime() < deadline, "subscription orders was never refused");
                Thread.sleep(200);
            }
            client.newConsumer().topic(topic).subscriptionName("token-principal-orders").subscribe().close();
        }
    }
}
