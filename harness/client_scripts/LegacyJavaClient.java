/*
 * LegacyJavaClient: an old release of Kafka's Java client (kafka-clients 0.10.1.1, 0.10.2.2 or 2.8.2, the one on the
 * class path) producing to a topic every few seconds, in its own JVM. Run as a single-file program:
 *
 *     java -cp '.tools/kafka-clients-legacy/0.10.2.2/*' LegacyJavaClient.java BOOTSTRAP [options]
 *
 * Options: --client-id ID, --topic T (default demo), --timeout S (bootstrap, default 20), --interval S (between
 * records, default 2), --property KEY=VALUE (any producer setting, repeatable).
 *
 * Only KafkaProducer calls that exist from 0.10.1 to 2.8 are used (JavaClient.java's Admin arrived in 0.11 and
 * Duration-taking close() in 2.2), so one source compiles and runs against all three jars.
 *
 * Protocol with the parent (harness/clients.py), as for the other script clients: READY on stdout once the
 * first record is acknowledged, then one record every interval (a failed one is reported on stderr and the loop goes
 * on, so a broker that refuses the client keeps seeing it) until stdin reaches EOF; then the producer is closed and
 * the exit code is 0. A bootstrap that fails (no metadata or no acknowledgement within the timeout) exits 1 with
 * the cause on stderr.
 *
 * What each release sends (read from its NetworkClient and request classes, and checked against a real broker's
 * request log): 0.10.1 sends no ApiVersions at all, then Metadata v2 and Produce v2; 0.10.2 (KIP-97) sends
 * ApiVersions v0 first and then uses the highest versions both sides know, Metadata v2 and Produce v2; 2.8 sends
 * ApiVersions v3 with client.software.name "apache-kafka-java" and its own version (KIP-511 client side, 2.4+).
 */

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class LegacyJavaClient {
    static final String USAGE = "usage: LegacyJavaClient.java BOOTSTRAP [--client-id ID] [--topic T] [--timeout S] "
            + "[--interval S] [--property KEY=VALUE]...";

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            fail(USAGE);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        // The broker counts a connection only while it is open: an idle client must not close it.
        props.put("connections.max.idle.ms", Integer.toString(Integer.MAX_VALUE));
        props.put("key.serializer", ByteArraySerializer.class.getName());
        props.put("value.serializer", ByteArraySerializer.class.getName());
        String topic = "demo";
        long timeoutMs = 20_000;
        long intervalMs = 2_000;
        for (int i = 1; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                fail("option " + args[i] + " needs a value; " + USAGE);
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--client-id" -> props.put("client.id", value);
                case "--topic" -> topic = value;
                case "--timeout" -> timeoutMs = Math.round(Double.parseDouble(value) * 1000);
                case "--interval" -> intervalMs = Math.round(Double.parseDouble(value) * 1000);
                case "--property" -> {
                    int eq = value.indexOf('=');
                    if (eq <= 0) {
                        fail("--property takes KEY=VALUE, got '" + value + "'");
                    }
                    props.put(value.substring(0, eq), value.substring(eq + 1));
                }
                default -> fail("unknown option " + args[i] + "; " + USAGE);
            }
        }
        props.put("max.block.ms", Long.toString(timeoutMs));
        // 0.10's default request timeout is 30 s: a refused record must fail within the bootstrap deadline.
        props.put("request.timeout.ms", Long.toString(Math.max(timeoutMs, 1_000)));
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
        try {
            producer.partitionsFor(topic);
            producer.send(new ProducerRecord<byte[], byte[]>(topic, "ready".getBytes()))
                    .get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.err.println("LegacyJavaClient: bootstrap against " + args[0] + " failed: " + cause);
            close(producer, 0);
            System.exit(1);
        }
        System.out.println("READY");
        System.out.flush();
        Producing loop = new Producing(producer, topic, intervalMs, timeoutMs);
        Thread thread = new Thread(loop, "legacy-producer-loop");
        thread.setDaemon(true);
        thread.start();
        waitForEof(System.in);
        loop.stop();
        thread.join(timeoutMs + intervalMs);
        close(producer, 10_000);
    }

    /** One record every interval until stopped; the next record waits for the previous one's answer. */
    static final class Producing implements Runnable {
        private final KafkaProducer<byte[], byte[]> producer;
        private final String topic;
        private final long intervalMs;
        private final long timeoutMs;
        private volatile boolean stopped;

        Producing(KafkaProducer<byte[], byte[]> producer, String topic, long intervalMs, long timeoutMs) {
            this.producer = producer;
            this.topic = topic;
            this.intervalMs = intervalMs;
            this.timeoutMs = timeoutMs;
        }

        void stop() {
            stopped = true;
            synchronized (this) {
                notifyAll();
            }
        }

        @Override
        public void run() {
            long sent = 0;
            while (!stopped) {
                synchronized (this) {
                    try {
                        wait(intervalMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (stopped) {
                    return;
                }
                try {
                    producer.send(new ProducerRecord<byte[], byte[]>(topic, ("record-" + ++sent).getBytes()))
                            .get(timeoutMs, TimeUnit.MILLISECONDS);
                } catch (ExecutionException | TimeoutException | RuntimeException e) {
                    Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
                    System.err.println("LegacyJavaClient: produce failed: " + cause);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }
    }

    /** The parent closes our stdin to ask us to close; if it dies, the pipe closes too. */
    static void waitForEof(InputStream in) throws IOException {
        byte[] buffer = new byte[4096];
        while (in.read(buffer) >= 0) {
            // nothing to read but the end
        }
    }

    static void close(KafkaProducer<byte[], byte[]> producer, long timeoutMs) {
        try {
            // close(long, TimeUnit): the one timed close every release from 0.10.1 to 2.8 has.
            producer.close(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (RuntimeException e) {
            System.err.println("LegacyJavaClient: closing: " + e);
        }
    }

    static void fail(String message) {
        System.err.println("LegacyJavaClient: " + message);
        System.exit(2);
    }
}
