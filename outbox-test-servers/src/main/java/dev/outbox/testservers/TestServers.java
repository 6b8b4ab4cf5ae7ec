package dev.outbox.testservers;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The real servers tests run against: each is started on first use, shared by every test of the JVM, and stopped
 * when the JVM exits.
 *
 * <p>Where a server comes from is chosen by system properties, so tests never know:
 * <ul>
 *   <li>{@code outbox.test.postgres.url} (with {@code .user}, {@code .password}), likewise
 *       {@code outbox.test.mysql.*}, {@code outbox.test.mariadb.*}, {@code outbox.test.kafka.bootstrap} and
 *       {@code outbox.test.rabbitmq.uri} (or the environment variable {@code OUTBOX_TEST_RABBITMQ_URI}): use
 *       that existing server ({@link ServerMode#EXTERNAL}); it is never stopped or restarted.</li>
 *   <li>otherwise {@code outbox.test.servers}: {@code embedded} starts the server from Maven artifacts, in this
 *       JVM (Kafka; the three-broker cluster as child JVMs) or as a child process (databases), with its files under
 *       {@code target/outbox-test-servers}; {@code docker} starts it with Testcontainers; {@code auto}, the
 *       default, uses Docker when a Docker engine answers and embedded servers otherwise.</li>
 * </ul>
 * Each server logs one INFO line saying what started, its version, mode and start time.
 *
 * <p>Thread-safe: concurrent first calls start one server.
 */
public final class TestServers {
    /** System property choosing how servers are provided: {@code auto} (default), {@code embedded}, {@code docker}. */
    public static final String MODE_PROPERTY = "outbox.test.servers";
    /** System property naming an existing Kafka cluster to use, as a {@code bootstrap.servers} string. */
    public static final String KAFKA_BOOTSTRAP_PROPERTY = "outbox.test.kafka.bootstrap";

    /** System property naming an existing RabbitMQ node to use, as an AMQP URI (it wins over the variable). */
    public static final String RABBITMQ_URI_PROPERTY = "outbox.test.rabbitmq.uri";
    /**
     * Environment variable naming an existing RabbitMQ node to use, as an AMQP URI: unlike a system property, it
     * keeps the password off the command line.
     */
    public static final String RABBITMQ_URI_VARIABLE = "OUTBOX_TEST_RABBITMQ_URI";

    private static final Logger LOG = LoggerFactory.getLogger(TestServers.class);
    private static final Object LOCK = new Object();
    private static final Slot<DefaultJdbcServer> POSTGRES = new Slot<>("Postgres");
    private static final Slot<DefaultJdbcServer> MYSQL = new Slot<>("MySQL");
    private static final Slot<DefaultJdbcServer> MARIADB = new Slot<>("MariaDB");
    private static final Slot<DefaultKafkaServer> KAFKA = new Slot<>("Kafka");
    private static final Slot<DefaultKafkaServer> KAFKA_CLUSTER = new Slot<>("Kafka cluster");
    private static final Slot<RabbitMqServer> RABBITMQ = new Slot<>("RabbitMQ");
    private static boolean hookInstalled;

    private TestServers() {
    }

    /** The shared PostgreSQL server, started on first call. */
    public static JdbcServer postgres() {
        return POSTGRES.get(() -> startJdbc(JdbcServer.Kind.POSTGRES));
    }

    /** The shared MySQL 8 server, started on first call. */
    public static JdbcServer mysql() {
        return MYSQL.get(() -> startJdbc(JdbcServer.Kind.MYSQL));
    }

    /** The shared MariaDB server, started on first call. */
    public static JdbcServer mariadb() {
        return MARIADB.get(() -> startJdbc(JdbcServer.Kind.MARIADB));
    }

    /** The shared single-broker Kafka cluster, started on first call. */
    public static KafkaServer kafka() {
        return KAFKA.get(TestServers::startKafka);
    }

    /**
     * The shared three-broker Kafka cluster (KRaft, a separate controller), started on first call: every topic has
     * replication factor 3 and {@code min.insync.replicas=2}; {@link KafkaServer#stopBroker(int)} kills one broker
     * (SIGKILL) and {@link KafkaServer#startBroker(int)} starts it again. Always embedded, each node a child JVM
     * (whatever {@link #MODE_PROPERTY} says): it is what a test of a lost broker needs, and a fourth container set
     * would cost more than it shows.
     */
    public static KafkaServer kafkaCluster() {
        return KAFKA_CLUSTER.get(() -> DefaultKafkaServer.start(new ProcessKafkaClusterBackend()));
    }

    /**
     * The shared RabbitMQ node, started on first call: an existing one if {@value #RABBITMQ_URI_PROPERTY} (system
     * property) or {@value #RABBITMQ_URI_VARIABLE} (environment variable) names it, otherwise Debian's
     * {@code rabbitmq-server} run as a node of this JVM's own (whatever {@link #MODE_PROPERTY} says: there is no
     * Docker variant), with the consistent-hash exchange plugin enabled.
     */
    public static RabbitMqServer rabbitMq() {
        return RABBITMQ.get(TestServers::startRabbitMq);
    }

    private static RabbitMqServer startRabbitMq() {
        String property = System.getProperty(RABBITMQ_URI_PROPERTY);
        if (property != null && !property.isBlank()) {
            return external(property, "system property " + RABBITMQ_URI_PROPERTY);
        }
        String variable = System.getenv(RABBITMQ_URI_VARIABLE);
        if (variable != null && !variable.isBlank()) {
            return external(variable, "environment variable " + RABBITMQ_URI_VARIABLE);
        }
        return RabbitMqNode.start();
    }

    private static RabbitMqServer external(String uri, String source) {
        RabbitMqServer server = new ExternalRabbitMq(uri, source);
        LOG.info("{}, given by {}", server, source);
        return server;
    }

    /** The JDBC server of {@code kind}: {@link #postgres()}, {@link #mysql()} or {@link #mariadb()}. */
    public static JdbcServer jdbc(JdbcServer.Kind kind) {
        switch (kind) {
            case POSTGRES:
                return postgres();
            case MYSQL:
                return mysql();
            case MARIADB:
                return mariadb();
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static DefaultJdbcServer startJdbc(JdbcServer.Kind kind) {
        String prefix = "outbox.test." + kind.name().toLowerCase(Locale.ROOT) + ".";
        String url = System.getProperty(prefix + "url");
        JdbcBackend backend;
        if (url != null && !url.isBlank()) {
            String user = System.getProperty(prefix + "user");
            if (user == null || user.isBlank()) {
                throw new IllegalArgumentException("system property " + prefix + "url is '" + url + "' but "
                        + prefix + "user is not set");
            }
            backend = new ExternalJdbcBackend(kind, url, user, System.getProperty(prefix + "password", ""));
        } else if (useDocker()) {
            try {
                return DefaultJdbcServer.start(DockerServers.jdbc(kind));
            } catch (RuntimeException e) {
                throw dockerFailure(DefaultJdbcServer.displayName(kind), e);
            }
        } else {
            backend = embedded(kind);
        }
        return DefaultJdbcServer.start(backend);
    }

    private static JdbcBackend embedded(JdbcServer.Kind kind) {
        switch (kind) {
            case POSTGRES:
                return new EmbeddedPostgresBackend();
            case MYSQL:
                return new EmbeddedMySqlBackend();
            case MARIADB:
                return new EmbeddedMariaDbBackend();
            default:
                throw new IllegalArgumentException("unknown kind " + kind);
        }
    }

    private static DefaultKafkaServer startKafka() {
        String bootstrap = System.getProperty(KAFKA_BOOTSTRAP_PROPERTY);
        KafkaBackend backend;
        if (bootstrap != null && !bootstrap.isBlank()) {
            backend = new ExternalKafkaBackend(bootstrap.trim());
        } else if (useDocker()) {
            try {
                return DefaultKafkaServer.start(DockerServers.kafka());
            } catch (RuntimeException e) {
                throw dockerFailure("Kafka", e);
            }
        } else {
            backend = new EmbeddedKafkaBackend();
        }
        return DefaultKafkaServer.start(backend);
    }

    private static IllegalStateException dockerFailure(String server, RuntimeException e) {
        return new IllegalStateException(server + " could not start in Docker (" + MODE_PROPERTY + "="
                + System.getProperty(MODE_PROPERTY, "auto") + "): " + e.getMessage()
                + "; use -D" + MODE_PROPERTY + "=embedded to run it without Docker", e);
    }

    /** Whether to use Docker, from {@link #MODE_PROPERTY}. */
    static boolean useDocker() {
        String mode = System.getProperty(MODE_PROPERTY, "auto").trim().toLowerCase(Locale.ROOT);
        switch (mode) {
            case "embedded":
                return false;
            case "docker":
                return true;
            case "auto":
            case "":
                return DockerServers.dockerAnswers();
            default:
                throw new IllegalArgumentException("system property " + MODE_PROPERTY + " is '" + mode
                        + "'; expected auto, embedded or docker");
        }
    }

    private static void installShutdownHook() {
        if (hookInstalled) {
            return;
        }
        hookInstalled = true;
        Thread hook = new Thread(TestServers::stopAll, "outbox-test-servers-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    private static void stopAll() {
        List<Runnable> stops = new ArrayList<>();
        KAFKA.ifStarted(k -> stops.add(k::shutdown));
        KAFKA_CLUSTER.ifStarted(k -> stops.add(k::shutdown));
        RABBITMQ.ifStarted(r -> {
            if (r instanceof RabbitMqNode node) {
                stops.add(node::shutdown);
            }
        });
        POSTGRES.ifStarted(s -> stops.add(s::shutdown));
        MYSQL.ifStarted(s -> stops.add(s::shutdown));
        MARIADB.ifStarted(s -> stops.add(s::shutdown));
        for (Runnable stop : stops) {
            try {
                stop.run();
            } catch (RuntimeException e) {
                LOG.warn("Could not stop a test server at exit: {}", e.toString());
            }
        }
    }

    /** A lazily started server; a failed start is remembered so later tests fail fast with the same cause. */
    private static final class Slot<T> {
        private final String name;
        private T server;
        private RuntimeException failure;

        Slot(String name) {
            this.name = name;
        }

        T get(Supplier<T> starter) {
            synchronized (this) {
                if (server != null) {
                    return server;
                }
                if (failure != null) {
                    throw new IllegalStateException(name + " failed to start earlier in this JVM: "
                            + failure.getMessage(), failure);
                }
                synchronized (LOCK) {
                    installShutdownHook();
                }
                try {
                    server = starter.get();
                    return server;
                } catch (RuntimeException e) {
                    failure = e;
                    throw e;
                }
            }
        }

        void ifStarted(java.util.function.Consumer<T> action) {
            T s;
            synchronized (this) {
                s = server;
            }
            if (s != null) {
                action.accept(s);
            }
        }
    }
}
