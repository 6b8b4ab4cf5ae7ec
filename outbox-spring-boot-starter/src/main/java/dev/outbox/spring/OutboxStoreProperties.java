package dev.outbox.spring;

import org.springframework.boot.context.properties.NestedConfigurationProperty;

import java.time.Duration;

/**
 * The outbox table, in the application's {@code DataSource}: the starter's {@code outbox.store.*} properties (the
 * sidecar's {@code sidecar.outboxes.<name>.store.*}, with the same keys and defaults). The keys named below are
 * relative to that prefix.
 *
 * <p>A mutable JavaBean for Spring's binder; not thread-safe. Read once, at start-up.
 */
public final class OutboxStoreProperties {
    /** Store implementation; detected from the DataSource's JDBC metadata when not set. */
    private OutboxProperties.StoreType type;
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
    /**
     * Storage fencing: a new leader takes the outbox's epoch in the leader table ("<table>_leader"), and every write
     * of a leader checks it, so that a deposed leader's late writes change nothing. Turn it off only for a schema
     * without the leader table.
     */
    private boolean fencing = true;
    /**
     * The per-key sequence: the publisher adds to every message the header "outbox-key-seq", its number among the
     * messages of its topic and key (1, 2, 3, ...), from a counter table "<table>_key_seq" ({@code create-schema}
     * creates it, or the migrations in {@code …/versioned/<db>-key-sequence}). Writers of one key then wait for each
     * other's commit. Off by default.
     */
    private boolean keySequence;
    /**
     * "Not before" (docs/delivery-options.md): the publisher accepts delayed messages ({@code deliverAt},
     * {@code deliverAfter}), written into "<table>_scheduled" ({@code create-schema} creates it, or the migrations in
     * {@code …/versioned/<db>-scheduling}) and moved into the outbox by the leading dispatcher once due, on the
     * database's clock. Off by default: a delayed message is refused. Not with the WAL harvest.
     */
    private boolean scheduling;
    /**
     * With {@code scheduling}: whether a waiting (delayed) message holds its key, that is, whether the later
     * messages of its topic and key wait behind it, keeping the key's order (the default, {@code true}); with
     * {@code false} a message without a time goes straight into the outbox (no query of "<table>_scheduled") and each
     * delayed one goes at its own time. {@code false} without {@code scheduling} stops start-up.
     */
    private boolean scheduledHoldsKey = true;
    /** Idempotency keys: off unless {@code idempotency.retention} is set. */
    @NestedConfigurationProperty
    private final OutboxIdempotencyProperties idempotency = new OutboxIdempotencyProperties();
    /**
     * MySQL, MariaDB and H2: how long the harvest rechecks an id it passed without seeing its row (a transaction not
     * yet committed, or rolled back) before taking it to have rolled back; set it above the longest transaction
     * that writes to the outbox. The store's default (60 s) when not set. Not for Postgres, whose harvest reads
     * transaction ids instead.
     */
    private Duration lateCommitWindow;
    /** The Postgres WAL harvest: set {@code url} to harvest the write-ahead log instead of the table. */
    @NestedConfigurationProperty
    private final OutboxWalProperties wal = new OutboxWalProperties();

    /**
     * {@return the {@code wal.*} settings of the Postgres WAL harvest, off while their {@code url} is {@code null};
     * never {@code null}, the same object for the bean's life}
     */
    public OutboxWalProperties getWal() {
        return wal;
    }

    /**
     * {@return the store implementation, or {@code null} (the default) to detect it from the DataSource's JDBC
     * metadata} Bound from the {@code type} property.
     */
    public OutboxProperties.StoreType getType() {
        return type;
    }

    /**
     * Sets the {@code type} property.
     *
     * @param type {@code POSTGRES} or {@code MYSQL} (bound from {@code postgres} or {@code mysql}, MariaDB included),
     *             or {@code null} to detect it
     */
    public void setType(OutboxProperties.StoreType type) {
        this.type = type;
    }

    /**
     * {@return the schema (Postgres) or database (MySQL) of the outbox tables, or {@code null} (the default) for the
     * connection's default} Bound from the {@code schema} property.
     */
    public String getSchema() {
        return schema;
    }

    /**
     * Sets the {@code schema} property.
     *
     * @param schema an identifier the store accepts, or {@code null}; checked at start-up, where a bad one fails naming
     *               the property
     */
    public void setSchema(String schema) {
        this.schema = schema;
    }

    /**
     * {@return the outbox table, {@code outbox} by default; parked rows go to {@code <table>_parked}} Bound from the
     * {@code table} property.
     */
    public String getTable() {
        return table;
    }

    /**
     * Sets the {@code table} property.
     *
     * @param table an identifier the store accepts; not {@code null}. Checked at start-up, where a bad one fails naming
     *              the property.
     */
    public void setTable(String table) {
        this.table = table;
    }

    /**
     * {@return the longest any statement of the store may run, lock waits included; 30 seconds by default} Bound from
     * the {@code statement-timeout} property.
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
     * @param createSchema {@code true} to create them; {@code false} to ship the DDL with the application's migrations
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
     * @param shards 1 to 256, and 1 with the WAL harvest; it must match the table's (the store refuses another count).
     *               Checked at start-up.
     */
    public void setShards(int shards) {
        this.shards = shards;
    }

    /**
     * {@return whether a Postgres leader is woken by {@code LISTEN/NOTIFY} when rows are committed (holding one pooled
     * connection while it leads); {@code true} by default, without effect on MySQL} Bound from the
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

    /**
     * {@return whether the leader's writes are fenced by the epoch in the leader table; {@code true} by default}
     * Bound from the {@code fencing} property.
     */
    public boolean isFencing() {
        return fencing;
    }

    /**
     * Sets the {@code fencing} property.
     *
     * @param fencing {@code false} to write without the epoch check (a schema without the leader table)
     */
    public void setFencing(boolean fencing) {
        this.fencing = fencing;
    }

    /**
     * {@return whether the publisher numbers messages per topic and key; {@code false} by default} Bound from the
     * {@code key-sequence} property.
     */
    public boolean isKeySequence() {
        return keySequence;
    }

    /**
     * Sets the {@code key-sequence} property.
     *
     * @param keySequence {@code true} to add the header "outbox-key-seq" to every message (needs the counter table)
     */
    public void setKeySequence(boolean keySequence) {
        this.keySequence = keySequence;
    }

    /**
     * {@return whether the publisher accepts delayed messages ("not before"); {@code false} by default} Bound from
     * the {@code scheduling} property.
     */
    public boolean isScheduling() {
        return scheduling;
    }

    /**
     * Sets the {@code scheduling} property.
     *
     * @param scheduling {@code true} to accept delayed messages (needs the table {@code <table>_scheduled});
     *                   refused with the WAL harvest, at start-up
     */
    public void setScheduling(boolean scheduling) {
        this.scheduling = scheduling;
    }

    /**
     * {@return whether a waiting message holds its key's later messages; {@code true} by default} Bound from the
     * {@code scheduled-holds-key} property.
     */
    public boolean isScheduledHoldsKey() {
        return scheduledHoldsKey;
    }

    /**
     * Sets the {@code scheduled-holds-key} property.
     *
     * @param scheduledHoldsKey {@code false} to let a key's messages without a time pass its waiting ones; refused
     *                          without {@code scheduling}, at start-up
     */
    public void setScheduledHoldsKey(boolean scheduledHoldsKey) {
        this.scheduledHoldsKey = scheduledHoldsKey;
    }

    /**
     * {@return the {@code idempotency.*} settings, off while their {@code retention} is {@code null}; never
     * {@code null}, the same object for the bean's life}
     */
    public OutboxIdempotencyProperties getIdempotency() {
        return idempotency;
    }

    /**
     * {@return the late-commit window of the MySQL, MariaDB and H2 harvest, or {@code null} (the default) for the
     * store's own, 60 s} Bound from the {@code late-commit-window} property.
     */
    public Duration getLateCommitWindow() {
        return lateCommitWindow;
    }

    /**
     * Sets the {@code late-commit-window} property.
     *
     * @param lateCommitWindow 1 ms to a day, above the longest transaction writing to the outbox, or {@code null};
     *                         checked at start-up, and refused for a Postgres store
     */
    public void setLateCommitWindow(Duration lateCommitWindow) {
        this.lateCommitWindow = lateCommitWindow;
    }
}
