package io.magnetar.compat.spring;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pulsar.client.api.SubscriptionType;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.pulsar.annotation.PulsarListener;
import org.springframework.pulsar.core.PulsarTemplate;
import org.springframework.stereotype.Service;

/** A small order service: it publishes orders with PulsarTemplate and a @PulsarListener
 *  records the ones it receives, as a Spring user's app would. */
@SpringBootApplication
public class OrdersApp {
    public static final String TOPIC = "persistent://public/default/spring-orders";

    public record Order(String id, long amount) {}

    public static void main(String[] args) {
        SpringApplication.run(OrdersApp.class, args);
    }

    @Service
    public static class Orders {
        private final PulsarTemplate<Order> template;
        final List<Order> received = new CopyOnWriteArrayList<>();

        Orders(PulsarTemplate<Order> template) {
            this.template = template;
        }

        public void place(Order order) throws Exception {
            template.send(TOPIC, order);
        }

        public List<Order> received() {
            return received;
        }

        @PulsarListener(topics = TOPIC, subscriptionName = "orders-app", subscriptionType = SubscriptionType.Shared,
                schemaType = org.apache.pulsar.common.schema.SchemaType.JSON)
        void onOrder(Order order) {
            received.add(order);
        }
    }
}
