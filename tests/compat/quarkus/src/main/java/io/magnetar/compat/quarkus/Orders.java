package io.magnetar.compat.quarkus;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import org.eclipse.microprofile.reactive.messaging.Channel;
import org.eclipse.microprofile.reactive.messaging.Emitter;
import org.eclipse.microprofile.reactive.messaging.Incoming;

/** A small order service on Quarkus Messaging: orders go out through an Emitter to a Pulsar
 *  topic and an @Incoming method records the ones it receives. */
@ApplicationScoped
public class Orders {
    @Inject
    @Channel("orders-out")
    Emitter<String> out;

    private final List<String> received = new CopyOnWriteArrayList<>();

    public CompletionStage<Void> place(String order) {
        return out.send(order);
    }

    public List<String> received() {
        return received;
    }

    @Incoming("orders-in")
    void onOrder(String order) {
        received.add(order);
    }
}
