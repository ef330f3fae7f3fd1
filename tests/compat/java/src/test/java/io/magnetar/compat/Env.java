package io.magnetar.compat;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;

/** Where the server is and how to reach it (system properties pulsar.serviceUrl, pulsar.adminUrl). */
final class Env {
    static final String SERVICE_URL = System.getProperty("pulsar.serviceUrl", "pulsar://localhost:6650");
    static final String ADMIN_URL = System.getProperty("pulsar.adminUrl", "http://localhost:8080");
    /** The TLS listeners and the credentials of the Go client's CI configuration, which the
     *  runner stages under /pulsar (certs/cacert.pem, tokens/token.txt of role token-principal,
     *  tokens/admin-token of the superuser admin). */
    static final String SERVICE_URL_TLS = System.getProperty("pulsar.serviceUrlTls", "pulsar+ssl://localhost:6651");
    static final String ADMIN_URL_TLS = System.getProperty("pulsar.adminUrlTls", "https://localhost:8443");
    static final String CA_FILE = System.getProperty("pulsar.tlsTrustCertsFilePath", "/pulsar/certs/cacert.pem");
    static final String TOKEN_FILE = System.getProperty("pulsar.tokenFile", "/pulsar/tokens/token.txt");
    static final String ADMIN_TOKEN_FILE = System.getProperty("pulsar.adminTokenFile", "/pulsar/tokens/admin-token");
    /** A bound that only catches hangs on a loaded machine. */
    static final int RECEIVE_SECONDS = 30;

    private Env() {}

    static PulsarClient client() throws PulsarClientException {
        return PulsarClient.builder().serviceUrl(SERVICE_URL).operationTimeout(60, TimeUnit.SECONDS).build();
    }

    static PulsarClient txnClient() throws PulsarClientException {
        return PulsarClient.builder().serviceUrl(SERVICE_URL).enableTransaction(true)
                .operationTimeout(60, TimeUnit.SECONDS).build();
    }

    static PulsarAdmin admin() throws PulsarClientException {
        return PulsarAdmin.builder().serviceHttpUrl(ADMIN_URL).build();
    }

    static String topic(String prefix) {
        return "persistent://public/default/java-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
    }
}
