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

    /**
     * {@return the {@code outbox.store.*} settings: the store and its tables; never {@code null}, the same object for
     * the bean's life}
     */
    public Store getStore() {
        return store;
    }

    /**
     * {@return the {@code outbox.kafka.*} settings: leader election and the outbox producer's bounds; never
     * {@code null}, the same object for the bean's life}
     */
    public Kafka getKafka() {
        return kafka;
    }

    /**
     * {@return the {@code outbox.dispatcher.*} settings: the dispatcher that harvests the outbox; never {@code null},
     * the same object for the bean's life}
     */
    public Dispatcher getDispatcher() {
        return dispatcher;
    }

    /**
     * {@return the {@code outbox.publisher.*} settings: the {@link OutboxPublisher} bean's; never {@code null}, the
     * same object for the bean's life}
     */
    public Publisher getPublisher() {
        return publisher;
    }

    /** Which store implementation holds the outbox. */
    public enum StoreType {
        /** PostgreSQL 13 or newer ({@code outbox-store-postgres}). */
        POSTGRES,
        /** MySQL 8 or MariaDB 10.6 and newer ({@code outbox-store-mysql}). */
        MYSQL
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

        /**
         * {@return the {@code wal.*} settings of the Postgres WAL harvest, off while their {@code url} is {@code null};
         * never {@code null}}
         */
        public Wal getWal() {
            return wal;
        }

        /**
         * {@return the store implementation, or {@code null} (the default) to detect it from the DataSource's JDBC
         * metadata} Bound from the {@code type} property.
         */
        public StoreType getType() {
            return type;
        }

        /**
         * Sets the {@code type} property.
         *
         * @param type {@code POSTGRES} or {@code MYSQL} (bound from {@code postgres} or {@code mysql}, MariaDB
         *             included), or {@code null} to detect it
         */
        public void setType(StoreType type) {
            this.type = type;
        }

        /**
         * {@return the schema (Postgres) or database (MySQL) of the outbox tables, or {@code null} (the default) for
         * the connection's default} Bound from the {@code schema} property.
         */
        public String getSchema() {
            return schema;
        }

        /**
         * Sets the {@code schema} property.
         *
         * @param schema an identifier the store accepts, or {@code null}; checked at start-up, where a bad one fails
         *               naming the property
         */
        public void setSchema(String schema) {
            this.schema = schema;
        }

        /**
         * {@return the outbox table, {@code outbox} by default; parked rows go to {@code <table>_parked}} Bound from
         * the {@code table} property.
         */
        public String getTable() {
            return table;
        }

        /**
         * Sets the {@code table} property.
         *
         * @param table an identifier the store accepts; not {@code null}. Checked at start-up, where a bad one fails
         *              naming the property.
         */
        public void setTable(String table) {
            this.table = table;
        }

        /**
         * {@return the longest any statement of the store may run, lock waits included; 30 seconds by default} Bound
         * from the {@code statement-timeout} property.
         */
        public Duration getStatementTimeout() {
            return statementTimeout;
        }

        /**
         * Sets the {@code statement-timeout} property.
         *
         * @param statementTimeout a positive duration (for example {@code 30s}); checked at start-up
         */
        public void setStatementTimeout(Duration statementTimeout) {
            this.statementTimeout = statementTimeout;
        }

        /**
         * {@return the longest key the publisher accepts, in Unicode code points, or {@code null} (the default) for the
         * store's own (Postgres: none, MySQL: 1024)} Bound from the {@code max-key-length} property.
         */
        public Integer getMaxKeyLength() {
            return maxKeyLength;
        }

        /**
         * Sets the {@code max-key-length} property.
         *
         * @param maxKeyLength at least 1, or {@code null}; checked at start-up
         */
        public void setMaxKeyLength(Integer maxKeyLength) {
            this.maxKeyLength = maxKeyLength;
        }

        /**
         * {@return whether the starter creates missing outbox tables at start-up (idempotently, after the application's
         * Flyway or Liquibase migrations); {@code false} by default} Bound from the {@code create-schema} property.
         */
        public boolean isCreateSchema() {
            return createSchema;
        }

        /**
         * Sets the {@code create-schema} property.
         *
         * @param createSchema {@code true} to create them; {@code false} to ship the DDL with the application's
         *                     migrations
         */
        public void setCreateSchema(boolean createSchema) {
            this.createSchema = createSchema;
        }

        /**
         * {@return how many shards the outbox is split into, each harvested by a leader of its own; 1 (unsharded) by
         * default} Bound from the {@code shards} property.
         */
        public int getShards() {
            return shards;
        }

        /**
         * Sets the {@code shards} property.
         *
         * @param shards 1 to 256, and 1 with the WAL harvest; it must match the table's (the store refuses another
         *               count). Checked at start-up.
         */
        public void setShards(int shards) {
            this.shards = shards;
        }

        /**
         * {@return whether a Postgres leader is woken by {@code LISTEN/NOTIFY} when rows are committed (holding one
         * pooled connection while it leads); {@code true} by default, without effect on MySQL} Bound from the
         * {@code commit-notifications} property.
         */
        public boolean isCommitNotifications() {
            return commitNotifications;
        }

        /**
         * Sets the {@code commit-notifications} property.
         *
         * @param commitNotifications {@code false} to have the leader poll only
         */
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

        /**
         * {@return the JDBC URL of replication connections to the outbox's database, or {@code null} (the default) to
         * harvest the table} Bound from the {@code wal.url} property.
         */
        public String getUrl() {
            return url;
        }

        /**
         * Sets the {@code wal.url} property.
         *
         * @param url a {@code jdbc:postgresql://} URL without a password in it, or {@code null}; checked at start-up
         */
        public void setUrl(String url) {
            this.url = url;
        }

        /**
         * {@return the user of the replication connections, or {@code null} to set none (the driver's own default then
         * applies)} Bound from the {@code wal.username} property.
         */
        public String getUsername() {
            return username;
        }

        /**
         * Sets the {@code wal.username} property.
         *
         * @param username a role with the REPLICATION attribute, or {@code null}
         */
        public void setUsername(String username) {
            this.username = username;
        }

        /**
         * {@return the password of the replication connections, or {@code null} for none; never logged} Bound from the
         * {@code wal.password} property.
         */
        public String getPassword() {
            return password;
        }

        /**
         * Sets the {@code wal.password} property.
         *
         * @param password the password, or {@code null}
         */
        public void setPassword(String password) {
            this.password = password;
        }

        /**
         * {@return the logical replication slot, or {@code null} (the default) for
         * {@code <database>_[<schema>_]<table>_slot}} Bound from the {@code wal.slot} property.
         */
        public String getSlot() {
            return slot;
        }

        /**
         * Sets the {@code wal.slot} property.
         *
         * @param slot a slot name Postgres accepts, or {@code null}; checked at start-up
         */
        public void setSlot(String slot) {
            this.slot = slot;
        }

        /**
         * {@return the publication, or {@code null} (the default) for {@code <table>_publication}} Bound from the
         * {@code wal.publication} property.
         */
        public String getPublication() {
            return publication;
        }

        /**
         * Sets the {@code wal.publication} property.
         *
         * @param publication a publication name Postgres accepts, or {@code null}; checked at start-up
         */
        public void setPublication(String publication) {
            this.publication = publication;
        }

        /**
         * {@return how long a new leader waits for a deposed one to release the slot before it terminates that backend;
         * 30 seconds by default} Bound from the {@code wal.takeover-timeout} property.
         */
        public Duration getTakeoverTimeout() {
            return takeoverTimeout;
        }

        /**
         * Sets the {@code wal.takeover-timeout} property.
         *
         * @param takeoverTimeout a positive duration; checked at start-up
         */
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

        /**
         * {@return the leader-election topic, one per outbox and the same on every instance harvesting it, or
         * {@code null} (the default) for {@code <spring.application.name>-outbox-leader}} Bound from the
         * {@code leader-topic} property.
         */
        public String getLeaderTopic() {
            return leaderTopic;
        }

        /**
         * Sets the {@code leader-topic} property.
         *
         * @param leaderTopic a valid Kafka topic name not starting with {@code __}, or {@code null}; checked at
         *                    start-up
         */
        public void setLeaderTopic(String leaderTopic) {
            this.leaderTopic = leaderTopic;
        }

        /**
         * {@return the leader-election consumer group, or {@code null} (the default) for the leader topic's name} Bound
         * from the {@code leader-group} property.
         */
        public String getLeaderGroup() {
            return leaderGroup;
        }

        /**
         * Sets the {@code leader-group} property.
         *
         * @param leaderGroup a group id (no whitespace, at most 255 characters), or {@code null}; checked at start-up
         */
        public void setLeaderGroup(String leaderGroup) {
            this.leaderGroup = leaderGroup;
        }

        /**
         * {@return whether a missing leader topic is created at start-up; {@code true} by default} Bound from the
         * {@code create-leader-topic} property.
         */
        public boolean isCreateLeaderTopic() {
            return createLeaderTopic;
        }

        /**
         * Sets the {@code create-leader-topic} property.
         *
         * @param createLeaderTopic {@code false} where topics are provisioned: a missing one then fails the start-up
         */
        public void setCreateLeaderTopic(boolean createLeaderTopic) {
            this.createLeaderTopic = createLeaderTopic;
        }

        /**
         * {@return the replication factor of a leader topic the outbox creates, or {@code null} (the default) for the
         * cluster's {@code default.replication.factor}} Bound from the {@code leader-topic-replication-factor}
         * property.
         */
        public Integer getLeaderTopicReplicationFactor() {
            return leaderTopicReplicationFactor;
        }

        /**
         * Sets the {@code leader-topic-replication-factor} property.
         *
         * @param leaderTopicReplicationFactor 1 to 32767, or {@code null}; ignored when the topic exists
         */
        public void setLeaderTopicReplicationFactor(Integer leaderTopicReplicationFactor) {
            this.leaderTopicReplicationFactor = leaderTopicReplicationFactor;
        }

        /**
         * {@return the outbox producer's {@code delivery.timeout.ms}, within which every send completes; 8 seconds by
         * default} Bound from the {@code delivery-timeout} property.
         */
        public Duration getDeliveryTimeout() {
            return deliveryTimeout;
        }

        /**
         * Sets the {@code delivery-timeout} property.
         *
         * @param deliveryTimeout a positive duration of at most 2 minutes (millisecond precision); checked at start-up
         */
        public void setDeliveryTimeout(Duration deliveryTimeout) {
            this.deliveryTimeout = deliveryTimeout;
        }

        /**
         * {@return how long closing the leader-election clients may take; 5 seconds by default} Bound from the
         * {@code close-timeout} property.
         */
        public Duration getCloseTimeout() {
            return closeTimeout;
        }

        /**
         * Sets the {@code close-timeout} property.
         *
         * @param closeTimeout a positive duration; checked at start-up
         */
        public void setCloseTimeout(Duration closeTimeout) {
            this.closeTimeout = closeTimeout;
        }

        /**
         * {@return Kafka producer properties for the outbox producer only, applied over
         * {@code spring.kafka.producer.*}; empty by default, never {@code null} as bound} Bound from the
         * {@code producer-properties} property.
         */
        public Map<String, String> getProducerProperties() {
            return producerProperties;
        }

        /**
         * Sets the {@code producer-properties} property.
         *
         * @param producerProperties the properties by Kafka name; the settings the outbox enforces ({@code acks=all},
         *                           idempotence, ...) cannot be contradicted here either
         */
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

        /**
         * {@return whether this instance runs a dispatcher; {@code true} by default} Bound from the {@code enabled}
         * property.
         */
        public boolean isEnabled() {
            return enabled;
        }

        /**
         * Sets the {@code enabled} property.
         *
         * @param enabled {@code false} on instances that only write messages
         */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /**
         * {@return whether instances elect one leader over Kafka; {@code true} by default} Bound from the
         * {@code leader-election} property.
         */
        public boolean isLeaderElection() {
            return leaderElection;
        }

        /**
         * Sets the {@code leader-election} property.
         *
         * @param leaderElection {@code false} only when exactly one instance runs a dispatcher for this outbox: it then
         *                       always leads
         */
        public void setLeaderElection(boolean leaderElection) {
            this.leaderElection = leaderElection;
        }

        /**
         * {@return the name of the dispatcher's threads and log lines; {@code outbox} by default} Bound from the
         * {@code name} property.
         */
        public String getName() {
            return name;
        }

        /**
         * Sets the {@code name} property.
         *
         * @param name a short name, distinct per outbox in one JVM
         */
        public void setName(String name) {
            this.name = name;
        }

        /**
         * {@return rows marked per mark statement (mark harvest), or the least room worth a read (cursor harvest); 100
         * by default} Bound from the {@code mark-batch-size} property.
         */
        public int getMarkBatchSize() {
            return markBatchSize;
        }

        /**
         * Sets the {@code mark-batch-size} property.
         *
         * @param markBatchSize at least 1 and at most {@code max-in-flight-records}; checked by {@link #toConfig}
         */
        public void setMarkBatchSize(int markBatchSize) {
            this.markBatchSize = markBatchSize;
        }

        /**
         * {@return how many records may be sent and not yet acknowledged and purged; 1000 by default} Bound from the
         * {@code max-in-flight-records} property.
         */
        public int getMaxInFlightRecords() {
            return maxInFlightRecords;
        }

        /**
         * Sets the {@code max-in-flight-records} property.
         *
         * @param maxInFlightRecords at least 1; checked by {@link #toConfig}
         */
        public void setMaxInFlightRecords(int maxInFlightRecords) {
            this.maxInFlightRecords = maxInFlightRecords;
        }

        /**
         * {@return the bytes (value, key and headers) of records read and not yet acknowledged and purged at which the
         * leader stops reading, or {@code null} (the default) for an eighth of the JVM's maximum heap} Bound from the
         * {@code max-in-flight-bytes} property.
         */
        public DataSize getMaxInFlightBytes() {
            return maxInFlightBytes;
        }

        /**
         * Sets the {@code max-in-flight-bytes} property.
         *
         * @param maxInFlightBytes at least 1 byte (for example {@code 64MB}), or {@code null}; checked by
         *                         {@link #toConfig}
         */
        public void setMaxInFlightBytes(DataSize maxInFlightBytes) {
            this.maxInFlightBytes = maxInFlightBytes;
        }

        /**
         * {@return the most ids one purge (or reset) statement removes; 1000 by default} Bound from the
         * {@code purge-batch-size} property.
         */
        public int getPurgeBatchSize() {
            return purgeBatchSize;
        }

        /**
         * Sets the {@code purge-batch-size} property.
         *
         * @param purgeBatchSize at least 1; checked by {@link #toConfig}
         */
        public void setPurgeBatchSize(int purgeBatchSize) {
            this.purgeBatchSize = purgeBatchSize;
        }

        /**
         * {@return the leader-election poll and heartbeat interval, and the longest wait between two reads of an idle
         * outbox; 100 ms by default} Bound from the {@code poll-interval} property.
         */
        public Duration getPollInterval() {
            return pollInterval;
        }

        /**
         * Sets the {@code poll-interval} property.
         *
         * @param pollInterval a positive duration, at most a third of {@code heartbeat-timeout}; checked by
         *                     {@link #toConfig}
         */
        public void setPollInterval(Duration pollInterval) {
            this.pollInterval = pollInterval;
        }

        /**
         * {@return the first wait after a read that found nothing, doubling up to {@code poll-interval}; 10 ms by
         * default} Bound from the {@code mark-backoff} property.
         */
        public Duration getMarkBackoff() {
            return markBackoff;
        }

        /**
         * Sets the {@code mark-backoff} property.
         *
         * @param markBackoff a positive duration, at most {@code poll-interval}; checked by {@link #toConfig}
         */
        public void setMarkBackoff(Duration markBackoff) {
            this.markBackoff = markBackoff;
        }

        /**
         * {@return a leader that sees none of its own heartbeats for this long fences itself; 5 seconds by default}
         * Bound from the {@code heartbeat-timeout} property.
         */
        public Duration getHeartbeatTimeout() {
            return heartbeatTimeout;
        }

        /**
         * Sets the {@code heartbeat-timeout} property.
         *
         * @param heartbeatTimeout a positive duration, at least 3 x {@code poll-interval}; checked by {@link #toConfig}
         */
        public void setHeartbeatTimeout(Duration heartbeatTimeout) {
            this.heartbeatTimeout = heartbeatTimeout;
        }

        /**
         * {@return a send still unacknowledged after this long is reported as stuck; 30 seconds by default} Bound from
         * the {@code queue-timeout} property.
         */
        public Duration getQueueTimeout() {
            return queueTimeout;
        }

        /**
         * Sets the {@code queue-timeout} property.
         *
         * @param queueTimeout a positive duration; checked by {@link #toConfig}
         */
        public void setQueueTimeout(Duration queueTimeout) {
            this.queueTimeout = queueTimeout;
        }

        /**
         * {@return the first wait after a failed store call or delivery, doubling on repeated failures; 500 ms by
         * default} Bound from the {@code io-error-backoff} property.
         */
        public Duration getIoErrorBackoff() {
            return ioErrorBackoff;
        }

        /**
         * Sets the {@code io-error-backoff} property.
         *
         * @param ioErrorBackoff a positive duration, at most {@code max-io-error-backoff}; checked by {@link #toConfig}
         */
        public void setIoErrorBackoff(Duration ioErrorBackoff) {
            this.ioErrorBackoff = ioErrorBackoff;
        }

        /**
         * {@return the cap of the I/O error backoff; 10 seconds by default} Bound from the {@code max-io-error-backoff}
         * property.
         */
        public Duration getMaxIoErrorBackoff() {
            return maxIoErrorBackoff;
        }

        /**
         * Sets the {@code max-io-error-backoff} property.
         *
         * @param maxIoErrorBackoff a positive duration; checked by {@link #toConfig}
         */
        public void setMaxIoErrorBackoff(Duration maxIoErrorBackoff) {
            this.maxIoErrorBackoff = maxIoErrorBackoff;
        }

        /**
         * {@return the failed deliveries after which a record is parked; 10 by default} Bound from the
         * {@code max-attempts} property.
         */
        public int getMaxAttempts() {
            return maxAttempts;
        }

        /**
         * Sets the {@code max-attempts} property.
         *
         * @param maxAttempts at least 1; checked by {@link #toConfig}
         */
        public void setMaxAttempts(int maxAttempts) {
            this.maxAttempts = maxAttempts;
        }

        /**
         * {@return how long shutdown, and a revocation of leadership, waits for the records in flight; 10 seconds by
         * default} Bound from the {@code drain-timeout} property.
         */
        public Duration getDrainTimeout() {
            return drainTimeout;
        }

        /**
         * Sets the {@code drain-timeout} property.
         *
         * @param drainTimeout a positive duration; checked by {@link #toConfig}
         */
        public void setDrainTimeout(Duration drainTimeout) {
            this.drainTimeout = drainTimeout;
        }

        /**
         * {@return the period of throughput readings and of the leader's outbox samples (backlog, lag); 5 seconds by
         * default} Bound from the {@code metrics-interval} property.
         */
        public Duration getMetricsInterval() {
            return metricsInterval;
        }

        /**
         * Sets the {@code metrics-interval} property.
         *
         * @param metricsInterval a positive duration; checked by {@link #toConfig}
         */
        public void setMetricsInterval(Duration metricsInterval) {
            this.metricsInterval = metricsInterval;
        }

        /**
         * {@return how the leader reads the outbox, {@code CURSOR} (the default: read, send, delete on acknowledgement)
         * or {@code MARK}} Bound from the {@code harvest} property.
         */
        public DispatcherConfig.Harvest getHarvest() {
            return harvest;
        }

        /**
         * Sets the {@code harvest} property.
         *
         * @param harvest the harvest; not {@code null} (checked by {@link #toConfig})
         */
        public void setHarvest(DispatcherConfig.Harvest harvest) {
            this.harvest = harvest;
        }

        /**
         * {@return cursor harvest only, how often a caught-up leader reads the table from its head again; 30 seconds by
         * default} Bound from the {@code rescan-interval} property.
         */
        public Duration getRescanInterval() {
            return rescanInterval;
        }

        /**
         * Sets the {@code rescan-interval} property.
         *
         * @param rescanInterval a positive duration; checked by {@link #toConfig}
         */
        public void setRescanInterval(Duration rescanInterval) {
            this.rescanInterval = rescanInterval;
        }

        /**
         * {@return what happens to a key once one of its records is parked, {@code MOVE_ON} (the default: its later
         * records flow) or {@code HOLD_KEY} (they wait until the parked rows are replayed or discarded)} Bound from the
         * {@code after-park} property.
         */
        public DispatcherConfig.AfterPark getAfterPark() {
            return afterPark;
        }

        /**
         * Sets the {@code after-park} property.
         *
         * @param afterPark the policy; not {@code null} (checked by {@link #toConfig})
         */
        public void setAfterPark(DispatcherConfig.AfterPark afterPark) {
            this.afterPark = afterPark;
        }

        /**
         * The {@link DispatcherConfig} of these settings.
         *
         * @param prefix the settings' property prefix, e.g. {@code outbox.dispatcher}: a bad value is reported as
         *               {@code <prefix>.<setting>}
         * @return a new configuration with every setting of this object (the default heap share where
         *         {@code max-in-flight-bytes} is not set)
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

        /**
         * {@return whether publishing requires an active Spring transaction on the outbox's DataSource; {@code true} by
         * default} Bound from the {@code require-transaction} property.
         */
        public boolean isRequireTransaction() {
            return requireTransaction;
        }

        /**
         * Sets the {@code require-transaction} property.
         *
         * @param requireTransaction {@code false} to let a publish outside a transaction be written and committed on
         *                           its own
         */
        public void setRequireTransaction(boolean requireTransaction) {
            this.requireTransaction = requireTransaction;
        }
    }
}
