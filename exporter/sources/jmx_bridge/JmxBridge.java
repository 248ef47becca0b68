// The exporter's long-lived JMX bridge: one JVM that keeps one JMX connection per broker open across cycles.
// Protocol (one JSON object per line): requests on stdin
//   {"id": 7, "broker": "prod/1", "url": "service:jmx:rmi:///jndi/rmi://h:9999/jmxrmi", "username": "u",
//    "password": "p", "timeout_ms": 1750, "queries": ["kafka.server:type=...,*/connections", ...]}
// and responses on stdout, in completion order:
//   {"id": 7, "items": [...]}                         items exactly as jmxquery's jar prints them
//   {"id": 7, "error": "connection", "message": "..."}  error: connection | authentication | timeout | jmx_error
// Credentials arrive only here, never on the command line, and are never written to stderr (log lines only).
// Arguments: <worker threads> <idle seconds after which an unasked broker's connection is closed>.
// Read and connect timeouts of RMI itself come from -Dsun.rmi.transport.* options set by the exporter.

import com.outlyer.jmx.jmxquery.JMXConnector;
import com.outlyer.jmx.jmxquery.JMXMetric;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.FutureTask;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

public final class JmxBridge {
    private static final Writer OUT =
            new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    private static final Map<String, Broker> BROKERS = new ConcurrentHashMap<>();
    private static final Object ABANDONED = new Object();

    /** One broker's connection; `lock` keeps one read per broker at a time (a JMXConnector is not ours to share). */
    private static final class Broker {
        final ReentrantLock lock = new ReentrantLock();
        volatile long lastAsked = System.nanoTime();
        String url;
        String username;
        String password;
        JMXConnector connector;
        // Set by the deadline timer when a read overran: the connection is suspect, reconnect next time.
        volatile boolean broken;

        void close() {
            JMXConnector old = connector;
            connector = null;
            if (old != null) {
                try {
                    old.disconnect();
                } catch (Exception ignored) {
                    // the connection is gone either way
                }
            }
        }
    }

    private static final class Failure extends Exception {
        final String kind;

        Failure(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    public static void main(String[] args) throws Exception {
        int workers = Integer.parseInt(args[0]);
        long idleNanos = TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
        ExecutorService pool = Executors.newFixedThreadPool(workers, daemon("jmx-bridge-worker"));
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(daemon("jmx-bridge-timer"));
        long idleCheckSeconds = Math.max(1, Math.min(30, Long.parseLong(args[1])));
        timer.scheduleWithFixedDelay(() -> closeIdle(idleNanos), idleCheckSeconds, idleCheckSeconds, TimeUnit.SECONDS);
        log("started with " + workers + " workers");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> request;
            try {
                request = Json.parseObject(line);
            } catch (IllegalArgumentException error) {
                log("unreadable request: " + error.getMessage());
                continue;
            }
            Object id = request.get("id");
            AtomicBoolean answered = new AtomicBoolean();
            long timeoutMs = ((Number) request.getOrDefault("timeout_ms", 10000L)).longValue();
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            pool.execute(() -> serve(id, request, answered, deadline));
            // The bridge answers by the deadline even when a read is stuck in RMI: that read's worker is freed by
            // the RMI timeouts, and the exporter can tell a slow broker from a bridge that stopped answering.
            timer.schedule(() -> {
                if (answered.compareAndSet(false, true)) {
                    Broker broker = BROKERS.get(String.valueOf(request.get("broker")));
                    if (broker != null) {
                        broker.broken = true;
                    }
                    respondError(id, "timeout", "JMX query at " + request.get("url") + " did not finish within "
                            + timeoutMs + " ms");
                }
            }, timeoutMs, TimeUnit.MILLISECONDS);
        }
        log("stdin closed; closing " + BROKERS.size() + " connections");
        for (Broker broker : BROKERS.values()) {
            if (broker.lock.tryLock()) {
                broker.close();
            }
        }
        System.exit(0);
    }

    private static void serve(Object id, Map<String, Object> request, AtomicBoolean answered, long deadline) {
        String key = String.valueOf(request.get("broker"));
        Broker broker;
        while (true) {
            broker = BROKERS.computeIfAbsent(key, k -> new Broker());
            broker.lastAsked = System.nanoTime();
            try {
                if (!broker.lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    return; // the previous read of this broker is still stuck; the timer answers this one
                }
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
                return;
            }
            if (BROKERS.get(key) == broker) {
                break; // held and still listed: closeIdle (which takes the lock) can no longer drop it
            }
            broker.lock.unlock(); // closeIdle dropped it just now; a connection made on it would leak
        }
        try {
            List<String> items = read(broker, request, deadline);
            if (answered.compareAndSet(false, true)) {
                respond("{\"id\":" + Json.quoteId(id) + ",\"items\":[" + String.join(",", items) + "]}");
            }
        } catch (Failure failure) {
            if (answered.compareAndSet(false, true)) {
                respondError(id, failure.kind, failure.getMessage());
            }
        } finally {
            broker.lock.unlock();
        }
    }

    @SuppressWarnings("unchecked")
    private static List<String> read(Broker broker, Map<String, Object> request, long deadline) throws Failure {
        String url = (String) request.get("url");
        String username = (String) request.get("username");
        String password = (String) request.get("password");
        if (!url.equals(broker.url) || !Objects.equals(username, broker.username)
                || !Objects.equals(password, broker.password) || broker.broken) {
            broker.close();
            broker.url = url;
            broker.username = username;
            broker.password = password;
            broker.broken = false;
        }
        ArrayList<JMXMetric> queries = new ArrayList<>();
        for (Object query : (List<Object>) request.get("queries")) {
            try {
                queries.add(new JMXMetric((String) query));
            } catch (Exception error) {
                throw new Failure("jmx_error", "bad query " + query + ": " + error);
            }
        }
        boolean reused = broker.connector != null;
        try {
            return query(broker, queries, deadline);
        } catch (Failure failure) {
            broker.close();
            // A kept connection fails once after the broker restarted on the same port: a fresh one reads it now.
            if (!reused || "authentication".equals(failure.kind) || System.nanoTime() >= deadline) {
                throw failure;
            }
            log("reconnecting to " + url + " after: " + failure.getMessage());
            try {
                return query(broker, queries, deadline);
            } catch (Failure again) {
                broker.close();
                throw again;
            }
        }
    }

    private static List<String> query(Broker broker, ArrayList<JMXMetric> queries, long deadline) throws Failure {
        if (broker.connector == null) {
            broker.connector = connect(broker.url, broker.username, broker.password, deadline);
            log("connected to " + broker.url);
        }
        List<String> items = new ArrayList<>();
        try {
            // Fresh metric objects each time: getMetrics fills in values and types on the ones it returns.
            ArrayList<JMXMetric> fresh = new ArrayList<>();
            for (JMXMetric query : queries) {
                fresh.add(new JMXMetric(query.getmBeanName(), query.getAttribute(), query.getAttributeKey()));
            }
            for (JMXMetric metric : broker.connector.getMetrics(fresh)) {
                // jmxquery's JSON keeps control characters raw; a raw line break would split our JSON line.
                items.add(metric.toJSON().replace("\n", "\\n").replace("\r", "\\r"));
            }
        } catch (SecurityException error) {
            throw new Failure("authentication", "JMX access denied: " + describe(error));
        } catch (java.io.IOException error) {
            throw new Failure("connection", "JMX connection to " + broker.url + " failed: " + describe(error));
        } catch (Exception error) {
            throw new Failure("jmx_error", "JMX query at " + broker.url + " failed: " + describe(error));
        }
        return items;
    }

    /** JMXConnectorFactory.connect has no timeout of its own: connect on a worker and give up at the deadline. */
    private static JMXConnector connect(String url, String username, String password, long deadline)
            throws Failure {
        // Either the connect thread publishes its connector here first, or the caller gives up first and the
        // connect thread closes what it made: a connect that succeeds after the deadline leaks nothing.
        AtomicReference<Object> handover = new AtomicReference<>();
        FutureTask<JMXConnector> task = new FutureTask<>(() -> {
            JMXConnector made = new JMXConnector(url, username, password); // (url) alone means a local pid
            if (!handover.compareAndSet(null, made)) {
                made.disconnect();
            }
            return made;
        });
        daemon("jmx-bridge-connect").newThread(task).start();
        try {
            return task.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException timeout) {
            Object made = handover.getAndSet(ABANDONED);
            if (made instanceof JMXConnector) {
                return (JMXConnector) made; // it connected just in time
            }
            // The connect thread ends when the RMI connection and handshake timeouts expire.
            throw new Failure("timeout", "no JMX connection to " + url + " within the deadline");
        } catch (InterruptedException interrupted) {
            Thread.currentThread().interrupt();
            throw new Failure("timeout", "interrupted while connecting to " + url);
        } catch (ExecutionException failed) {
            Throwable cause = failed.getCause();
            if (cause instanceof SecurityException) {
                throw new Failure("authentication", "JMX authentication failed at " + url + ": " + describe(cause));
            }
            throw new Failure("connection", "cannot connect to JMX at " + url + ": " + describe(cause));
        }
    }

    private static void closeIdle(long idleNanos) {
        long now = System.nanoTime();
        for (Map.Entry<String, Broker> entry : BROKERS.entrySet()) {
            Broker broker = entry.getValue();
            if (now - broker.lastAsked > idleNanos && broker.lock.tryLock()) {
                try {
                    if (BROKERS.remove(entry.getKey(), broker)) {
                        if (broker.connector != null) {
                            log("closing the idle connection to " + broker.url);
                        }
                        broker.close();
                    }
                } finally {
                    broker.lock.unlock();
                }
            }
        }
    }

    private static String describe(Throwable error) {
        Throwable root = error;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String text = error.getClass().getSimpleName() + ": " + error.getMessage();
        if (root != error) {
            text += " (caused by " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return text;
    }

    private static void respondError(Object id, String kind, String message) {
        respond("{\"id\":" + Json.quoteId(id) + ",\"error\":" + Json.quote(kind) + ",\"message\":"
                + Json.quote(message) + "}");
    }

    private static void respond(String line) {
        synchronized (OUT) {
            try {
                OUT.write(line);
                OUT.write('\n');
                OUT.flush();
            } catch (java.io.IOException gone) {
                System.exit(0); // the exporter is gone
            }
        }
    }

    private static void log(String message) {
        System.err.println("jmx-bridge: " + message);
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** The JSON subset the requests use: objects, arrays, strings, numbers, true/false/null. */
    static final class Json {
        private final String text;
        private int at;

        private Json(String text) {
            this.text = text;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> parseObject(String text) {
            Json json = new Json(text);
            Object value = json.value();
            json.space();
            if (!(value instanceof Map) || json.at != text.length()) {
                throw new IllegalArgumentException("not one JSON object");
            }
            return (Map<String, Object>) value;
        }

        static String quoteId(Object id) {
            return id instanceof Number ? id.toString() : quote(String.valueOf(id));
        }

        static String quote(String value) {
            StringBuilder out = new StringBuilder("\"");
            for (char c : value.toCharArray()) {
                if (c == '"' || c == '\\') {
                    out.append('\\').append(c);
                } else if (c < 0x20) {
                    out.append(String.format("\\u%04x", (int) c));
                } else {
                    out.append(c);
                }
            }
            return out.append('"').toString();
        }

        private void space() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
                at++;
            }
        }

        private char next() {
            space();
            if (at >= text.length()) {
                throw new IllegalArgumentException("unexpected end");
            }
            return text.charAt(at);
        }

        private void expect(char c) {
            if (next() != c) {
                throw new IllegalArgumentException("expected " + c + " at " + at);
            }
            at++;
        }

        private Object value() {
            char c = next();
            if (c == '{') {
                Map<String, Object> object = new HashMap<>();
                at++;
                if (next() == '}') {
                    at++;
                    return object;
                }
                do {
                    String key = string();
                    expect(':');
                    object.put(key, value());
                } while (comma());
                expect('}');
                return object;
            }
            if (c == '[') {
                List<Object> array = new ArrayList<>();
                at++;
                if (next() == ']') {
                    at++;
                    return array;
                }
                do {
                    array.add(value());
                } while (comma());
                expect(']');
                return array;
            }
            if (c == '"') {
                return string();
            }
            for (String word : new String[] {"true", "false", "null"}) {
                if (text.startsWith(word, at)) {
                    at += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = at;
            while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
                at++;
            }
            if (start == at) {
                throw new IllegalArgumentException("unexpected " + c + " at " + at);
            }
            String number = text.substring(start, at);
            try {
                return number.matches("-?\\d+") ? (Object) Long.valueOf(number) : (Object) Double.valueOf(number);
            } catch (NumberFormatException error) {
                throw new IllegalArgumentException("bad number at " + start);
            }
        }

        private boolean comma() {
            if (next() == ',') {
                at++;
                return true;
            }
            return false;
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                if (at >= text.length()) {
                    throw new IllegalArgumentException("unterminated string");
                }
                char c = text.charAt(at++);
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char e = text.charAt(at++);
                switch (e) {
                    case 'n': out.append('\n'); break;
                    case 't': out.append('\t'); break;
                    case 'r': out.append('\r'); break;
                    case 'b': out.append('\b'); break;
                    case 'f': out.append('\f'); break;
                    case 'u':
                        out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        at += 4;
                        break;
                    default: out.append(e);
                }
            }
        }
    }
}
