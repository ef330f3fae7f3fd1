package io.magnetar.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.junit.jupiter.api.Test;

/** pulsar-perf (org.apache.pulsar:pulsar-testclient, the same distribution's tool) produces
 *  and consumes against the server; run as its own JVM over perf/target/lib (perf/pom.xml),
 *  as bin/pulsar-perf runs it over the distribution's lib/. */
class PerfTest {
    /** Runs the tool as bin/pulsar-perf does: its first argument is the client.conf. */
    static int perf(Path conf, Path log, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("pulsar.perf.lib", "perf/target/lib") + File.separator + "*",
                "org.apache.pulsar.testclient.PulsarPerfTestTool", conf.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!p.waitFor(5, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            throw new AssertionError("pulsar-perf " + String.join(" ", args) + " did not finish; log " + log);
        }
        return p.exitValue();
    }

    @Test
    void produceThenConsume() throws Exception {
        String topic = Env.topic("perf");
        Path dir = Files.createTempDirectory("pulsar-perf");
        Path conf = dir.resolve("client.conf");
        Files.writeString(conf, "webServiceUrl=" + Env.ADMIN_URL + "/\nbrokerServiceUrl=" + Env.SERVICE_URL + "/\n");
        try (PulsarAdmin admin = Env.admin()) {
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().createSubscription(topic, "perf-sub", org.apache.pulsar.client.api.MessageId.earliest);
            int code = perf(conf, dir.resolve("produce.log"), "produce", "--service-url", Env.SERVICE_URL,
                    "--admin-url", Env.ADMIN_URL, "-m", "2000", "-r", "2000", "-s", "128", topic);
            assertEquals(0, code, Files.readString(dir.resolve("produce.log")));
            // -m stops the tool at 2000 acknowledged sends; the ones in flight then are stored too.
            // Wait until they are all in (the count stops moving).
            long stored = admin.topics().getStats(topic).getMsgInCounter();
            for (long before = -1; before != stored; ) {
                Thread.sleep(1000);
                before = stored;
                stored = admin.topics().getStats(topic).getMsgInCounter();
            }
            assertTrue(stored >= 2000, "stored " + stored);
            code = perf(conf, dir.resolve("consume.log"), "consume", "--service-url", Env.SERVICE_URL,
                    "-ss", "perf-sub", "-m", Long.toString(stored), topic);
            assertEquals(0, code, Files.readString(dir.resolve("consume.log")));
            // The tool exits before its grouped acknowledgements are sent, so the backlog need
            // not be 0: what it received is what counts.
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("--- (\\d+) records received")
                    .matcher(Files.readString(dir.resolve("consume.log")));
            assertTrue(m.find(), "no summary in the consume log");
            assertEquals(stored, Long.parseLong(m.group(1)));
        }
        for (File f : dir.toFile().listFiles()) {
            f.delete();
        }
    }
}
