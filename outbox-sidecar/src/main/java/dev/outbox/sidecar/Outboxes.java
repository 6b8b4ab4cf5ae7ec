package dev.outbox.sidecar;


import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.outbox.Dispatcher;
import dev.outbox.DispatcherConfig;
import dev.outbox.broker.kafka.KafkaLeaderTransport;
import dev.outbox.broker.kafka.KafkaMessageBroker;
import dev.outbox.broker.rabbitmq.RabbitMqMessageBroker;
import dev.outbox.spi.MessageBroker;
import dev.outbox.spring.OutboxRabbitMqClients;
import dev.outbox.spring.OutboxConfigurationException;
import dev.outbox.spring.OutboxKafkaClients;
import dev.outbox.spring.OutboxSchemaInitializer;
import dev.outbox.spring.OutboxStoreFactory;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Every outbox of the configuration, built (pools connected, stores and dispatchers created) before the Spring
 * context starts, so that a bad setting stops the sidecar with one line naming it; run as one {@link SmartLifecycle}:
 * started with the context, closed (each dispatcher draining its in-flight records) when it stops. Thread-safe.
 */
public final class Outboxes implements SmartLifecycle, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Outboxes.class);
    private static final Pattern KAFKA_PROPERTY = Pattern.compile("Kafka property '([^']+)'");
    /** Outbox names appear in URLs and metric tags. */
    static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");

    private final Map<String, SidecarOutbox> outboxes;
    private volatile boolean running;

    private Outboxes(Map<String, SidecarOutbox> outboxes) {
        this.outboxes = outboxes;
    }

    /**
     * The outboxes by name, in the configuration's order.
     *
     * @return every configured outbox, at least one: a view of this object's map, not to be modified
     */
    public Collection<SidecarOutbox> all() {
        return outboxes.values();
    }

    /**
     * The outbox named {@code name}, if configured.
     *
     * @param name the outbox's name as in {@code sidecar.outboxes.<name>} (the name in the operator API's URLs)
     * @return the outbox, or empty if none has that name
     */
    public Optional<SidecarOutbox> get(String name) {
        return Optional.ofNullable(outboxes.get(name));
    }

    /**
     * Builds every outbox of {@code p}; {@code raw} gives a key's value as written in the configuration file.
     *
     * @throws SidecarConfigException naming the first bad key; whatever was built is closed
     */
    static Outboxes build(SidecarProperties p, Function<String, String> raw, Secrets secrets) {
        SidecarProperties.Kafka kafka = p.getKafka();
        if (p.getOutboxes().isEmpty()) {
            throw new SidecarConfigException("sidecar.outboxes", null, "configure at least one outbox, e.g."
                    + " sidecar.outboxes.orders.datasource.url", null);
        }
        boolean kafkaSet = kafka.getBootstrapServers() != null && !kafka.getBootstrapServers().isBlank();
        SidecarRabbitMqProperties rabbitMq = p.getRabbitmq();
        if (rabbitMq.isConfigured() && kafkaSet) {
            throw new SidecarConfigException("sidecar.kafka.bootstrap-servers", kafka.getBootstrapServers(), "set too,"
                    + " while sidecar.rabbitmq is configured: the sidecar publishes to one broker; remove the section"
                    + " of the other", null);
        }
        if (!rabbitMq.isConfigured() && !kafkaSet) {
            throw new SidecarConfigException("sidecar.kafka.bootstrap-servers", kafka.getBootstrapServers(),
                    "set it to the Kafka cluster to publish to, e.g. kafka-1:9092,kafka-2:9092 (or configure"
                            + " sidecar.rabbitmq.uri or sidecar.rabbitmq.host to publish to RabbitMQ)", null);
        }
        com.rabbitmq.client.ConnectionFactory rabbit = null;
        if (rabbitMq.isConfigured()) {
            rabbit = SidecarRabbitMq.factory(rabbitMq, secrets);
            // Before any broker is built: a broker keeps trying in the background, and its warnings would come
            // before the one line that names the key.
            SidecarRabbitMq.check(rabbit, rabbitMq);
        }
        Map<String, Object> connection = new LinkedHashMap<>(kafka.getProperties());
        connection.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.getBootstrapServers());
        Map<String, SidecarOutbox> built = new LinkedHashMap<>();
        Outboxes result = new Outboxes(built);
        try {
            for (Map.Entry<String, SidecarProperties.Outbox> e : p.getOutboxes().entrySet()) {
                if (!NAME.matcher(e.getKey()).matches()) {
                    throw new SidecarConfigException("sidecar.outboxes." + e.getKey(), null, "an outbox name is"
                            + " lower-case letters, digits, '-' and '_' (it appears in URLs and metrics)", null);
                }
                if (!e.getValue().getDispatcher().isEnabled()) {
                    log.info("Outbox '{}' is disabled (dispatcher.enabled=false)", e.getKey());
                    continue;
                }
                built.put(e.getKey(), buildOne(e.getKey(), e.getValue(), kafka, connection, rabbit, raw, secrets));
            }
            if (built.isEmpty()) {
                throw new SidecarConfigException("sidecar.outboxes", null, "every outbox is disabled", null);
            }
            if (rabbit == null) {
                checkKafka(connection, kafka);
            }
            return result;
        } catch (RuntimeException e) {
            result.close();
            throw e;
        }
    }

    private static SidecarOutbox buildOne(String name, SidecarProperties.Outbox o, SidecarProperties.Kafka kafka,
                                          Map<String, Object> connection,
                                          com.rabbitmq.client.ConnectionFactory rabbit,
                                          Function<String, String> raw, Secrets secrets) {
        String prefix = "sidecar.outboxes." + name;
        HikariDataSource pool = pool(name, prefix + ".datasource", o.getDatasource(), secrets);
        MessageBroker broker = null;
        try {
            OutboxStoreFactory.Built store;
            DispatcherConfig config;
            try {
                store = OutboxStoreFactory.build(pool, prefix + ".store", o.getStore());
                new OutboxSchemaInitializer(store.store(), o.getStore().isCreateSchema() ? store.createSchema() : null,
                        prefix + ".store.shards");
                config = o.getDispatcher().toConfig(prefix + ".dispatcher");
            } catch (OutboxConfigurationException e) {
                throw translate(e, raw);
            }
            dev.outbox.spring.LeaderElection election;
            try {
                election = o.getDispatcher().election(prefix + ".dispatcher.leader-election");
            } catch (OutboxConfigurationException e) {
                throw translate(e, raw);
            }
            KafkaMessageBroker kafkaBroker = null;
            Duration deliveryTimeout;
            String target;
            if (rabbit != null) {
                if (election == dev.outbox.spring.LeaderElection.KAFKA) {
                    String key = prefix + ".dispatcher.leader-election";
                    throw new SidecarConfigException(key, raw.apply(key) == null ? "kafka" : raw.apply(key), "the"
                            + " default, kafka, needs Kafka, and the broker is RabbitMQ (sidecar.rabbitmq): set it to"
                            + " database (a lease in the outbox's database) or none (a single sidecar)", null);
                }
                if ("outbox".equals(o.getRabbitmq().getConnectionName())) {
                    o.getRabbitmq().setConnectionName("outbox-sidecar-" + name);
                }
                try {
                    broker = OutboxRabbitMqClients.brokerSettings(RabbitMqMessageBroker.builder()
                            .connectionFactory(rabbit), prefix + ".rabbitmq", o.getRabbitmq()).build();
                } catch (OutboxConfigurationException e) {
                    throw translate(e, raw);
                }
                deliveryTimeout = o.getRabbitmq().getConfirmTimeout();
                target = "RabbitMQ " + SidecarRabbitMq.target(rabbit);
            } else {
                Map<String, Object> producer = new LinkedHashMap<>(connection);
                producer.putAll(kafka.getProducerProperties());
                producer.putAll(o.getKafka().getProducerProperties());
                try {
                    kafkaBroker = OutboxKafkaClients.brokerSettings(KafkaMessageBroker.builder().properties(producer),
                            prefix + ".kafka", o.getKafka()).build();
                } catch (OutboxConfigurationException e) {
                    throw translate(e, raw);
                } catch (IllegalArgumentException | org.apache.kafka.common.KafkaException e) {
                    throw kafkaSetting(e, prefix, raw);
                }
                broker = kafkaBroker;
                deliveryTimeout = kafkaBroker.deliveryTimeout();
                target = "Kafka " + kafka.getBootstrapServers();
            }
            String leaderTopic = o.getKafka().getLeaderTopic() != null ? o.getKafka().getLeaderTopic()
                    : name + "-outbox-leader";
            SidecarOutbox.Status status = new SidecarOutbox.Status(Clock.systemUTC());
            Dispatcher.Builder b = Dispatcher.builder(store.store(), TopicPrefixBroker.of(broker, o.getTopicPrefix()))
                    .config(config)
                    .name("outbox".equals(o.getDispatcher().getName()) ? name : o.getDispatcher().getName())
                    .listener(status);
            if (election == dev.outbox.spring.LeaderElection.DATABASE) {
                try {
                    dev.outbox.spring.OutboxDatabaseElection.apply(b, store.store(), config, deliveryTimeout,
                            prefix + ".dispatcher.leader-election");
                } catch (OutboxConfigurationException e) {
                    throw translate(e, raw);
                }
            } else if (election == dev.outbox.spring.LeaderElection.KAFKA) {
                try {
                    int shards = dev.outbox.spi.Sharding.of(store.store());
                    if (shards > 1) {
                        b.leaderTransport(OutboxKafkaClients.shardedLeaderTransport(connection, leaderTopic, shards,
                                prefix + ".kafka", o.getKafka(), config, kafkaBroker));
                    } else {
                        KafkaLeaderTransport transport = OutboxKafkaClients.leaderTransport(connection, leaderTopic,
                                prefix + ".kafka", o.getKafka(), config, kafkaBroker);
                        b.leaderTransport(transport);
                    }
                } catch (OutboxConfigurationException e) {
                    throw translate(e, raw);
                }
            }
            log.info("Outbox '{}': {} table {} -> {}{}", name, store.type(), store.table(),
                    target, o.getTopicPrefix().isEmpty() ? "" : " (topic prefix '"
                            + o.getTopicPrefix() + "')");
            return new SidecarOutbox(name, pool, store.store(), b.build(), status);
        } catch (RuntimeException e) {
            if (broker != null) {
                broker.close(Duration.ofSeconds(1));
            }
            pool.close();
            throw e;
        }
    }

    /** A pool over the outbox's database, connected once to prove the settings; its failure names the URL. */
    static HikariDataSource pool(String name, String prefix, SidecarDataSourceProperties d, Secrets secrets) {
        if (d.getUrl() != null && !d.getUrl().isBlank() && d.getMaximumPoolSize() < 2) { // a missing URL first
            throw new SidecarConfigException(prefix + ".maximum-pool-size", String.valueOf(d.getMaximumPoolSize()),
                    "at least 2: the dispatcher marks on one connection while it purges on another", null);
        }
        return pool("outbox", name, prefix, d, secrets);
    }

    /**
     * A pool named {@code <owner>-<name>} over the database of an outbox or inbox ({@code owner}), connected once to
     * prove the settings; its failure names the URL.
     */
    static HikariDataSource pool(String owner, String name, String prefix, SidecarDataSourceProperties d,
                                 Secrets secrets) {
        if (d.getUrl() == null || d.getUrl().isBlank()) {
            throw new SidecarConfigException(prefix + ".url", d.getUrl(), "set the JDBC URL of the " + owner
                    + "'s database, e.g. jdbc:postgresql://db:5432/app or jdbc:mysql://db:3306/app", null);
        }
        if (d.getMaximumPoolSize() < 1) {
            throw new SidecarConfigException(prefix + ".maximum-pool-size", String.valueOf(d.getMaximumPoolSize()),
                    "at least 1", null);
        }
        HikariConfig c = new HikariConfig();
        c.setPoolName(owner + "-" + name);
        c.setJdbcUrl(d.getUrl());
        c.setUsername(d.getUsername());
        c.setPassword(secrets.read(prefix + ".password", d.getPassword(), prefix + ".password-file",
                d.getPasswordFile()));
        c.setMaximumPoolSize(d.getMaximumPoolSize());
        c.setConnectionTimeout(Math.max(250, d.getConnectionTimeout().toMillis()));
        // Connect below, where a failure becomes one line naming the URL; the pool itself starts empty.
        c.setInitializationFailTimeout(-1);
        HikariDataSource pool;
        try {
            pool = new HikariDataSource(c);
        } catch (RuntimeException e) {
            throw new SidecarConfigException(prefix + ".url", d.getUrl(), "cannot use it: " + e.getMessage(), e);
        }
        try (Connection ignored = pool.getConnection()) {
            return pool;
        } catch (SQLException | RuntimeException e) {
            pool.close();
            throw new SidecarConfigException(prefix + ".url", d.getUrl(), "cannot connect: " + rootMessage(e), e);
        }
    }

    /** Fails unless the Kafka cluster answers within {@code startup-timeout}. */
    private static void checkKafka(Map<String, Object> connection, SidecarProperties.Kafka kafka) {
        Duration timeout = kafka.getStartupTimeout();
        Map<String, Object> admin = new LinkedHashMap<>(connection);
        admin.keySet().retainAll(AdminClientConfig.configNames());
        admin.put(AdminClientConfig.CLIENT_ID_CONFIG, "outbox-sidecar-startup-check");
        int ms = (int) Math.max(1000, Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, ms);
        admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, ms);
        try (Admin a = Admin.create(admin)) {
            a.describeCluster(new DescribeClusterOptions().timeoutMs(ms)).nodes().get(ms + 1000L, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SidecarConfigException("sidecar.kafka.bootstrap-servers", kafka.getBootstrapServers(),
                    "interrupted while connecting", e);
        } catch (ExecutionException | TimeoutException | org.apache.kafka.common.KafkaException e) {
            throw new SidecarConfigException("sidecar.kafka.bootstrap-servers", kafka.getBootstrapServers(),
                    "Kafka did not answer within sidecar.kafka.startup-timeout (" + timeout.toSeconds() + " s): "
                            + rootMessage(e), e);
        }
    }

    private static SidecarConfigException translate(OutboxConfigurationException e, Function<String, String> raw) {
        String problem = e.getMessage();
        int colon = problem.indexOf("': ");
        if (colon >= 0) {
            problem = problem.substring(colon + 3);
        }
        String value = raw.apply(e.property());
        if (value != null) { // the value as written is shown before the problem; not again as bound ('PT5M')
            problem = problem.replaceFirst("^'[^']*' is not valid: ", "").strip();
        }
        return new SidecarConfigException(e.property(), value, problem, e);
    }

    /** Names the key that set the Kafka client setting a builder rejected. */
    private static SidecarConfigException kafkaSetting(RuntimeException e, String prefix, Function<String, String> raw) {
        Matcher m = KAFKA_PROPERTY.matcher(String.valueOf(e.getMessage()));
        String setting = m.find() ? m.group(1) : null;
        String key = "sidecar.kafka.properties";
        if (setting != null) {
            for (String candidate : List.of(prefix + ".kafka.producer-properties." + setting,
                    "sidecar.kafka.producer-properties." + setting, "sidecar.kafka.properties." + setting)) {
                if (raw.apply(candidate) != null) {
                    key = candidate;
                    break;
                }
            }
            if (setting.equals(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG) && key.equals("sidecar.kafka.properties")) {
                key = prefix + ".kafka.delivery-timeout";
            }
        }
        return new SidecarConfigException(key, raw.apply(key), e.getMessage(), e);
    }

    static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        String m = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
        return m.replaceAll("[\\r\\n]+", " ");
    }

    @Override
    public synchronized void start() {
        for (SidecarOutbox o : outboxes.values()) {
            o.dispatcher().start();
        }
        running = true;
        log.info("Harvesting {} outbox(es): {}", outboxes.size(), outboxes.keySet());
    }

    /** Closes every dispatcher at once (each drains its in-flight records), then the pools. */
    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        log.info("Closing {} outbox dispatcher(s), draining in-flight records", outboxes.size());
        List<Thread> closing = new ArrayList<>();
        for (SidecarOutbox o : outboxes.values()) {
            Thread t = new Thread(() -> o.dispatcher().close(), "outbox-sidecar-close-" + o.name());
            t.start();
            closing.add(t);
        }
        for (Thread t : closing) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        log.info("Every outbox dispatcher is closed");
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Below the web server's graceful shutdown, as the starter's dispatcher lifecycle. */
    @Override
    public int getPhase() {
        return dev.outbox.spring.OutboxDispatcherLifecycle.PHASE;
    }

    /** Closes the dispatchers (if still open) and the pools; idempotent. */
    @Override
    public synchronized void close() {
        stop();
        for (SidecarOutbox o : outboxes.values()) {
            o.dispatcher().close();
            o.closePool();
        }
    }
}
