package dev.outbox.spring;

import org.springframework.boot.context.properties.NestedConfigurationProperty;

import java.time.Duration;

/** The outbox table, in the application's {@code DataSource}. */
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
    /** The Postgres WAL harvest: set {@code url} to harvest the write-ahead log instead of the table. */
    @NestedConfigurationProperty
    private final OutboxWalProperties wal = new OutboxWalProperties();

    public OutboxWalProperties getWal() {
        return wal;
    }

    public OutboxProperties.StoreType getType() {
        return type;
    }

    public void setType(OutboxProperties.StoreType type) {
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
