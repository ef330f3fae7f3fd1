package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.junit.jupiter.api.Test;

/** Transactions with the official Java client: produce and acknowledge atomically, commit
 *  and abort. */
class TransactionTest {
    @Test
    void commitAndAbort() throws Exception {
        String in = Env.topic("txn-in");
        String out = Env.topic("txn-out");
        try (PulsarClient client = Env.txnClient();
             Producer<String> seed = client.newProducer(Schema.STRING).topic(in).create();
             Consumer<String> inC = client.newConsumer(Schema.STRING).topic(in).subscriptionName("s")
                     .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
             Producer<String> outP = client.newProducer(Schema.STRING).topic(out).sendTimeout(0, TimeUnit.SECONDS).create();
             Consumer<String> outC = client.newConsumer(Schema.STRING).topic(out).subscriptionName("s").subscribe()) {
            seed.send("a");
            seed.send("b");

            Transaction abort = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get();
            Message<String> a = inC.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS);
            outP.newMessage(abort).value("from-" + a.getValue()).send();
            inC.acknowledgeAsync(a.getMessageId(), abort).get();
            abort.abort().get();
            assertNull(outC.receive(2, TimeUnit.SECONDS), "an aborted transaction's message is never delivered");

            Transaction commit = client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get();
            outP.newMessage(commit).value("committed").send();
            commit.commit().get();
            assertEquals("committed", outC.receive(Env.RECEIVE_SECONDS, TimeUnit.SECONDS).getValue());
        }
    }
}
