package io.magnetar.compat.quarkus;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.quarkus.test.junit.QuarkusTest;
import jakarta.inject.Inject;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Starts the app against the server and checks its consumer receives what it emits. */
@QuarkusTest
class OrdersTest {
    @Inject
    Orders orders;

    @Test
    void ordersRoundTrip() throws Exception {
        Set<String> sent = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            String id = "order-" + i + "-" + System.nanoTime();
            orders.place(id).toCompletableFuture().get(60, TimeUnit.SECONDS);
            sent.add(id);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); // only catches hangs
        Set<String> got = new HashSet<>();
        while (System.nanoTime() < deadline) {
            got.addAll(orders.received());
            if (got.containsAll(sent)) {
                break;
            }
            Thread.sleep(100);
        }
        got.retainAll(sent);
        assertEquals(sent, got);
    }
}
