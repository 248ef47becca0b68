/*
 * MBeanHost: the JMX half of the broker double.
 *
 * One JVM emulates the JMX endpoints of many Kafka brokers. Each emulated broker gets its own
 * MBeanServer, its own RMI registry and its own JMX connector server, all on ONE TCP port, so an
 * exporter (or jmxquery) sees a separate "broker JVM" per port, exactly as with real brokers.
 *
 * The socket-server-metrics MBeans come from Kafka's own code (kafka-clients on the class path): per
 * broker a Metrics with Kafka's JmxReporter in the "kafka.server" context (kafka/server/Server.scala:34,
 * :53, :73 at 4.3.0), and per listener x network processor a server-side
 * org.apache.kafka.common.network.Selector built as kafka.network.Processor.createSelector does
 * (SocketServer.scala:831-880). Every connection the Python side accepts is mirrored by a loopback socket
 * registered on the right Selector (Selector.register counts it as unknown/unknown), client and cipher
 * information go to the channel's metadata registry as SocketServer (SocketServer.scala:1035) and
 * SslTransportLayer (SslTransportLayer.java:468) do, and closing the connection closes the channel. So the
 * KIP-511 gauges' names, tag order, Integer values, lingering zeros and IntGaugeSuite eviction are Kafka's.
 *
 * Run it as a single-file program (no javac step):
 *
 *     java -Xmx256m -cp kafka-clients-4.3.0.jar:slf4j-api-2.0.18.jar kafka_double/MBeanHost.java
 *
 * and drive it through a line protocol on stdin (tab-separated fields, one command per line).
 * Replies go to stdout, one line each; diagnostics go to stderr.
 *
 *     (at start)                                   -> READY
 *     BROKER <id> <port> <user|-> <password|->     -> OK BROKER <id> <jmx url>
 *     BROKER_TLS <id> <port> <rmi port> <user|-> <password|-> <cert PEM> <PKCS#8 key PEM> <client CA PEM|->
 *                                                  -> OK BROKER <id> <jmx url>
 *         JMX over TLS as a broker started with -Dcom.sun.management.jmxremote.ssl=true (and
 *         ...ssl.need.client.auth=true when a client CA is given): the registry on <port> stays plain, the
 *         RMI server object is exported on <rmi port> (the jmxremote.rmi.port) with SSL socket factories.
 *     PROCESSOR <id> <listener> <processor id>     -> (nothing; ERR on failure)
 *         Kafka's Selector for one network processor of a running broker (its processor-level metrics appear).
 *     JMX_EXCLUDE <id> <MBean name regex>         -> (nothing; ERR on failure)
 *         KIP-544's metrics.jmx.exclude on the broker's JmxReporter (a pre-2.5 broker has no KIP-511 gauges).
 *     OPEN <id> <processor id> <connection id>     -> (nothing; ERR on failure)
 *         A connection accepted by that processor: a loopback socket registered on its Selector.
 *     CLIENT <id> <connection id> <name> <version> -> (nothing; ERR on failure)  registerClientInformation
 *     CIPHER <id> <connection id> <cipher> <proto> -> (nothing; ERR on failure)  registerCipherInformation
 *     CLOSE <id> <connection id>                   -> (nothing; ERR on failure)  Selector.close(connection id)
 *     DUMP <id>                                    -> OK DUMP <id> <JSON [[object name, attribute, value], ...]>
 *         Every MBean attribute the broker's MBeanServer holds now, as a JMX client would read it.
 *     SET <id> <object name> <attr> <type> <value> -> (nothing; ERR on failure)  type: int|long|double|string
 *     UNSET <id> <object name>                     -> (nothing; ERR on failure)
 *     SYNC <token>                                 -> OK SYNC <token>
 *     STOP <id>                                    -> OK STOP <id>
 *     EXIT (or EOF)                                -> stops everything, exit code 0
 *     anything bad                                 -> ERR <message>
 *
 * SET/UNSET remain for the MBeans Kafka's client jar does not hold (the KIP-896 Yammer meter lives in
 * Kafka's core). ERR messages start with "<VERB> <key>: " (for example "BROKER 3: port 9999 ...") so that the
 * Python wrapper (mbean_host.py) can route an error to the call that is waiting for it, and tell
 * it apart from the asynchronous error of an earlier SET/UNSET, which has no reply on success.
 *
 * Every command is applied by the single main thread, in order. That is what makes SYNC a
 * barrier: its reply is written only after all earlier lines have been applied.
 */

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.rmi.server.RMIClientSocketFactory;
import java.rmi.server.RMIServerSocketFactory;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.rmi.ssl.SslRMIClientSocketFactory;
import javax.rmi.ssl.SslRMIServerSocketFactory;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.rmi.AlreadyBoundException;
import java.rmi.NoSuchObjectException;
import java.rmi.registry.LocateRegistry;
import java.rmi.registry.Registry;
import java.rmi.server.UnicastRemoteObject;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.DynamicMBean;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanInfo;
import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.remote.JMXConnectorServer;
import javax.management.remote.JMXServiceURL;
import javax.management.remote.rmi.RMIConnectorServer;
import javax.management.remote.rmi.RMIJRMPServerImpl;
import javax.management.MBeanServerBuilder;
import javax.management.MBeanServerDelegate;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

import org.apache.kafka.common.memory.MemoryPool;
import org.apache.kafka.common.metrics.JmxReporter;
import org.apache.kafka.common.metrics.KafkaMetricsContext;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.network.CipherInformation;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.KafkaChannel;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.PlaintextChannelBuilder;
import org.apache.kafka.common.network.Selector;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.Time;

public class MBeanHost {

    /** A command that cannot be applied; becomes one "ERR\t<message>" line. */
    static final class CommandException extends Exception {
        CommandException(String message) {
            super(message);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // SET's MBean: for what kafka-clients does not hold (the KIP-896 meter, a Yammer meter in Kafka's core).
    // ---------------------------------------------------------------------------------------------

    /**
     * Holds the attributes SET gives it. It looks like org.apache.kafka.common.metrics.JmxReporter.KafkaMbean
     * (see docs/kafka-facts/jmx-mbeans.md#client-gauges, "Value type"), not like a Yammer meter's MBean (which
     * declares typed attributes Count, MeanRate, OneMinuteRate...): getMBeanInfo() declares EVERY
     * attribute with type "double", while getAttribute() returns the metric's real value, e.g. a
     * java.lang.Integer for the KIP-511 `connections` gauge. Exporters must therefore treat values as
     * numbers and not trust the declared type; the double reproduces that mismatch on purpose.
     *
     * Attributes are written by the main thread and read by RMI connection threads, hence the
     * synchronized methods. A LinkedHashMap keeps attribute order stable for readers.
     */
    static final class KafkaLikeMBean implements DynamicMBean {
        /** Kafka's MBeanInfo class name; a client sees this string, not our Java class. */
        private static final String KAFKA_MBEAN_CLASS = "org.apache.kafka.common.metrics.JmxReporter$KafkaMbean";

        private final Map<String, Object> attributes = new LinkedHashMap<>();

        synchronized void put(String attribute, Object value) {
            attributes.put(attribute, value);
        }

        @Override
        public synchronized Object getAttribute(String name) throws AttributeNotFoundException {
            if (!attributes.containsKey(name)) {
                throw new AttributeNotFoundException("Could not find attribute " + name);
            }
            return attributes.get(name);
        }

        @Override
        public synchronized AttributeList getAttributes(String[] names) {
            AttributeList list = new AttributeList();
            for (String name : names) {
                if (attributes.containsKey(name)) {
                    list.add(new Attribute(name, attributes.get(name)));
                }
            }
            return list;
        }

        @Override
        public synchronized MBeanInfo getMBeanInfo() {
            MBeanAttributeInfo[] infos = new MBeanAttributeInfo[attributes.size()];
            int i = 0;
            for (String name : attributes.keySet()) {
                // Kafka: new MBeanAttributeInfo(name, double.class.getName(), description, true, false, false)
                infos[i++] = new MBeanAttributeInfo(name, double.class.getName(), "", true, false, false);
            }
            return new MBeanInfo(KAFKA_MBEAN_CLASS, "", infos, null, null, null);
        }

        // Kafka's metrics are read-only over JMX; same messages as KafkaMbean.
        @Override
        public void setAttribute(Attribute attribute) {
            throw new UnsupportedOperationException("Set not allowed.");
        }

        @Override
        public AttributeList setAttributes(AttributeList list) {
            throw new UnsupportedOperationException("Set not allowed.");
        }

        @Override
        public Object invoke(String action, Object[] params, String[] signature) {
            throw new UnsupportedOperationException("Set not allowed.");
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Authentication: the JDK's own, from a password file, as a broker started with
    // -Dcom.sun.management.jmxremote.authenticate=true and ...jmxremote.password.file=<file>.
    // ---------------------------------------------------------------------------------------------

    /**
     * A one-line password file for the JDK's file-based authenticator. Given "jmx.remote.x.password.file" in its
     * environment and no authenticator of its own, the JDK's RMIServerImpl checks every new client with
     * com.sun.jmx.remote.security.JMXPluggableAuthenticator (FileLoginModule), so clients get the JDK's own
     * failure messages. No access file: every authenticated user may read, as with a broker whose
     * jmxremote.access file grants its monitoring user readonly.
     */
    static Path passwordFile(int brokerId, String user, String password) throws IOException, CommandException {
        for (String field : new String[] {user, password}) {
            if (field.isEmpty() || field.chars().anyMatch(Character::isWhitespace)) {
                throw new CommandException("a JMX user or password for a password file cannot be empty or hold "
                    + "whitespace");
            }
        }
        Path file = Files.createTempFile("kafka-double-jmx-" + brokerId + "-", ".password",
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        Files.writeString(file, user + " " + password + "\n", StandardCharsets.UTF_8);
        return file;
    }

    // ---------------------------------------------------------------------------------------------
    // Routing Kafka's JmxReporter to the broker whose metrics are being changed.
    // ---------------------------------------------------------------------------------------------

    /**
     * Kafka's JmxReporter registers every MBean in ManagementFactory.getPlatformMBeanServer()
     * (clients/.../metrics/JmxReporter.java:199-212 at 4.3.0): one JVM is one broker. Here one JVM holds
     * many brokers, each with its own MBeanServer. The platform MBeanServer is therefore built by this
     * builder (javax.management.builder.initial, set in main before anything asks for it): while the main
     * thread runs Kafka code for broker B (see Broker.kafka), every call on the platform server goes to B's
     * MBeanServer; otherwise it goes to an ordinary server. Kafka's metrics run only on the main thread
     * (no metric expiry thread, Selectors never polled), so a plain field is enough.
     */
    public static final class RoutingBuilder extends MBeanServerBuilder {
        static volatile MBeanServer target;

        @Override
        public MBeanServer newMBeanServer(String defaultDomain, MBeanServer outer, MBeanServerDelegate delegate) {
            MBeanServer plain = super.newMBeanServer(defaultDomain, outer, delegate);
            return (MBeanServer) Proxy.newProxyInstance(MBeanServer.class.getClassLoader(),
                    new Class<?>[] {MBeanServer.class}, (proxy, method, args) -> {
                        MBeanServer routed = target;
                        try {
                            return method.invoke(routed != null ? routed : plain, args);
                        } catch (InvocationTargetException e) {
                            throw e.getCause();
                        }
                    });
        }
    }

    /** Kafka's code that changes broker metrics; run through Broker.kafka so its MBeans land in the broker. */
    interface KafkaAction {
        void run() throws Exception;
    }

    /**
     * The socket server side of one broker, from Kafka's own classes: one Metrics (as
     * kafka.server.Server.initializeMetrics builds it, with the JmxReporter that metric.reporters adds by
     * default) and one server-side Selector per network processor.
     */
    static final class SocketServerMetrics {
        /** Loopback peers: one accepting socket for the whole JVM. */
        static ServerSocketChannel acceptor;

        final Metrics metrics;
        final JmxReporter reporter = new JmxReporter();
        final Map<Integer, Selector> selectors = new HashMap<>();
        /** Connection id -> processor id. */
        final Map<String, Integer> processorOf = new HashMap<>();

        SocketServerMetrics() {
            // enableExpiration=false: a real broker expires idle sensors on a thread; the KIP-511 gauges are
            // not sensors, and a thread per emulated broker would not fit 500 brokers in one JVM.
            metrics = new Metrics(new MetricConfig(), new ArrayList<MetricsReporter>(List.of(reporter)),
                    Time.SYSTEM, false, new KafkaMetricsContext("kafka.server"));
        }

        /** KIP-544's metrics.jmx.exclude, applied by Kafka's JmxReporter to the MBeans it has and will have. */
        void excludeFromJmx(String regex) {
            reporter.reconfigure(Map.of(JmxReporter.EXCLUDE_CONFIG, regex));
        }

        void addProcessor(String listener, int processorId) throws CommandException {
            if (selectors.containsKey(processorId)) {
                throw new CommandException("network processor " + processorId + " already exists");
            }
            // kafka.network.Processor.metricTags: a LinkedHashMap, listener first (SocketServer.scala:831-834).
            Map<String, String> tags = new LinkedHashMap<>();
            tags.put("listener", listener);
            tags.put("networkProcessor", Integer.toString(processorId));
            PlaintextChannelBuilder channels = new PlaintextChannelBuilder(ListenerName.normalised(listener));
            channels.configure(Map.of());
            // The arguments of Processor.createSelector (SocketServer.scala:869-880): socket.request.max.bytes,
            // connections.max.idle.ms and connection.failed.authentication.delay.ms defaults, metric group
            // prefix "socket-server", no per-connection metrics, time per connection recorded.
            selectors.put(processorId, new Selector(104857600, 600000L, 100, metrics, Time.SYSTEM, "socket-server",
                    tags, false, true, channels, MemoryPool.NONE, new LogContext()));
        }

        void open(int processorId, String connectionId) throws Exception {
            Selector selector = selectors.get(processorId);
            if (selector == null) {
                throw new CommandException("no network processor " + processorId + " (send PROCESSOR first)");
            }
            if (processorOf.containsKey(connectionId)) {
                throw new CommandException("connection " + quote(connectionId) + " is already open");
            }
            if (acceptor == null) {
                acceptor = ServerSocketChannel.open();
                acceptor.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            }
            SocketChannel accepted;
            try (SocketChannel peer = SocketChannel.open(acceptor.getLocalAddress())) {
                accepted = acceptor.accept();
            }
            // The peer is closed at once: the Selector is never polled, so it never sees the end of stream, and
            // 500 brokers x 20 connections then cost one descriptor each. Kafka's Acceptor configures the
            // accepted socket as non-blocking before handing it to a Processor.
            accepted.configureBlocking(false);
            selector.register(connectionId, accepted);
            processorOf.put(connectionId, processorId);
        }

        KafkaChannel channel(String connectionId) throws CommandException {
            Integer processorId = processorOf.get(connectionId);
            if (processorId == null) {
                throw new CommandException("no open connection " + quote(connectionId));
            }
            return selectors.get(processorId).channel(connectionId);
        }

        void close(String connectionId) {
            Integer processorId = processorOf.remove(connectionId);
            if (processorId == null) {
                return;  // CLOSE is idempotent: a connection may be closed by the broker and by the client
            }
            selectors.get(processorId).close(connectionId);
        }

        void shutdown() {
            processorOf.clear();
            for (Selector selector : selectors.values()) {
                selector.close();
            }
            selectors.clear();
            metrics.close();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // One emulated broker: MBeanServer + RMI registry + JMX connector server, one TCP port.
    // ---------------------------------------------------------------------------------------------

    static final class Broker {
        final int id;
        final int port;
        /** The port of the RMI server object: `port`, or a TLS broker's own; set by start. */
        int rmiPort;
        final String clientUrl;
        /**
         * A private MBeanServer (from the JDK's own builder: not the platform one, which routes here, and not
         * kept in the MBeanServerFactory's list, so a stopped broker's server is simply garbage collected).
         * It holds only the JMImplementation delegate and our MBeans, like a broker's view of
         * kafka.server:* without the JVM's own java.lang:* beans.
         */
        final MBeanServer mbeanServer =
                new MBeanServerBuilder().newMBeanServer("DefaultDomain", null, new MBeanServerDelegate());
        /** Our MBeans by canonical name, so "a=1,b=2" and "b=2,a=1" address the same MBean. */
        final Map<String, KafkaLikeMBean> mbeans = new HashMap<>();
        Registry registry;
        JMXConnectorServer connectorServer;
        Path passwordFile;
        SocketServerMetrics socketServer;

        /** Runs Kafka's metric code for this broker: MBeans it registers or removes land in this broker. */
        void kafka(KafkaAction action) throws Exception {
            RoutingBuilder.target = mbeanServer;
            try {
                if (socketServer == null) {
                    socketServer = new SocketServerMetrics();
                }
                action.run();
            } finally {
                RoutingBuilder.target = null;
            }
        }

        Broker(int id, int port) {
            this.id = id;
            this.port = port;
            this.clientUrl = "service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi";
        }

        /**
         * Opens the port. Clients connect as to a real broker started with
         * -Dcom.sun.management.jmxremote.port=P -Dcom.sun.management.jmxremote.rmi.port=P, i.e. to
         * service:jmx:rmi:///jndi/rmi://127.0.0.1:P/jmxrmi: they look up "jmxrmi" in the registry on P
         * and call the RMI server object, which is exported on the same port P. RMI shares one
         * listening socket between objects exported on the same port in one JVM, so each broker
         * costs exactly one TCP port (see /work/shared/toolchain.md).
         *
         * Why not JMXConnectorServerFactory with the URL
         * service:jmx:rmi://127.0.0.1:P/jndi/rmi://127.0.0.1:P/jmxrmi: that binds the stub through
         * JNDI, i.e. over a loopback RMI call into our own registry. The registry then holds a
         * deserialized remote reference to an object in its own JVM and keeps renewing its DGC
         * lease over TCP: 3 extra threads per broker (RenewClean + 2 connection threads) and
         * periodic self-traffic, measured with 50 brokers (221 JVM threads instead of 66). Binding
         * the stub object directly into the local registry, as the JDK's own JMX agent does
         * (ConnectorBootstrap), gives clients the same view without that overhead.
         */
        void start(String user, String password) throws IOException, CommandException {
            start(user, password, port, null, null);
        }

        /** With `serverSockets` (TLS): the RMI server object on `rmiPort`, its stub carrying `clientSockets`. */
        void start(String user, String password, int rmiPort, RMIClientSocketFactory clientSockets,
                RMIServerSocketFactory serverSockets) throws IOException, CommandException {
            if (user != null) {
                passwordFile = passwordFile(id, user, password);
            }
            this.rmiPort = rmiPort;
            try {
                registry = LocateRegistry.createRegistry(port);
                Map<String, Object> env = new HashMap<>();
                if (passwordFile != null) {
                    env.put("jmx.remote.x.password.file", passwordFile.toString());
                }
                // A broker started with this option has its JMX agent refuse what the filter does not admit
                // (the JDK's ConnectorBootstrap passes it on the same way).
                String serialFilter = System.getProperty("com.sun.management.jmxremote.serial.filter.pattern");
                if (serialFilter != null) {
                    env.put(RMIConnectorServer.SERIAL_FILTER_PATTERN, serialFilter);
                }
                RMIJRMPServerImpl serverImpl = new RMIJRMPServerImpl(rmiPort, clientSockets, serverSockets, env);
                // A URL without a /jndi/ path: the connector server only exports serverImpl.
                JMXServiceURL url = new JMXServiceURL("service:jmx:rmi://127.0.0.1:" + port);
                connectorServer = new RMIConnectorServer(url, env, serverImpl, mbeanServer);
                connectorServer.start();
                registry.bind("jmxrmi", serverImpl.toStub());
            } catch (AlreadyBoundException e) {
                stop();  // cannot happen with a fresh registry
                throw new IOException("jmxrmi is already bound on port " + port, e);
            } catch (IOException | RuntimeException e) {
                stop();
                throw e;
            }
        }

        /**
         * Closes the port like a killed broker: stop the connector server (closes client
         * connections, unexports its RMI server object), then force-unexport the registry. When
         * the last object exported on a port is gone, RMI closes the listening socket, so new
         * connections are refused.
         */
        void stop() {
            if (socketServer != null) {
                try {
                    kafka(socketServer::shutdown);
                } catch (Exception e) {
                    System.err.println("broker " + id + ": error closing its Selectors: " + e);
                }
                socketServer = null;
            }
            if (connectorServer != null) {
                try {
                    connectorServer.stop();
                } catch (IOException | RuntimeException e) {
                    System.err.println("broker " + id + ": error stopping the JMX connector server: " + e);
                }
                connectorServer = null;
            }
            if (registry != null) {
                try {
                    UnicastRemoteObject.unexportObject(registry, true);
                } catch (NoSuchObjectException e) {
                    // already gone
                }
                registry = null;
            }
            if (passwordFile != null) {
                try {
                    Files.deleteIfExists(passwordFile);
                } catch (IOException e) {
                    System.err.println("broker " + id + ": cannot delete " + passwordFile + ": " + e);
                }
                passwordFile = null;
            }
        }

        void set(ObjectName name, String attribute, Object value) throws Exception {
            String key = name.getCanonicalName();
            KafkaLikeMBean mbean = mbeans.get(key);
            if (mbean == null) {
                mbean = new KafkaLikeMBean();
                // Register with the ObjectName built from the caller's string: ObjectName keeps the
                // key property list in the order given (getKeyPropertyListString / toString), and
                // queryNames returns this very instance. Kafka's JmxReporter does the same (tags in
                // insertion order, docs/kafka-facts/jmx-mbeans.md#client-gauges), which is why a
                // client sees clientSoftwareName,clientSoftwareVersion,listener,networkProcessor.
                mbeanServer.registerMBean(mbean, name);
                mbeans.put(key, mbean);
            }
            mbean.put(attribute, value);
        }

        void unset(ObjectName name) throws Exception {
            if (mbeans.remove(name.getCanonicalName()) != null) {
                try {
                    mbeanServer.unregisterMBean(name);
                } catch (InstanceNotFoundException e) {
                    // not there: UNSET is idempotent
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------------
    // The command loop.
    // ---------------------------------------------------------------------------------------------

    /** Running brokers by id. Only the main thread touches this map. */
    private final Map<Integer, Broker> brokers = new HashMap<>();
    /**
     * Ids that ran and were STOPped. SET/UNSET for them are dropped silently: a killed broker has
     * no JMX, and the code that feeds the double may race a kill with a metric update. A restart
     * starts with no MBeans, like a real broker.
     */
    private final Set<Integer> stopped = new HashSet<>();
    private final PrintStream out;

    MBeanHost(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) throws IOException {
        // Must be set before anything is exported: it is the host written into every RMI stub.
        // Without it a stub may carry the machine's hostname/external IP instead of loopback.
        System.setProperty("java.rmi.server.hostname", "127.0.0.1");
        // Before anything asks for the platform MBeanServer: Kafka's JmxReporter registers there, and this
        // builder routes it to the broker at hand. The builder class is looked up through the context class
        // loader, which must be the one that compiled this file.
        System.setProperty("javax.management.builder.initial", RoutingBuilder.class.getName());
        Thread.currentThread().setContextClassLoader(MBeanHost.class.getClassLoader());
        // Built now, outside any routing, so the JVM's own java.lang MXBeans stay in the plain server: a broker's
        // MBeanServer holds only what Kafka's code (and SET) put there.
        java.lang.management.ManagementFactory.getPlatformMBeanServer();

        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        MBeanHost host = new MBeanHost(out);
        host.reply("READY");

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("EXIT")) {
                break;
            }
            if (!line.isEmpty()) {
                host.handle(line);
            }
        }
        // EXIT or EOF: EOF means the Python side went away, so the JVM must not outlive it.
        host.shutdown();
        out.flush();
        // RMI keeps non-daemon threads alive; exit explicitly.
        System.exit(0);
    }

    void reply(String line) {
        out.print(line);
        out.print('\n');
        out.flush();
    }

    void handle(String line) {
        String[] f = line.split("\t", -1);
        String context = f[0];
        try {
            switch (f[0]) {
                case "SET" -> {
                    expectFields(f, 6, "SET <broker_id> <object_name> <attribute> <type> <value>");
                    context = "SET " + f[1] + " " + f[2];
                    set(parseId(f[1]), f[2], f[3], f[4], f[5]);
                }
                case "UNSET" -> {
                    expectFields(f, 3, "UNSET <broker_id> <object_name>");
                    context = "UNSET " + f[1] + " " + f[2];
                    unset(parseId(f[1]), f[2]);
                }
                case "SYNC" -> {
                    expectFields(f, 2, "SYNC <token>");
                    context = "SYNC " + f[1];
                    reply("OK\tSYNC\t" + f[1]);
                }
                case "BROKER" -> {
                    expectFields(f, 5, "BROKER <broker_id> <port> <user|-> <password|->");
                    context = "BROKER " + f[1];
                    addBroker(parseId(f[1]), f[2], f[3], f[4]);
                }
                case "BROKER_TLS" -> {
                    expectFields(f, 9, "BROKER_TLS <broker_id> <port> <rmi port> <user|-> <password|-> <cert file> "
                            + "<key file> <client CA file|->");
                    context = "BROKER " + f[1];
                    SSLContext tls = serverTls(f[6], f[7], f[8].equals("-") ? null : f[8]);
                    addBroker(parseId(f[1]), f[2], f[4], f[5], parseInt(f[3], "rmi port"),
                            new SslRMIClientSocketFactory(),
                            new SslRMIServerSocketFactory(tls, null, null, !f[8].equals("-")));
                }
                case "PROCESSOR" -> {
                    expectFields(f, 4, "PROCESSOR <broker_id> <listener> <processor id>");
                    context = "PROCESSOR " + f[1];
                    int processorId = parseInt(f[3], "processor id");
                    onSocketServer(parseId(f[1]), server -> server.addProcessor(f[2], processorId));
                }
                case "JMX_EXCLUDE" -> {
                    expectFields(f, 3, "JMX_EXCLUDE <broker_id> <MBean name regex>");
                    context = "JMX_EXCLUDE " + f[1];
                    onSocketServer(parseId(f[1]), server -> server.excludeFromJmx(f[2]));
                }
                case "OPEN" -> {
                    expectFields(f, 4, "OPEN <broker_id> <processor id> <connection id>");
                    context = "OPEN " + f[1] + " " + f[3];
                    int processorId = parseInt(f[2], "processor id");
                    onSocketServer(parseId(f[1]), server -> server.open(processorId, f[3]));
                }
                case "CLIENT" -> {
                    expectFields(f, 5, "CLIENT <broker_id> <connection id> <software name> <software version>");
                    context = "CLIENT " + f[1] + " " + f[2];
                    onSocketServer(parseId(f[1]), server -> server.channel(f[2]).channelMetadataRegistry()
                            .registerClientInformation(new ClientInformation(f[3], f[4])));
                }
                case "CIPHER" -> {
                    expectFields(f, 5, "CIPHER <broker_id> <connection id> <cipher> <protocol>");
                    context = "CIPHER " + f[1] + " " + f[2];
                    onSocketServer(parseId(f[1]), server -> server.channel(f[2]).channelMetadataRegistry()
                            .registerCipherInformation(new CipherInformation(f[3], f[4])));
                }
                case "CLOSE" -> {
                    expectFields(f, 3, "CLOSE <broker_id> <connection id>");
                    context = "CLOSE " + f[1] + " " + f[2];
                    onSocketServer(parseId(f[1]), server -> server.close(f[2]));
                }
                case "DUMP" -> {
                    expectFields(f, 2, "DUMP <broker_id>");
                    context = "DUMP " + f[1];
                    int id = parseId(f[1]);
                    Broker broker = brokers.get(id);
                    if (broker == null) {
                        throw new CommandException("broker " + id + " is not running");
                    }
                    reply("OK\tDUMP\t" + id + "\t" + dump(broker.mbeanServer));
                }
                case "STOP" -> {
                    expectFields(f, 2, "STOP <broker_id>");
                    context = "STOP " + f[1];
                    stopBroker(parseId(f[1]));
                }
                default -> throw new CommandException("unknown command " + quote(f[0]) + " (expected BROKER, "
                        + "BROKER_TLS, PROCESSOR, JMX_EXCLUDE, OPEN, CLIENT, CIPHER, CLOSE, DUMP, SET, UNSET, SYNC, STOP or EXIT)");
            }
        } catch (CommandException e) {
            error(context, e.getMessage(), null);
        } catch (Exception e) {
            error(context, e.getClass().getName() + ": " + e.getMessage(), e);
        }
    }

    private void error(String context, String message, Exception cause) {
        if (cause != null) {
            System.err.println("MBeanHost: " + context + " failed:");
            cause.printStackTrace();
        }
        // A reply is one line with tab-separated fields: no tabs or line breaks inside the message.
        reply("ERR\t" + (context + ": " + message).replaceAll("[\\t\\r\\n]+", " "));
    }

    /** How long STOP waits for a stopped broker's ports to be released. */
    private static final long PORT_RELEASE_WAIT_NANOS = 5_000_000_000L;

    private void addBroker(int id, String portField, String userField, String passwordField) throws Exception {
        addBroker(id, portField, userField, passwordField, -1, null, null);
    }

    /** The server side of JMX over TLS: the broker's key and certificate, and the CA its clients must present. */
    private static SSLContext serverTls(String certFile, String keyFile, String clientCaFile) throws Exception {
        CertificateFactory x509 = CertificateFactory.getInstance("X.509");
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        try (InputStream in = Files.newInputStream(Path.of(certFile))) {
            String pem = Files.readString(Path.of(keyFile), StandardCharsets.US_ASCII)
                    .replaceAll("-----[A-Z ]+-----", "");
            PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(pem));
            PrivateKey key;
            try {
                key = KeyFactory.getInstance("EC").generatePrivate(spec);
            } catch (java.security.spec.InvalidKeySpecException notEc) {
                key = KeyFactory.getInstance("RSA").generatePrivate(spec);
            }
            keys.setKeyEntry("broker", key, new char[0], x509.generateCertificates(in).toArray(new Certificate[0]));
        }
        KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keyManagers.init(keys, new char[0]);
        TrustManager[] trust = null;
        if (clientCaFile != null) {
            KeyStore cas = KeyStore.getInstance("PKCS12");
            cas.load(null, null);
            try (InputStream in = Files.newInputStream(Path.of(clientCaFile))) {
                int n = 0;
                for (Certificate ca : x509.generateCertificates(in)) {
                    cas.setCertificateEntry("ca-" + n++, ca);
                }
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(cas);
            trust = factory.getTrustManagers();
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keyManagers.getKeyManagers(), trust, null);
        return context;
    }

    private void addBroker(int id, String portField, String userField, String passwordField, int rmiPort,
            RMIClientSocketFactory clientSockets, RMIServerSocketFactory serverSockets) throws Exception {
        int port = parseInt(portField, "port");
        if (port < 1 || port > 65535) {
            throw new CommandException("port " + port + " is out of range 1-65535");
        }
        if (brokers.containsKey(id)) {
            throw new CommandException("broker " + id + " is already running on port " + brokers.get(id).port);
        }
        String user = userField.equals("-") ? null : userField;
        String password = passwordField.equals("-") ? null : passwordField;
        if ((user == null) != (password == null)) {
            throw new CommandException("give both user and password, or neither (- for none)");
        }
        Broker broker = new Broker(id, port);
        try {
            broker.start(user, password, serverSockets == null ? port : rmiPort, clientSockets, serverSockets);
        } catch (java.rmi.server.ExportException e) {
            // Usually "Port already in use": say which port, without a stack trace.
            throw new CommandException("cannot open port " + port + ": " + e.getMessage());
        }
        broker.kafka(() -> { });  // Kafka's Metrics exist from start-up (kafka-metrics-count)
        brokers.put(id, broker);
        stopped.remove(id);
        reply("OK\tBROKER\t" + id + "\t" + broker.clientUrl);
    }

    private void stopBroker(int id) throws CommandException {
        Broker broker = brokers.remove(id);
        if (broker == null) {
            throw new CommandException("broker " + id + " is not running");
        }
        broker.stop();
        // RMI's accept thread closes a listening socket after the unexport has returned. A killed broker's ports
        // refuse connections at once and can be listened on again (a restart on the same port): STOP answers once
        // they are free (full runs saw the port still accepting, and a restart on it failing "Port already in use").
        awaitReleased(broker.port);
        if (broker.rmiPort != broker.port) {
            awaitReleased(broker.rmiPort);
        }
        stopped.add(id);
        reply("OK\tSTOP\t" + id);
    }

    /** Until `port` can be bound on loopback again (at most PORT_RELEASE_WAIT_NANOS). */
    private static void awaitReleased(int port) {
        long deadline = System.nanoTime() + PORT_RELEASE_WAIT_NANOS;
        while (System.nanoTime() < deadline) {
            try (ServerSocket probe = new ServerSocket()) {
                probe.setReuseAddress(true);
                probe.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
                return;
            } catch (IOException stillOpen) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private void set(int id, String objectName, String attribute, String type, String value) throws Exception {
        Broker broker = brokerFor(id);
        if (attribute.isEmpty()) {
            throw new CommandException("empty attribute name");
        }
        Object parsed = parseValue(type, value);
        if (broker != null) {
            broker.set(parseName(objectName), attribute, parsed);
        }
    }

    private void unset(int id, String objectName) throws Exception {
        Broker broker = brokerFor(id);
        ObjectName name = parseName(objectName);
        if (broker != null) {
            broker.unset(name);
        }
    }

    interface SocketServerAction {
        void run(SocketServerMetrics server) throws Exception;
    }

    /** Kafka's code on a running broker's socket server; dropped for a stopped one, like SET. */
    private void onSocketServer(int id, SocketServerAction action) throws Exception {
        Broker broker = brokerFor(id);
        if (broker != null) {
            broker.kafka(() -> action.run(broker.socketServer));
        }
    }

    /** Every attribute of every MBean but the MBeanServer's own delegate, as JSON: [[name, attribute, value]]. */
    private static String dump(MBeanServer server) throws Exception {
        StringBuilder json = new StringBuilder("[");
        for (ObjectName name : server.queryNames(null, null)) {
            if (name.getDomain().equals("JMImplementation")) {
                continue;
            }
            MBeanAttributeInfo[] infos = server.getMBeanInfo(name).getAttributes();
            String[] names = new String[infos.length];
            for (int i = 0; i < infos.length; i++) {
                names[i] = infos[i].getName();
            }
            for (Attribute attribute : server.getAttributes(name, names).asList()) {
                Object value = attribute.getValue();
                json.append(json.length() > 1 ? "," : "").append('[').append(jsonString(name.toString()))
                        .append(',').append(jsonString(attribute.getName())).append(',')
                        // Python's json reads NaN and Infinity, which Kafka's rate metrics can be.
                        .append(value instanceof Number ? value.toString() : jsonString(String.valueOf(value)))
                        .append(']');
            }
        }
        return json.append(']').toString();
    }

    private static String jsonString(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
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

    /** The running broker, null for a stopped one (updates dropped), an error for an unknown id. */
    private Broker brokerFor(int id) throws CommandException {
        Broker broker = brokers.get(id);
        if (broker == null && !stopped.contains(id)) {
            throw new CommandException("no broker " + id + " (send BROKER first)");
        }
        return broker;
    }

    void shutdown() {
        List<Broker> all = new ArrayList<>(brokers.values());
        brokers.clear();
        for (Broker broker : all) {
            broker.stop();
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Parsing helpers.
    // ---------------------------------------------------------------------------------------------

    private static void expectFields(String[] f, int n, String usage) throws CommandException {
        if (f.length != n) {
            throw new CommandException("expected " + n + " tab-separated fields (" + usage + "), got " + f.length);
        }
    }

    private static int parseId(String s) throws CommandException {
        return parseInt(s, "broker id");
    }

    private static int parseInt(String s, String what) throws CommandException {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new CommandException(what + " " + quote(s) + " is not an integer");
        }
    }

    private static ObjectName parseName(String s) throws CommandException {
        try {
            ObjectName name = new ObjectName(s);
            if (name.isPattern()) {
                throw new CommandException("object name " + quote(s) + " is a pattern, not an MBean name");
            }
            return name;
        } catch (MalformedObjectNameException e) {
            throw new CommandException("bad object name " + quote(s) + ": " + e.getMessage());
        }
    }

    /** The boxed type a client will see from getAttribute (Integer for Kafka's IntGaugeSuite gauges). */
    private static Object parseValue(String type, String value) throws CommandException {
        try {
            return switch (type) {
                case "int" -> Integer.valueOf(value);
                case "long" -> Long.valueOf(value);
                case "double" -> Double.valueOf(value);
                case "string" -> value;
                default -> throw new CommandException(
                        "unknown type " + quote(type) + " (expected int, long, double or string)");
            };
        } catch (NumberFormatException e) {
            throw new CommandException("value " + quote(value) + " is not a valid " + type);
        }
    }

    private static String quote(String s) {
        return "'" + s + "'";
    }
}
