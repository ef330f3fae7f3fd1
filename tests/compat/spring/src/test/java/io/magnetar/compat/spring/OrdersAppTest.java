package io.magnetar.compat.spring;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

/** Starts the app against the server and checks its listener receives what it sends. */
@SpringBootTest
class OrdersAppTest {
    @Autowired
    OrdersApp.Orders orders;

    @Test
    void ordersRoundTrip() throws Exception {
        Set<String> sent = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            String id = "order-" + i + "-" + System.nanoTime();
            orders.place(new OrdersApp.Order(id, i));
            sent.add(id);
        }
        long deadline = System.nanoTime() + 60_000_000_000L; // a bound that only catches hangs
        Set<String> got = new HashSet<>();
        while (System.nanoTime() < deadline) {
            orders.received().forEach(o -> got.add(o.id()));
            if (got.containsAll(sent)) {
                break;
            }
            Thread.sleep(100);
        }
        got.retainAll(sent);
        assertEquals(sent, got);
    }
}
