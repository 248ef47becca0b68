// The exporter's long-lived JMX bridge: one JVM that keeps one JMX connection per broker open across cycles.
// Protocol (one JSON object per line): requests on stdin
//   {"id": 7, "broker": "prod/1", "url": "service:jmx:rmi:///jndi/rmi://h:9999/jmxrmi", "username": "u",
//    "password": "p", "timeout_ms": 1750, "queries": ["kafka.server:type=...,*/connections", ...]}
// and responses on stdout, in completion order:
//   {"id": 7, "items": [...]}                         items exactly as jmxquery's jar prints them
//   {"id": 7, "error": "connection", "message": "..."}  error: connection | authentication | timeout | jmx_error | tls
// Credentials arrive only here, never on the command line, and are never written to stderr (log lines only).
// Arguments: <worker threads> <idle seconds after which an unasked broker's connection is closed>, then for JMX over
// TLS (one bridge per distinct TLS configuration): ca_file=<PEM> | trust_store=<file> [trust_store_password_file=
// <file>] [trust_store_type=PKCS12|JKS]; for mutual TLS cert_file=<PEM> key_file=<PKCS#8 PEM> | key_store=<file>
// [key_store_password_file=<file>] [key_store_type=PKCS12|JKS]; check_hostname=true|false. Only file paths: the
// bridge reads the passwords from their files, so no secret is on the command line.
// Read and connect timeouts of RMI itself come from -Dsun.rmi.transport.* options set by the exporter.

import com.outlyer.jmx.jmxquery.JMXConnector;
import com.outlyer.jmx.jmxquery.JMXMetric;

import java.io.BufferedReader;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import java.util.Locale;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.Query;
import javax.management.QueryExp;
import javax.management.openmbean.CompositeData;
import javax.management.openmbean.TabularDataSupport;

public final class JmxBridge {
    private static final Writer OUT =
            new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    private static final Map<String, Broker> BROKERS = new ConcurrentHashMap<>();
    private static ExecutorService pool;
    private static volatile String tlsProblem;

    /**
     * One broker's connection. `busy` admits one read per broker at a time (a JMXConnector is not ours to share);
     * a semaphore, not a lock, because a connect thread hands it on to the worker that reads. The other fields
     * are only touched while holding it.
     */
    private static final class Broker {
        final Semaphore busy = new Semaphore(1);
        volatile long lastAsked = System.nanoTime();
        String url;
        String username;
        String password;
        JMXConnector connector;
        // False once this connection's server refused a query of several patterns (a serial filter that admits
        // ObjectName alone, say): its reads then ask one pattern at a time, as every read did before.
        boolean oneQueryPerDomain = true;
        // False once it refused a query of MBeans by their attribute's value: every MBean is then read.
        boolean asksValues = true;
        // Each attribute's last value read or confirmed per MBean (numbers and strings: what a query can compare),
        // for the next cycle to ask which MBeans still hold theirs instead of reading each. Keyed by canonical
        // name: the string alone is kept, not last cycle's ObjectName (a few times its size, 500 brokers over).
        Map<String, Map<String, Object>> lastValues = new HashMap<>();

        void close() {
            JMXConnector old = connector;
            connector = null;
            oneQueryPerDomain = true;
            asksValues = true;
            lastValues = new HashMap<>();
            if (old != null) {
                try {
                    old.disconnect();
                } catch (Exception ignored) {
                    // the connection is gone either way
                }
            }
        }
    }

    /** One request's answer, given once: by its read or, failing that, by the deadline timer. */
    private static final class Reply {
        final Object id;
        final AtomicBoolean answered = new AtomicBoolean();
        private volatile ScheduledFuture<?> deadline;

        Reply(Object id) {
            this.id = id;
        }

        /** The timer's task that answers at the deadline: taken off the timer's queue once the read answers, so
         * the timer thread does not wake for every request's deadline (one a second for three brokers). */
        void expiresWith(ScheduledFuture<?> task) {
            deadline = task;
            if (answered.get()) {
                task.cancel(false);
            }
        }

        void items(List<String> items) {
            if (answered.compareAndSet(false, true)) {
                respond("{\"id\":" + Json.quoteId(id) + ",\"items\":[" + String.join(",", items) + "]}");
                answeredInTime();
            }
        }

        void error(String kind, String message) {
            if (answered.compareAndSet(false, true)) {
                respond("{\"id\":" + Json.quoteId(id) + ",\"error\":" + Json.quote(kind) + ",\"message\":"
                        + Json.quote(message) + "}");
                answeredInTime();
            }
        }

        private void answeredInTime() {
            ScheduledFuture<?> task = deadline;
            if (task != null) {
                task.cancel(false);
            }
        }

        void error(Failure failure) {
            error(failure.kind, failure.getMessage());
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
        logTheJdkAsOurOwn();
        if (args.length > 2) {
            // The RMI server stub of a broker with com.sun.management.jmxremote.ssl=true carries an
            // SslRMIClientSocketFactory, which takes SSLSocketFactory.getDefault(): the default context is the one.
            try {
                SSLContext.setDefault(Tls.context(Tls.options(args)));
            } catch (Exception error) {
                // Every read answers this (a bridge that exited would only be restarted into the same failure).
                tlsProblem = "the JMX TLS configuration cannot be used: " + describe(error);
                log(tlsProblem);
            }
        }
        long idleNanos = TimeUnit.SECONDS.toNanos(Long.parseLong(args[1]));
        pool = Executors.newFixedThreadPool(workers, daemon("jmx-bridge-worker"));
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, daemon("jmx-bridge-timer"));
        timer.setRemoveOnCancelPolicy(true);
        long idleCheckSeconds = Math.max(1, Math.min(30, Long.parseLong(args[1])));
        timer.scheduleWithFixedDelay(() -> closeIdle(idleNanos), idleCheckSeconds, idleCheckSeconds, TimeUnit.SECONDS);
        log("started with " + workers + " workers");
        // The exporter counts its reads' deadlines from here: a JVM starting on a loaded machine can take longer
        // than one, and that is not the brokers' time.
        respond("{\"ready\":true}");
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
            Reply reply = new Reply(request.get("id"));
            long timeoutMs = ((Number) request.getOrDefault("timeout_ms", 10000L)).longValue();
            pool.execute(() -> serve(reply, request));
            // The bridge answers by the deadline even when a read is stuck in RMI (the RMI timeouts free that
            // thread later), so the exporter can tell a slow broker from a bridge that stopped answering.
            reply.expiresWith(timer.schedule(() -> reply.error("timeout", "JMX query at " + request.get("url")
                    + " did not finish within " + timeoutMs + " ms"), timeoutMs, TimeUnit.MILLISECONDS));
        }
        log("stdin closed; closing " + BROKERS.size() + " connections");
        for (Broker broker : BROKERS.values()) {
            if (broker.busy.tryAcquire()) {
                broker.close();
            }
        }
        System.exit(0);
    }

    /** On a worker: read over the kept connection, or hand the broker to a connect thread. */
    @SuppressWarnings("unchecked")
    private static void serve(Reply reply, Map<String, Object> request) {
        String key = String.valueOf(request.get("broker"));
        String url = (String) request.get("url");
        if (tlsProblem != null) {
            reply.error("tls", tlsProblem);
            return;
        }
        Broker broker = claim(key);
        if (broker == null) {
            reply.error("timeout", "JMX query at " + url + ": the previous read of this broker has not finished");
            return;
        }
        boolean handedOver = false;
        try {
            ArrayList<JMXMetric> queries = new ArrayList<>();
            for (Object query : (List<Object>) request.get("queries")) {
                queries.add(parsed(String.valueOf(query)));
            }
            String username = (String) request.get("username");
            String password = (String) request.get("password");
            if (!url.equals(broker.url) || !Objects.equals(username, broker.username)
                    || !Objects.equals(password, broker.password)) {
                broker.close();
                broker.url = url;
                broker.username = username;
                broker.password = password;
            }
            if (broker.connector != null) {
                try {
                    List<String> items = query(broker, queries);
                    handedOver = release(broker);
                    reply.items(items);
                    return;
                } catch (Failure failure) {
                    broker.close();
                    if ("authentication".equals(failure.kind) || reply.answered.get()) {
                        handedOver = release(broker);
                        reply.error(failure);
                        return;
                    }
                    // A kept connection fails once after the broker restarted on the same port: a fresh one reads
                    // it in this same request.
                    log("reconnecting to " + url + " after: " + failure.getMessage());
                }
            }
            connectThenRead(broker, queries, reply);
            handedOver = true;
        } catch (Failure failure) {
            handedOver = release(broker);
            reply.error(failure);
        } finally {
            if (!handedOver) {
                broker.busy.release();
            }
        }
    }

    /**
     * Lets go of the broker before its read is answered: the exporter may send the broker's next request as soon as
     * it has the answer (a next cycle at once), and it must find the broker free, not "the previous read of this
     * broker has not finished". Returns true, for the caller's handed-over flag: the broker is released.
     */
    private static boolean release(Broker broker) {
        broker.busy.release();
        return true;
    }

    /**
     * The exporter sends the same dozen query strings with every request of every broker, and jmxquery parses each
     * with regular expressions (a fifteenth of a read's CPU on real brokers): each distinct string is parsed once.
     * The parsed queries are templates only, never filled in: query() reads on copies of them. Bounded, in case a
     * client sent ever new strings.
     */
    private static final Map<String, JMXMetric> PARSED = new ConcurrentHashMap<>();
    private static final Map<String, ObjectName> PATTERNS = new ConcurrentHashMap<>();
    private static final int PARSED_AT_MOST = 1024;

    private static JMXMetric parsed(String query) throws Failure {
        JMXMetric known = PARSED.get(query);
        if (known != null) {
            return known;
        }
        JMXMetric metric;
        try {
            metric = new JMXMetric(query);
        } catch (Exception error) {
            throw new Failure("jmx_error", "bad query " + query + ": " + error);
        }
        if (PARSED.size() < PARSED_AT_MOST) {
            PARSED.put(query, metric);
        }
        return metric;
    }

    /** A query's MBean pattern as an ObjectName, built once per distinct pattern (as parsed() does its query). */
    private static ObjectName pattern(String name) throws javax.management.MalformedObjectNameException {
        ObjectName known = PATTERNS.get(name);
        if (known != null) {
            return known;
        }
        ObjectName built = new ObjectName(name);
        if (PATTERNS.size() < PARSED_AT_MOST) {
            PATTERNS.put(name, built);
        }
        return built;
    }

    /** The broker's entry, held; null when its previous read still holds it. */
    private static Broker claim(String key) {
        while (true) {
            Broker broker = BROKERS.computeIfAbsent(key, k -> new Broker());
            broker.lastAsked = System.nanoTime();
            if (!broker.busy.tryAcquire()) {
                return null;
            }
            if (BROKERS.get(key) == broker) {
                return broker; // held and still listed: closeIdle (which must hold it too) can no longer drop it
            }
            broker.busy.release(); // closeIdle dropped it just now; a connection made on it would leak
        }
    }

    /**
     * JMXConnectorFactory.connect has no timeout of its own and an unreachable broker can hold it until the RMI
     * timeouts: it runs on a thread of its own, so the workers stay free for the brokers that answer (the timer
     * answers the request at its deadline). A connect that succeeds late is kept for the next request.
     */
    private static void connectThenRead(Broker broker, ArrayList<JMXMetric> queries, Reply reply) {
        String url = broker.url;
        String username = broker.username;
        String password = broker.password;
        Thread thread = daemon("jmx-bridge-connect").newThread(() -> {
            boolean handedOver = false;
            try {
                try {
                    // The (url) constructor alone would attach to a local process id.
                    broker.connector = new JMXConnector(url, username, password);
                    log("connected to " + url);
                } catch (SecurityException error) {
                    handedOver = release(broker);
                    reply.error("authentication", "JMX authentication failed at " + url + ": " + describe(error));
                    return;
                } catch (Exception error) {
                    handedOver = release(broker);
                    if (Tls.failed(error)) {
                        reply.error("tls", "TLS handshake with JMX at " + url + " failed: " + describe(error));
                        return;
                    }
                    if (Tls.droppedBy(error)) {
                        reply.error("tls", "the JMX server at " + url + " closed the TLS connection during the "
                                + "handshake (does it need a client certificate: cert_file and key_file?): "
                                + describe(error));
                        return;
                    }
                    reply.error("connection", "cannot connect to JMX at " + url + ": " + describe(error));
                    return;
                }
                if (reply.answered.get()) {
                    return;
                }
                pool.execute(() -> {
                    List<String> items = null;
                    Failure failed = null;
                    try {
                        items = query(broker, queries);
                    } catch (Failure failure) {
                        broker.close();
                        failed = failure;
                    } finally {
                        broker.busy.release(); // before the answer: see release()
                    }
                    if (failed != null) {
                        reply.error(failed);
                    } else {
                        reply.items(items);
                    }
                });
                handedOver = true;
            } finally {
                if (!handedOver) {
                    broker.busy.release();
                }
            }
        });
        thread.start();
    }

    private static List<String> query(Broker broker, ArrayList<JMXMetric> queries) throws Failure {
        List<String> items = new ArrayList<>();
        try {
            MBeanServerConnection connection = connectionOf(broker.connector);
            List<JMXMetric> fresh = copies(queries);
            Map<JMXMetric, Matched> names = matchedNames(broker, connection, fresh);
            Map<String, Map<String, Object>> values = new HashMap<>();
            for (JMXMetric query : fresh) {
                for (JMXMetric metric : read(broker.connector, connection, query, names.get(query), values)) {
                    // jmxquery's JSON keeps control characters raw; a raw line break would split our JSON line.
                    items.add(metric.toJSON().replace("\n", "\\n").replace("\r", "\\r"));
                }
            }
            broker.lastValues = values; // the MBeans gone since are forgotten with the old map
        } catch (SecurityException error) {
            throw new Failure("authentication", "JMX access denied: " + describe(error));
        } catch (java.io.IOException error) {
            if (Tls.failed(error)) {
                throw new Failure("tls", "TLS with JMX at " + broker.url + " failed: " + describe(error));
            }
            throw new Failure("connection", "JMX connection to " + broker.url + " failed: " + describe(error));
        } catch (Exception error) {
            throw new Failure("jmx_error", "JMX query at " + broker.url + " failed: " + describe(error));
        }
        return items;
    }

    /**
     * jmxquery's JMXConnector.getMetrics for one query, in fewer round trips. jmxquery asks every MBean the pattern
     * matches for its whole MBeanInfo (every attribute's description: a channel's MBean has dozens) only to find
     * the one attribute asked for, then reads it: two RMI calls per MBean, the larger of them useless. Here the
     * attribute is read directly; a plain value (the gauges' Integer and Double, app-info's String) makes the
     * very item jmxquery makes of it (the type it set from the MBeanInfo is overwritten by the value's own). Any
     * other outcome (no such attribute, a failed read, null, composite or tabular data) is left to jmxquery's own
     * code for that one MBean, so what it answers then is exactly what it answered before. Patterns without a
     * named attribute (none or "*": every attribute) go to jmxquery whole. A comparable value (a number, a string)
     * is kept in `values`, by attribute, for the next cycle's matchedNames.
     */
    private static List<JMXMetric> read(JMXConnector connector, MBeanServerConnection connection, JMXMetric query,
            Matched matched, Map<String, Map<String, Object>> values) throws Exception {
        String attribute = query.getAttribute();
        if (connection == null || !readsOneAttribute(query)) {
            return connector.getMetrics(new ArrayList<>(List.of(query)));
        }
        List<JMXMetric> metrics = new ArrayList<>();
        // Names only: queryMBeans would also send each MBean's class name, which nothing here reads.
        Iterable<ObjectName> objectNames = matched != null
                ? matched.names : connection.queryNames(pattern(query.getmBeanName()), null);
        for (ObjectName objectName : objectNames) {
            String name = objectName.toString();
            Object value;
            try {
                value = matched != null && matched.held.containsKey(objectName)
                        ? matched.held.get(objectName) : connection.getAttribute(objectName, attribute);
            } catch (java.io.IOException error) {
                throw error; // the connection is lost: as when jmxquery's next call fails
            } catch (Exception error) {
                value = null;
            }
            if (value == null || value instanceof CompositeData || value instanceof TabularDataSupport) {
                JMXMetric one = new JMXMetric(name, attribute, query.getAttributeKey());
                one.setmetricName(query.getmetricName());
                one.setmetricLabels(query.getmetricLabels());
                metrics.addAll(connector.getMetrics(new ArrayList<>(List.of(one))));
                continue;
            }
            if (comparable(value) != null) {
                values.computeIfAbsent(attribute, key -> new HashMap<>()).put(objectName.getCanonicalName(), value);
            }
            JMXMetric metric = new JMXMetric(name, attribute, null);
            metric.setmetricName(query.getmetricName());
            metric.setmetricLabels(query.getmetricLabels());
            metric.setAttributeType(value);
            metric.setValue(value);
            metrics.add(metric);
        }
        return metrics;
    }

    private static boolean readsOneAttribute(JMXMetric query) {
        return query.getAttribute() != null && !query.getAttribute().equals("*");
    }

    /**
     * The MBeans a query's pattern names, and those of them whose attribute the server said holds a value known
     * here (0, or what it was last cycle), which are not read again.
     */
    private static final class Matched {
        final List<ObjectName> names = new ArrayList<>();
        final Map<ObjectName, Object> held = new HashMap<>();
    }

    /**
     * Below this many MBeans matched in a domain, asking which of them are 0 costs about what it saves.
     */
    private static final int ZEROS_WORTH_ASKING = 5;

    /**
     * From this many MBeans whose value is known from last cycle, one query of which still hold it costs less than
     * reading them.
     */
    private static final int HELD_WORTH_ASKING = 2;

    /**
     * The MBeans each query's pattern names, asked with one queryNames per domain (an OR of the domain's patterns,
     * which the server matches in one pass over the domain) instead of one per pattern, and with one more the MBeans
     * among them whose attribute holds a value known here, which are then not read one by one: the value each held
     * last cycle (the server compares it: nothing served is older than this cycle's query), or 0 on a first cycle.
     * Each query and each read is an RMI round trip: on a real 4.4.0 broker the 12 pattern queries (8 in
     * kafka.server) were 12 of a cycle's 40 round trips, and the MBeans matched (28 there, 11 of them 0) were read
     * one by one every cycle, though a connection count changes only when a client comes or goes. A query missing
     * from the answer (its pattern is not one of a single domain, or the server refused the combined query) is asked
     * on its own by read(), as before.
     */
    private static Map<JMXMetric, Matched> matchedNames(Broker broker, MBeanServerConnection connection,
            List<JMXMetric> queries) throws Exception {
        Map<JMXMetric, Matched> matched = new IdentityHashMap<>();
        if (connection == null || !broker.oneQueryPerDomain) {
            return matched;
        }
        Map<String, Map<JMXMetric, ObjectName>> byDomain = new LinkedHashMap<>();
        for (JMXMetric query : queries) {
            if (!readsOneAttribute(query)) {
                continue;
            }
            ObjectName pattern;
            try {
                pattern = pattern(query.getmBeanName());
            } catch (Exception malformed) {
                continue; // read() reports it, as it always did
            }
            if (!pattern.isDomainPattern()) {
                byDomain.computeIfAbsent(pattern.getDomain(), domain -> new LinkedHashMap<>()).put(query, pattern);
            }
        }
        for (Map.Entry<String, Map<JMXMetric, ObjectName>> domain : byDomain.entrySet()) {
            Map<JMXMetric, ObjectName> patterns = domain.getValue();
            ObjectName scope = new ObjectName(domain.getKey() + ":*");
            QueryExp any = anyOf(new ArrayList<>(patterns.values()));
            java.util.Set<ObjectName> names;
            try {
                names = connection.queryNames(scope, any);
            } catch (java.io.IOException error) {
                if (!refusedByFilter(error)) {
                    throw error; // a lost or timed-out connection, handled as any read's
                }
                broker.oneQueryPerDomain = false;
                log("one query per domain refused at " + broker.url + ", one per pattern from now on: "
                        + describe(error));
                return matched;
            }
            // Each pattern's MBeans, and the attribute each MBean is asked for: none when patterns of two
            // attributes match it (an answer by value would not say whose value it was): those are read.
            Map<JMXMetric, Matched> own = new LinkedHashMap<>();
            for (JMXMetric query : patterns.keySet()) {
                own.put(query, new Matched());
            }
            Map<ObjectName, String> attributeOf = new HashMap<>();
            for (ObjectName name : names) {
                java.util.Set<String> attributes = new java.util.HashSet<>();
                for (Map.Entry<JMXMetric, ObjectName> entry : patterns.entrySet()) {
                    if (entry.getValue().apply(name)) {
                        own.get(entry.getKey()).names.add(name);
                        attributes.add(entry.getKey().getAttribute());
                    }
                }
                if (attributes.size() == 1) {
                    attributeOf.put(name, attributes.iterator().next());
                }
            }
            Map<ObjectName, Object> held = broker.asksValues
                    ? held(broker, connection, scope, patterns, attributeOf) : Map.of();
            for (Matched pattern : own.values()) {
                for (ObjectName name : pattern.names) {
                    if (held.containsKey(name)) {
                        pattern.held.put(name, held.get(name));
                    }
                }
            }
            matched.putAll(own);
        }
        return matched;
    }

    /**
     * Which of a domain's matched MBeans hold a value known here, with that value: one query of the MBeans whose
     * attribute still equals last cycle's (grouped by attribute and value: (name1 OR name2 ...) AND attr = value,
     * the names first so that the server reads no attribute of the domain's other MBeans), or, on a first cycle, of
     * those at 0. Empty when neither is worth a round trip. `attributeOf`: the matched MBeans that ask one attribute.
     */
    private static Map<ObjectName, Object> held(Broker broker, MBeanServerConnection connection, ObjectName scope,
            Map<JMXMetric, ObjectName> patterns, Map<ObjectName, String> attributeOf) throws java.io.IOException {
        // What the server is asked to confirm, per MBean.
        Map<ObjectName, Object> expected = new HashMap<>();
        Map<String, Map<Object, List<ObjectName>>> groups = new LinkedHashMap<>();
        for (Map.Entry<ObjectName, String> entry : attributeOf.entrySet()) {
            Object value = broker.lastValues.getOrDefault(entry.getValue(), Map.of())
                    .get(entry.getKey().getCanonicalName());
            if (value != null) {
                expected.put(entry.getKey(), value);
                groups.computeIfAbsent(entry.getValue(), key -> new LinkedHashMap<>())
                        .computeIfAbsent(value, key -> new ArrayList<>()).add(entry.getKey());
            }
        }
        List<QueryExp> terms = new ArrayList<>();
        if (expected.size() >= HELD_WORTH_ASKING) {
            for (Map.Entry<String, Map<Object, List<ObjectName>>> attribute : groups.entrySet()) {
                for (Map.Entry<Object, List<ObjectName>> value : attribute.getValue().entrySet()) {
                    terms.add(Query.and(anyOf(value.getValue()),
                            Query.eq(Query.attr(attribute.getKey()), comparable(value.getKey()))));
                }
            }
        } else if (expected.isEmpty() && attributeOf.size() >= ZEROS_WORTH_ASKING) {
            for (ObjectName name : attributeOf.keySet()) {
                expected.put(name, Integer.valueOf(0));
            }
            for (Map.Entry<JMXMetric, ObjectName> entry : patterns.entrySet()) {
                terms.add(Query.and(entry.getValue(),
                        Query.eq(Query.attr(entry.getKey().getAttribute()), Query.value(0))));
            }
        }
        if (terms.isEmpty()) {
            return Map.of();
        }
        java.util.Set<ObjectName> answer;
        try {
            answer = connection.queryNames(scope, anyOf(terms));
        } catch (java.io.IOException error) {
            if (!refusedByFilter(error)) {
                throw error;
            }
            broker.asksValues = false;
            log("a query of MBeans by value refused at " + broker.url + ", every MBean read from now on: "
                    + describe(error));
            return Map.of();
        }
        Map<ObjectName, Object> held = new HashMap<>();
        for (ObjectName name : answer) {
            // A name not asked about (matched by patterns of two attributes) is read.
            if (expected.containsKey(name)) {
                held.put(name, expected.get(name));
            }
        }
        return held;
    }

    /**
     * One OR of the terms, as a balanced tree: a broker that has seen hundreds of clients has hundreds of gauges to
     * ask about, and a chain of hundreds of ORs would be as deep on both sides' (de)serialization stacks.
     */
    private static QueryExp anyOf(List<? extends QueryExp> terms) {
        if (terms.size() == 1) {
            return terms.get(0);
        }
        int half = terms.size() / 2;
        return Query.or(anyOf(terms.subList(0, half)), anyOf(terms.subList(half, terms.size())));
    }

    /** The query operand for a value read (numbers and strings), or null when a query cannot compare it. */
    private static javax.management.ValueExp comparable(Object value) {
        if (value instanceof Integer || value instanceof Long || value instanceof Short || value instanceof Byte) {
            return Query.value(((Number) value).longValue());
        }
        if (value instanceof Double || value instanceof Float) {
            return Query.value(((Number) value).doubleValue());
        }
        if (value instanceof String) {
            return Query.value((String) value);
        }
        return null;
    }

    /** The server's deserialization filter (jmxremote.serial.filter.pattern) refused what was sent. */
    private static boolean refusedByFilter(Throwable error) {
        for (Throwable cause = error; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
            if (cause instanceof java.io.InvalidClassException) {
                return true;
            }
        }
        return false;
    }

    /**
     * getMetrics fills in the objects it is given: a retry on a new connection starts from clean copies (of the
     * MBean pattern, attribute and key: the items carry no metric name or labels).
     */
    private static List<JMXMetric> copies(List<JMXMetric> queries) {
        List<JMXMetric> fresh = new ArrayList<>();
        for (JMXMetric query : queries) {
            fresh.add(new JMXMetric(query.getmBeanName(), query.getAttribute(), query.getAttributeKey()));
        }
        return fresh;
    }

    /** The MBeanServerConnection inside jmxquery's connector (a private field); null if this jmxquery has none. */
    private static MBeanServerConnection connectionOf(JMXConnector connector) {
        try {
            java.lang.reflect.Field field = JMXConnector.class.getDeclaredField("connection");
            field.setAccessible(true);
            Object connection = field.get(connector);
            return connection instanceof MBeanServerConnection ? (MBeanServerConnection) connection : null;
        } catch (ReflectiveOperationException | RuntimeException error) {
            return null;
        }
    }

    private static void closeIdle(long idleNanos) {
        long now = System.nanoTime();
        for (Map.Entry<String, Broker> entry : BROKERS.entrySet()) {
            Broker broker = entry.getValue();
            if (now - broker.lastAsked > idleNanos && broker.busy.tryAcquire()) {
                try {
                    if (BROKERS.remove(entry.getKey(), broker)) {
                        if (broker.connector != null) {
                            log("closing the idle connection to " + broker.url);
                        }
                        broker.close();
                    }
                } finally {
                    broker.busy.release();
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

    /**
     * The JDK's JMX client logs through java.util.logging, to stderr, over several lines each: when a kept connection
     * fails, its ClientCommunicatorAdmin tries to restart it and says "WARNING: Failed to restart: ..." and more, which
     * the exporter took for the JVM complaining (warnings at every broker crash). The read answers that failure
     * already: such records are the bridge's own lines now, one each (the exporter logs those at debug).
     */
    private static void logTheJdkAsOurOwn() {
        java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
        for (java.util.logging.Handler handler : root.getHandlers()) {
            root.removeHandler(handler);
        }
        java.util.logging.Formatter formatter = new java.util.logging.SimpleFormatter();
        root.addHandler(new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord record) {
                Throwable thrown = record.getThrown();
                log("JDK " + record.getLevel() + " " + record.getLoggerName() + ": " + formatter.formatMessage(record)
                        + (thrown == null ? "" : ": " + describe(thrown)));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        });
    }

    /**
     * One line per message: the exporter takes every stderr line without this prefix for the JVM complaining (a
     * warning), and RMI's messages hold line breaks ("nested exception is:\n\tjava.io.EOFException"), so each
     * reconnection after a broker's restart logged a false warning.
     */
    private static void log(String message) {
        System.err.println("jmx-bridge: " + message.replaceAll("\\s*\\R\\s*", " "));
    }

    private static ThreadFactory daemon(String name) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, name + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    /** The bridge's TLS client side, built from PEM files: trust (the CA), identity (mutual TLS), host checking. */
    static final class Tls {
        static Map<String, String> options(String[] args) {
            Map<String, String> options = new HashMap<>();
            for (int i = 2; i < args.length; i++) {
                int eq = args[i].indexOf('=');
                if (eq < 0) {
                    throw new IllegalArgumentException("TLS argument " + args[i] + " is not name=value");
                }
                options.put(args[i].substring(0, eq), args[i].substring(eq + 1));
            }
            return options;
        }

        static SSLContext context(Map<String, String> options) throws Exception {
            KeyStore trusted;
            if (options.containsKey("trust_store")) {
                trusted = store(options, "trust_store");
            } else {
                trusted = KeyStore.getInstance("PKCS12");
                trusted.load(null, null);
                int n = 0;
                for (Certificate ca : certificates(options.get("ca_file"))) {
                    trusted.setCertificateEntry("ca-" + n++, ca);
                }
            }
            TrustManagerFactory trust = TrustManagerFactory.getInstance("PKIX");
            trust.init(trusted);
            X509ExtendedTrustManager checked = null;
            for (TrustManager manager : trust.getTrustManagers()) {
                if (manager instanceof X509ExtendedTrustManager) {
                    checked = (X509ExtendedTrustManager) manager;
                }
            }
            KeyManager[] identity = null;
            if (options.containsKey("key_store")) {
                KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                factory.init(store(options, "key_store"), password(options.get("key_store_password_file")));
                identity = factory.getKeyManagers();
            } else if (options.containsKey("cert_file")) {
                KeyStore keys = KeyStore.getInstance("PKCS12");
                keys.load(null, null);
                List<Certificate> chain = certificates(options.get("cert_file"));
                keys.setKeyEntry("client", privateKey(options.get("key_file")), new char[0],
                        chain.toArray(new Certificate[0]));
                KeyManagerFactory factory = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                factory.init(keys, new char[0]);
                identity = factory.getKeyManagers();
            }
            boolean checkHostname = !"false".equals(options.get("check_hostname"));
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(identity, new TrustManager[] {new HostChecking(checked, checkHostname)}, null);
            log("TLS: trusting " + trusted.size() + " certificate(s) from "
                    + options.getOrDefault("ca_file", options.get("trust_store"))
                    + (identity != null ? ", client key from "
                            + options.getOrDefault("cert_file", options.get("key_store")) : "")
                    + (checkHostname ? ", checking host names" : ", not checking host names"));
            return context;
        }

        /** The `name` store (PKCS12 or JKS), opened with the password read from its password file, if any. */
        static KeyStore store(Map<String, String> options, String name) throws Exception {
            KeyStore store = KeyStore.getInstance(options.getOrDefault(name + "_type", "PKCS12"));
            try (InputStream in = Files.newInputStream(Path.of(options.get(name)))) {
                store.load(in, password(options.get(name + "_password_file")));
            }
            return store;
        }

        static char[] password(String file) throws java.io.IOException {
            if (file == null) {
                return new char[0];
            }
            // Secret files from Kubernetes and Docker end with a newline that is not part of the secret.
            String text = Files.readString(Path.of(file), StandardCharsets.UTF_8);
            return text.replaceAll("[\\r\\n]+$", "").toCharArray();
        }

        static List<Certificate> certificates(String path) throws Exception {
            try (InputStream in = Files.newInputStream(Path.of(path))) {
                List<Certificate> found = new ArrayList<>(CertificateFactory.getInstance("X.509").generateCertificates(in));
                if (found.isEmpty()) {
                    throw new IllegalArgumentException(path + " holds no PEM certificate");
                }
                return found;
            }
        }

        static PrivateKey privateKey(String path) throws Exception {
            String pem = Files.readString(Path.of(path), StandardCharsets.US_ASCII);
            int begin = pem.indexOf("-----BEGIN PRIVATE KEY-----");
            int end = pem.indexOf("-----END PRIVATE KEY-----");
            if (begin < 0 || end < begin) {
                throw new IllegalArgumentException(path + " holds no unencrypted PKCS#8 key (BEGIN PRIVATE KEY)");
            }
            byte[] der = Base64.getMimeDecoder().decode(pem.substring(begin + 27, end));
            for (String algorithm : new String[] {"RSA", "EC", "Ed25519"}) {
                try {
                    return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
                } catch (Exception notThisOne) {
                    // try the next algorithm
                }
            }
            throw new IllegalArgumentException(path + " holds a key that is not RSA, EC or Ed25519");
        }

        /**
         * Whether a new connection was closed inside the TLS layer: with TLS 1.3 a server refusing the client's
         * certificate closes the connection after the client's side of the handshake, which the client sees as a
         * broken pipe or reset in its TLS socket rather than as an alert.
         */
        static boolean droppedBy(Throwable error) {
            for (Throwable cause = error; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
                if (cause instanceof java.net.SocketException) {
                    for (StackTraceElement frame : cause.getStackTrace()) {
                        if (frame.getClassName().startsWith("sun.security.ssl.")) {
                            return true;
                        }
                    }
                }
            }
            return false;
        }

        /** Whether a connection failed in TLS (handshake, certificate, alert) rather than on the network. */
        static boolean failed(Throwable error) {
            for (Throwable cause = error; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
                if (cause instanceof SSLException || cause instanceof CertificateException) {
                    return true;
                }
            }
            return false;
        }
    }

    /**
     * The PKIX trust manager plus the host name check that SslRMIClientSocketFactory never asks for (its sockets
     * have no endpoint identification algorithm): the server certificate must name the host the stub points to.
     */
    static final class HostChecking extends X509ExtendedTrustManager {
        private final X509ExtendedTrustManager trust;
        private final boolean checkHostname;

        HostChecking(X509ExtendedTrustManager trust, boolean checkHostname) {
            this.trust = trust;
            this.checkHostname = checkHostname;
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            trust.checkServerTrusted(chain, authType, socket);
            if (checkHostname && socket instanceof SSLSocket) {
                SSLSession session = ((SSLSocket) socket).getHandshakeSession();
                String host = session != null ? session.getPeerHost() : socket.getInetAddress().getHostAddress();
                checkHost(chain[0], host);
            }
        }

        static void checkHost(X509Certificate certificate, String host) throws CertificateException {
            List<String> names = new ArrayList<>();
            Collection<List<?>> alternatives = certificate.getSubjectAlternativeNames();
            boolean literal = host.indexOf(':') >= 0 || host.matches("[0-9.]+");
            for (List<?> entry : alternatives == null ? List.<List<?>>of() : alternatives) {
                int type = (Integer) entry.get(0);
                String name = String.valueOf(entry.get(1));
                if (type != 2 && type != 7) {
                    continue;
                }
                names.add(name);
                try {
                    if (literal && type == 7
                            && InetAddress.getByName(name).equals(InetAddress.getByName(host))) {
                        return;
                    }
                } catch (java.net.UnknownHostException notAnAddress) {
                    continue;
                }
                if (!literal && type == 2 && dnsMatches(name.toLowerCase(Locale.ROOT), host.toLowerCase(Locale.ROOT))) {
                    return;
                }
            }
            throw new CertificateException("host name check failed: the certificate names " + names + ", not "
                    + host + " (the host in the broker's RMI stub, its java.rmi.server.hostname)");
        }

        static boolean dnsMatches(String pattern, String host) {
            if (pattern.startsWith("*.")) {
                int dot = host.indexOf('.');
                return dot > 0 && host.substring(dot).equals(pattern.substring(1));
            }
            return pattern.equals(host);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            trust.checkServerTrusted(chain, authType, engine);
            if (checkHostname) {
                checkHost(chain[0], engine.getPeerHost());
            }
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("a server certificate is checked only with its connection at hand");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            trust.checkClientTrusted(chain, authType, socket);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            trust.checkClientTrusted(chain, authType, engine);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            trust.checkClientTrusted(chain, authType);
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return trust.getAcceptedIssuers();
        }
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
