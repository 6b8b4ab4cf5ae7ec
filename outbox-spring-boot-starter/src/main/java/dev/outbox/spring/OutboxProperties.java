package dev.outbox.spring;

import dev.outbox.DispatcherConfig;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The {@code outbox.*} properties of the Spring Boot starter. Kafka connection settings (bootstrap servers, TLS,
 * SASL, client id, producer properties) come from Spring Boot's own {@code spring.kafka.*}; only what is the
 * outbox's own is here.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. The starter reads it once, at start-up.
 */
@ConfigurationProperties("outbox")
public final class OutboxProperties {
    private final Store store = new Store();
    private final Kafka kafka = new Kafka();
    private final Dispatcher dispatcher = new Dispatcher();
    private final Publisher publisher = new Publisher();

    public Store getStore() {
        return store;
    }

    public Kafka getKafka() {
        return kafka;
    }

    public Dispatcher getDispatcher() {
        return dispatcher;
    }

    public Publisher getPublisher() {
        return publisher;
    }

    /** Which store implementation holds the outbox. */
    public enum StoreType {
        /** PostgreSQL 13 or newer ({@code outbox-store-postgres}). */
        POSTGRES,
        /** MySQL 8 or MariaDB 10.6 and newer ({@code outbox-store-mysql}). */
        MYSQL,
        /** H2 2.2 or newer, embedded, for development and tests ({@code outbox-store-h2}). */
        H2
    }

    /** The outbox table, in the application's {@code DataSource}. */
    public static final class Store {
        /** Store implementation; detected from the DataSource's JDBC metadata when not set. */
        private StoreType type;
        /** Schema (Postgres) or database (MySQL) of the outbox tables; the connection's default when not set. */
        private String schema;
        /** The outbox table; parked rows go to "<table>_parked". */
        private String table = "outbox";
        /** Longest any statement of the store may run, lock waits included. */
        private Duration statementTimeout = Duration.ofSeconds(30);
        /** Longest key the publisher accepts; the store's default when not set (Postgres: none, MySQL: 1024). */
        private Integer maxKeyLength;
        /**
         * Whether to create the outbox tables at start-up if they are missing (idempotent), after the application's
         * Flyway or Liquibase migrations have run. Off by default: ship the DDL with your migrations instead (Flyway
         * and Liquibase migrations are included).
         */
        private boolean createSchema = false;
        /**
         * Postgres: wake the leader with {@code LISTEN/NOTIFY} when outbox rows are committed (the leader holds one
         * connection of the pool while it leads). Off: the leader polls. MySQL and MariaDB cannot notify; there the
         * publisher wakes a leader in the same process after each commit either way.
         */
        private boolean commitNotifications = true;
        /**
         * How many shards the outbox is split into, 1 to 256 (README, "Sharded harvest"): each shard is harvested by
         * a leader of its own. The store refuses a table made for another count, naming both. The shipped Flyway and
         * Liquibase migrations create an unsharded table: with more than 1, let {@code create-schema} create the
         * table, or change an existing one with the store's {@code reshard()} while no dispatcher runs. Not with
         * the WAL harvest.
         */
        private int shards = 1;
        /** The Postgres WAL harvest: set {@code url} to harvest the write-ahead log instead of the table. */
        private final Wal wal = new Wal();

        public Wal getWal() {
            return wal;
        }

        public StoreType getType() {
            return type;
        }

        public void setType(StoreType type) {
            this.type = type;
        }

        public String getSchema() {
            return schema;
        }

        public void setSchema(String schema) {
            this.schema = schema;
        }

        public String getTable() {
            return table;
        }

        public void setTable(String table) {
            this.table = table;
        }

        public Duration getStatementTimeout() {
            return statementTimeout;
        }

        public void setStatementTimeout(Duration statementTimeout) {
            this.statementTimeout = statementTimeout;
        }

        public Integer getMaxKeyLength() {
            return maxKeyLength;
        }

        public void setMaxKeyLength(Integer maxKeyLength) {
            this.maxKeyLength = maxKeyLength;
        }

        public boolean isCreateSchema() {
            return createSchema;
        }

        public void setCreateSchema(boolean createSchema) {
            this.createSchema = createSchema;
        }

        public int getShards() {
            return shards;
        }

        public void setShards(int shards) {
            this.shards = shards;
        }

        public boolean isCommitNotifications() {
            return commitNotifications;
        }

        public void setCommitNotifications(boolean commitNotifications) {
            this.commitNotifications = commitNotifications;
        }
    }

    /**
     * The Postgres WAL harvest ({@code WalHarvest}): off unless {@code url} is set. Messages are emitted into the
     * write-ahead log and streamed from a logical replication slot; see the README's "Choosing a harvest".
     */
    public static final class Wal {
        /** JDBC URL of the outbox's database for replication connections (no password in it); unset: table harvest. */
        private String url;
        /** User of the replication connections; needs the REPLICATION attribute. */
        private String username;
        /** Password of the replication connections; never logged. */
        private String password;
        /** Replication slot; default "<database>_[<schema>_]<table>_slot". */
        private String slot;
        /** Publication; default "<table>_publication". */
        private String publication;
        /** How long a new leader waits for a deposed one to release the slot before terminating its backend. */
        private Duration takeoverTimeout = Duration.ofSeconds(30);

        public String getUrl() {
            return url;
        }

        public void setUrl(String url) {
            this.url = url;
        }

        public String getUsername() {
            return username;
        }

        public void setUsername(String username) {
            this.username = username;
        }

        public String getPassword() {
            return password;
        }

        public void setPassword(String password) {
            this.password = password;
        }

        public String getSlot() {
            return slot;
        }

        public void setSlot(String slot) {
            this.slot = slot;
        }

        public String getPublication() {
            return publication;
        }

        public void setPublication(String publication) {
            this.publication = publication;
        }

        public Duration getTakeoverTimeout() {
            return takeoverTimeout;
        }

        public void setTakeoverTimeout(Duration takeoverTimeout) {
            this.takeoverTimeout = takeoverTimeout;
        }
    }

    /** What the outbox adds to {@code spring.kafka.*}: leader election and the outbox producer's bounds. */
    public static final class Kafka {
        /**
         * Leader topic, one per outbox: every instance harvesting the same outbox table must use the same one.
         * Defaults to "<spring.application.name>-outbox-leader".
         */
        private String leaderTopic;
        /** Leader consumer group; defaults to the leader topic. */
        private String leaderGroup;
        /** Whether to create a missing leader topic at start-up. */
        private boolean createLeaderTopic = true;
        /** Replication factor of a leader topic the outbox creates; the cluster's default when not set. */
        private Integer leaderTopicReplicationFactor;
        /** The outbox producer's delivery.timeout.ms: every send completes within it (at most 2 minutes). */
        private Duration deliveryTimeout = Duration.ofSeconds(8);
        /** How long closing the leader-election clients may take. */
        private Duration closeTimeout = Duration.ofSeconds(5);
        /**
         * Kafka producer properties for the outbox producer only, applied over spring.kafka.producer.*. The
         * settings the outbox enforces (acks=all, idempotence, ...) cannot be contradicted here either.
         */
        private Map<String, String> producerProperties = new LinkedHashMap<>();

        public String getLeaderTopic() {
            return leaderTopic;
        }

        public void setLeaderTopic(String leaderTopic) {
            this.leaderTopic = leaderTopic;
        }

        public String getLeaderGroup() {
            return leaderGroup;
        }

        public void setLeaderGroup(String leaderGroup) {
            this.leaderGroup = leaderGroup;
        }

        public boolean isCreateLeaderTopic() {
            return createLeaderTopic;
        }

        public void setCreateLeaderTopic(boolean createLeaderTopic) {
            this.createLeaderTopic = createLeaderTopic;
        }

        public Integer getLeaderTopicReplicationFactor() {
            return leaderTopicReplicationFactor;
        }

        public void setLeaderTopicReplicationFactor(Integer leaderTopicReplicationFactor) {
            this.leaderTopicReplicationFactor = leaderTopicReplicationFactor;
        }

        public Duration getDeliveryTimeout() {
            return deliveryTimeout;
        }

        public void setDeliveryTimeout(Duration deliveryTimeout) {
            this.deliveryTimeout = deliveryTimeout;
        }

        public Duration getCloseTimeout() {
            return closeTimeout;
        }

        public void setCloseTimeout(Duration closeTimeout) {
            this.closeTimeout = closeTimeout;
        }

        public Map<String, String> getProducerProperties() {
            return producerProperties;
        }

        public void setProducerProperties(Map<String, String> producerProperties) {
            this.producerProperties = producerProperties;
        }
    }

    /** The dispatcher that harvests the outbox; see DispatcherConfig for what each setting does. */
    public static final class Dispatcher {
        /** Whether this instance runs a dispatcher; turn off on instances that only write messages. */
        private boolean enabled = true;
        /**
         * Whether instances elect one leader over Kafka. Turn off only when exactly one instance runs a
         * dispatcher for this outbox: it then always leads.
         */
        private boolean leaderElection = true;
        /** Names the dispatcher's threads and log lines. */
        private String name = "outbox";
        /** Rows marked per mark statement (mark harvest); the least room worth a read (cursor harvest). */
        private int markBatchSize = 100;
        /** Records sent but not yet acknowledged and purged. */
        private int maxInFlightRecords = 1000;
        /**
         * Bytes (value + key + headers) of records read and not yet acknowledged and purged; the leader stops reading
         * when they reach it, and a record larger than it is sent alone. Default: an eighth of the JVM's maximum heap.
         */
        private DataSize maxInFlightBytes;
        /** Most ids purged (or reset) by one statement. */
        private int purgeBatchSize = 1000;
        /** Leader-election poll and heartbeat interval; the longest wait between marks of an idle outbox. */
        private Duration pollInterval = Duration.ofMillis(100);
        /** First wait after a mark found nothing; doubles up to poll-interval. */
        private Duration markBackoff = Duration.ofMillis(10);
        /** A leader that sees none of its own heartbeats for this long fences itself. */
        private Duration heartbeatTimeout = Duration.ofSeconds(5);
        /** A send still unacknowledged after this long is reported as stuck. */
        private Duration queueTimeout = Duration.ofSeconds(30);
        /** First wait after a failed store call or delivery; doubles on repeated failures. */
        private Duration ioErrorBackoff = Duration.ofMillis(500);
        /** Cap of the I/O error backoff. */
        private Duration maxIoErrorBackoff = Duration.ofSeconds(10);
        /** Failed deliveries after which a record is parked. */
        private int maxAttempts = 10;
        /** How long shutdown (and a leadership revocation) waits for in-flight records. */
        private Duration drainTimeout = Duration.ofSeconds(10);
        /** Period of throughput readings and outbox samples. */
        private Duration metricsInterval = Duration.ofSeconds(5);
        /** How the leader reads the outbox: cursor (read, send, delete on acknowledgement) or mark. */
        private DispatcherConfig.Harvest harvest = DispatcherConfig.Harvest.CURSOR;
        /** Cursor harvest only: how often a caught-up leader reads the table from its head again. */
        private Duration rescanInterval = Duration.ofSeconds(30);
        /**
         * What happens to a key once one of its records is parked: move-on (its later records flow) or hold-key (they
         * wait until the parked rows are replayed or discarded).
         */
        private DispatcherConfig.AfterPark afterPark = DispatcherConfig.AfterPark.MOVE_ON;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public boolean isLeaderElection() {
            return leaderElection;
        }

        public void setLeaderElection(boolean leaderElection) {
            this.leaderElection = leaderElection;
        }

        public String getName() {
            return name;
        }

        public void setName(String name) {
            this.name = name;
        }

        public int getMarkBatchSize() {
            return markBatchSize;
        }

        public void setMarkBatchSize(int markBatchSize) {
            this.markBatchSize = markBatchSize;
        }

        public int getMaxInFlightRecords() {
            return maxInFlightRecords;
        }

        public void setMaxInFlightRecords(int maxInFlightRecords) {
            this.maxInFlightRecords = maxInFlightRecords;
        }

        /** The bound in bytes, or null for the default (an eighth of the heap). */
        public DataSize getMaxInFlightBytes() {
            return maxInFlightBytes;
        }

        public void setMaxInFlightBytes(DataSize maxInFlightBytes) {
            this.maxInFlightBytes = maxInFlightBytes;
        }

        public int getPurgeBatchSize() {
            return purgeBatchSize;
        }

        public void setPurgeBatchSize(int purgeBatchSize) {
            this.purgeBatchSize = purgeBatchSize;
        }

        public Duration getPollInterval() {
            return pollInterval;
        }

        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        public Duration getMarkBackoff() {
            return markBackoff;
        }

        public void setMarkBackoff(Duration markBackoff) {
            this.markBackoff = markBackoff;
        }

        public Duration getHeartbeatTimeout() {
            return heartbeatTimeout;
        }

        public void setHeartbeatTimeout(Duration heartbeatTimeout) {
            this.heartbeatTimeout = heartbeatTimeout;
        }

        public Duration getQueueTimeout() {
            return queueTimeout;
        }

        public void setQueueTimeout(Duration queueTimeout) {
            this.queueTimeout = queueTimeout;
        }

        public Duration getIoErrorBackoff() {
            return ioErrorBackoff;
        }

        public void setIoErrorBackoff(Duration ioErrorBackoff) {
            this.ioErrorBackoff = ioErrorBackoff;
        }

        public Duration getMaxIoErrorBackoff() {
            return maxIoErrorBackoff;
        }

        public void setMaxIoErrorBackoff(Duration maxIoErrorBackoff) {
            this.maxIoErrorBackoff = maxIoErrorBackoff;
        }

        public int getMaxAttempts() {
            return maxAttempts;
        }

        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        public Duration getDrainTimeout() {
            return drainTimeout;
        }

        public void setDrainTimeout(Duration drainTimeout) {
            this.drainTimeout = drainTimeout;
        }

        public Duration getMetricsInterval() {
            return metricsInterval;
        }

        public void setMetricsInterval(Duration metricsInterval) {
            this.metricsInterval = metricsInterval;
        }

        public DispatcherConfig.Harvest getHarvest() {
            return harvest;
        }

        public void setHarvest(DispatcherConfig.Harvest harvest) {
            this.harvest = harvest;
        }

        public Duration getRescanInterval() {
            return rescanInterval;
        }

        public void setRescanInterval(Duration rescanInterval) {
            this.rescanInterval = rescanInterval;
        }

        public DispatcherConfig.AfterPark getAfterPark() {
            return afterPark;
        }

        public void setAfterPark(DispatcherConfig.AfterPark afterPark) {
            this.afterPark = afterPark;
        }

        /**
         * The {@link DispatcherConfig} of these settings.
         *
         * @param prefix the settings' property prefix, e.g. {@code outbox.dispatcher}: a bad value is reported as
         *               {@code <prefix>.<setting>}
         * @throws OutboxConfigurationException naming the property of a bad value, or the prefix for a bad relation
         *                                      between values
         */
        public DispatcherConfig toConfig(String prefix) {
            DispatcherConfig.Builder b = DispatcherConfig.builder();
            set(prefix + ".mark-batch-size", markBatchSize, b::markBatchSize);
            set(prefix + ".max-in-flight-records", maxInFlightRecords, b::maxInFlightRecords);
            if (maxInFlightBytes != null) {
                set(prefix + ".max-in-flight-bytes", maxInFlightBytes, v -> b.maxInFlightBytes(v.toBytes()));
            }
            set(prefix + ".purge-batch-size", purgeBatchSize, b::purgeBatchSize);
            set(prefix + ".poll-interval", pollInterval, b::pollInterval);
            set(prefix + ".mark-backoff", markBackoff, b::markBackoff);
            set(prefix + ".heartbeat-timeout", heartbeatTimeout, b::heartbeatTimeout);
            set(prefix + ".queue-timeout", queueTimeout, b::queueTimeout);
            set(prefix + ".io-error-backoff", ioErrorBackoff, b::ioErrorBackoff);
            set(prefix + ".max-io-error-backoff", maxIoErrorBackoff, b::maxIoErrorBackoff);
            set(prefix + ".max-attempts", maxAttempts, b::maxAttempts);
            set(prefix + ".drain-timeout", drainTimeout, b::drainTimeout);
            set(prefix + ".metrics-interval", metricsInterval, b::metricsInterval);
            set(prefix + ".harvest", harvest, b::harvest);
            set(prefix + ".rescan-interval", rescanInterval, b::rescanInterval);
            set(prefix + ".after-park", afterPark, b::afterPark);
            try {
                return b.build();
            } catch (IllegalArgumentException e) {
                throw new OutboxConfigurationException(prefix, e.getMessage(),
                        "change the " + prefix + ".* settings the message names (in kebab case)", e);
            }
        }
    }

    /** Applies one setting, naming {@code property} when the setter rejects {@code value}. */
    static <T> void set(String property, T value, Consumer<T> setter) {
        try {
            setter.accept(value);
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new OutboxConfigurationException(property, "'" + value + "' is not valid: " + e.getMessage(),
                    "use a value the dispatcher accepts (see the message)", e);
        }
    }

    /** The {@link OutboxPublisher} bean. */
    public static final class Publisher {
        /**
         * Whether publishing requires an active Spring transaction on the outbox's DataSource (the default). When
         * false, a publish outside a transaction is written and committed on its own.
         */
        private boolean requireTransaction = true;

        public boolean isRequireTransaction() {
            return requireTransaction;
        }

        public void setRequireTransaction(boolean requireTransaction) {
            this.requireTransaction = requireTransaction;
        }
    }
}
