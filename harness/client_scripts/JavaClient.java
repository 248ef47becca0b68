/*
 * JavaClient: Kafka's own Java client (kafka-clients, the release on the class path) against a bootstrap address,
 * in its own JVM. Run as a single-file program:
 *
 *     java -cp kafka-clients-4.3.0.jar:slf4j-api-2.0.18.jar JavaClient.java ROLE BOOTSTRAP [options]
 *
 * ROLE: admin (Admin.describeCluster), producer (KafkaProducer: partitionsFor, then one record acknowledged),
 * both (one application holding an Admin and a Producer), or share-consumer (KafkaShareConsumer, KIP-932: subscribes
 * to the topic in share group `group.id`, default "share-group", and polls until stdin reaches EOF; READY after its
 * first poll, 4.x clients and brokers with share groups only). Options: --client-id ID, --topic T (default demo),
 * --timeout S (bootstrap, default 20), --property KEY=VALUE (any client setting, repeatable: security.protocol,
 * sasl.*, ssl.* ...).
 *
 * Protocol with the parent (harness/clients.py), as for the other script clients: READY on stdout once
 * bootstrapped, then the connections are held until stdin reaches EOF, the clients are closed and the exit code
 * is 0. Anything else goes to stderr; a failed bootstrap exits 1 with the cause.
 *
 * The client sends client.software.name "apache-kafka-java" and client.software.version AppInfoParser's version
 * in ApiVersionsRequest v3+ (4.3.0 a9ce3221537b: ApiVersionsRequest.java:32-36, NetworkClient.java:1088; 3.9.0
 * cc53a632edcf: ApiVersionsRequest.java:33-37, NetworkClient.java:1037), which is what a broker records for it; the
 * version is kafka/kafka-version.properties in the jar (4.3.0, 3.9.0). The Producer is idempotent by default
 * (ProducerConfig.java:527-529 at 4.3.0), so its first record needs InitProducerId from the broker.
 */

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class JavaClient {
    static final String USAGE = "usage: JavaClient.java {admin|producer|both|share-consumer} BOOTSTRAP "
            + "[--client-id ID] [--topic T] "
            + "[--timeout S] [--property KEY=VALUE]...";

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            fail(USAGE);
        }
        String role = args[0];
        if (!List.of("admin", "producer", "both", "share-consumer").contains(role)) {
            fail("unknown role '" + role + "'; " + USAGE);
        }
        Properties props = new Properties();
        props.put("bootstrap.servers", args[1]);
        // The broker counts a connection only while it is open: an idle client must not close it.
        props.put("connections.max.idle.ms", Integer.toString(Integer.MAX_VALUE));
        String topic = "demo";
        long timeoutMs = 20_000;
        for (int i = 2; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                fail("option " + args[i] + " needs a value; " + USAGE);
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--client-id" -> props.put("client.id", value);
                case "--topic" -> topic = value;
                case "--timeout" -> timeoutMs = Math.round(Double.parseDouble(value) * 1000);
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
        if (role.equals("share-consumer")) {
            shareConsume(props, topic);
            return;
        }
        Admin admin = null;
        KafkaProducer<byte[], byte[]> producer = null;
        try {
            if (!role.equals("producer")) {
                admin = Admin.create(props);
                admin.describeCluster().nodes().get(timeoutMs, TimeUnit.MILLISECONDS);
            }
            if (!role.equals("admin")) {
                Properties producerProps = (Properties) props.clone();
                producerProps.put("key.serializer", ByteArraySerializer.class.getName());
                producerProps.put("value.serializer", ByteArraySerializer.class.getName());
                producerProps.put("max.block.ms", Long.toString(timeoutMs));
                producer = new KafkaProducer<>(producerProps);
                producer.partitionsFor(topic);
                producer.send(new ProducerRecord<>(topic, "ready".getBytes())).get(timeoutMs, TimeUnit.MILLISECONDS);
            }
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.err.println("JavaClient: bootstrap against " + args[1] + " failed: " + cause);
            // Without waiting: an Admin would otherwise wait for its pending call (default.api.timeout.ms).
            close(admin, producer, Duration.ZERO);
            System.exit(1);
        }
        System.out.println("READY");
        System.out.flush();
        waitForEof(System.in);
        close(admin, producer, Duration.ofSeconds(10));
    }

    /** A share-group member: polls (acknowledging implicitly) on this thread until stdin reaches EOF. */
    static void shareConsume(Properties props, String topic) throws Exception {
        props.putIfAbsent("group.id", "share-group");
        KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        Thread eof = new Thread(() -> {
            try {
                waitForEof(System.in);
            } catch (IOException e) {
                // the parent is gone: close as on EOF
            }
            consumer.wakeup();
        }, "stdin-eof");
        eof.setDaemon(true);
        try {
            consumer.subscribe(List.of(topic));
            consumer.poll(Duration.ofMillis(500));
            System.out.println("READY");
            System.out.flush();
            eof.start();
            while (true) {
                consumer.poll(Duration.ofMillis(500));
            }
        } catch (WakeupException e) {
            // stdin reached EOF
        } catch (RuntimeException e) {
            System.err.println("JavaClient: share consumer against " + props.get("bootstrap.servers") + ": " + e);
            consumer.close(Duration.ZERO);
            System.exit(1);
        }
        consumer.close(Duration.ofSeconds(10));
    }

    /** The parent closes our stdin to ask us to close; if it dies, the pipe closes too. */
    static void waitForEof(InputStream in) throws IOException {
        byte[] buffer = new byte[4096];
        while (in.read(buffer) >= 0) {
            // nothing to read but the end
        }
    }

    static void close(Admin admin, KafkaProducer<byte[], byte[]> producer, Duration timeout) {
        try {
            if (producer != null) {
                producer.close(timeout);
            }
            if (admin != null) {
                admin.close(timeout);
            }
        } catch (RuntimeException e) {
            System.err.println("JavaClient: closing: " + e);
        }
    }

    static void fail(String message) {
        System.err.println("JavaClient: " + message);
        System.exit(2);
    }
}
