package dev.outbox.store.sql;

import dev.outbox.MessageDecorator;
import dev.outbox.spi.SqlStoreSettings;
import org.jdbi.v3.core.Jdbi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

/**
 * The settings every SQL store has. Not thread-safe; {@code build()} returns an immutable store. Every setter
 * rejects a bad value at once, naming it.
 *
 * @param <B> the store's own builder
 * @param <S> the store
 */
@SuppressWarnings("unchecked") // B is the concrete builder itself
public abstract class SqlStoreBuilder<B extends SqlStoreBuilder<B, S>, S extends SqlStore> {
    final Jdbi jdbi;
    final SqlDialect dialect;
    final Function<B, S> store;
    String schema;
    String table = SqlStore.DEFAULT_TABLE;
    Duration statementTimeout = SqlStore.DEFAULT_STATEMENT_TIMEOUT;
    int maxKeyLength;
    final List<MessageDecorator> decorators = new ArrayList<>();
    boolean fencing = true;
    int shards = 1;
    boolean keySequence;
    Duration idempotencyRetention;
    OnDuplicate onDuplicate = OnDuplicate.SKIP;
    boolean scheduling;
    boolean scheduledHoldsKey = true;

    /**
     * @param jdbi    where the store takes its connections
     * @param dialect what the store's database differs in
     * @param store   builds the store from this builder
     */
    SqlStoreBuilder(Jdbi jdbi, SqlDialect dialect, Function<B, S> store) {
        this.jdbi = Objects.requireNonNull(jdbi, "jdbi must not be null");
        this.dialect = Objects.requireNonNull(dialect, "dialect must not be null");
        this.store = Objects.requireNonNull(store, "store must not be null");
        this.maxKeyLength = dialect.defaultMaxKeyLength();
    }

    /**
     * The schema (MySQL: the database) of the outbox tables. Default: none, so the tables are found through
     * the connection's defaults (Postgres' {@code search_path}, MySQL's current database). Lower-case letters,
     * digits and underscores, at most the database's identifier limit (63 characters in Postgres, 64 in
     * MySQL).
     *
     * @param schema the schema's bare name
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is null, empty, too long or not a valid name
     */
    public final B schema(String schema) {
        this.schema = dialect.tableNames().validateSchema(schema);
        return (B) this;
    }

    /**
     * The outbox table's name; the parked rows go to a table of the same name with {@code _parked} appended.
     * Default {@value SqlStore#DEFAULT_TABLE}. Lower-case letters, digits and underscores, short enough for the
     * parked table's name to fit the database's identifier limit (at most 56 characters in Postgres, 57 in
     * MySQL).
     *
     * @param table the outbox table's bare name
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is null, empty, too long or not a valid name
     */
    public final B table(String table) {
        this.table = dialect.tableNames().validateTable(table);
        return (B) this;
    }

    /**
     * The longest any statement (or lock wait) of a store call may take; default 30 s, at least 1 ms. Where it
     * is applied as a JDBC query timeout, it is rounded up to whole seconds. Each call's connection also gets a
     * network timeout of twice this.
     *
     * @param statementTimeout the timeout; not null, at least 1 ms, at most {@code Integer.MAX_VALUE / 2} ms (about
     *                         12 days)
     * @return this builder
     * @throws NullPointerException     if {@code statementTimeout} is null
     * @throws IllegalArgumentException naming the value if it is out of range
     */
    public final B statementTimeout(Duration statementTimeout) {
        this.statementTimeout = SqlStoreSettings.statementTimeout(statementTimeout);
        return (B) this;
    }

    /**
     * The longest key, in characters (Unicode code points: a character outside the Basic Multilingual Plane
     * counts once), that the publisher writes and that a marked row may have (a longer one, written by plain
     * SQL, is rejected so that the dispatcher parks it). Set it to what your consumers accept; the store's
     * documentation gives its default.
     *
     * @param maxKeyLength the longest key in code points, at least 1
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is below 1
     */
    public final B maxKeyLength(int maxKeyLength) {
        this.maxKeyLength = SqlStoreSettings.maxKeyLength(maxKeyLength);
        return (B) this;
    }

    /**
     * Adds a decorator that the publisher applies to every message before writing it (after the decorators
     * added before it): to add or change headers, or to reject a message; see {@link MessageDecorator}. None by
     * default.
     *
     * @param decorator the decorator; not null
     * @return this builder
     * @throws NullPointerException if {@code decorator} is null
     */
    public final B decorator(MessageDecorator decorator) {
        decorators.add(Objects.requireNonNull(decorator, "decorator must not be null"));
        return (B) this;
    }

    /**
     * Storage fencing: whether the dispatcher takes the outbox's leader epoch in the database when it becomes
     * leader, and every purge, failure record, park and mark of a leader checks that epoch in the same statement
     * (Postgres) or transaction (MySQL), so that a deposed leader's writes (a process paused past its lease, or
     * cut off, that resumes after a successor took over) change nothing. Default on: the check costs little (see
     * the README's "Failure modes"). Needs the leader table, {@code <table>_leader}, which {@code createSchema()}
     * and the shipped migrations create; turn it off only for a schema without it.
     *
     * @param fencing true to fence the leader's writes by the epoch, false not to
     * @return this builder
     */
    public final B fencing(boolean fencing) {
        this.fencing = fencing;
        return (B) this;
    }

    /**
     * How many shards the outbox is split into (see the README's "Sharded harvest"): each row's shard is
     * {@link dev.outbox.OutboxShards#shardOf} of its key, computed by the table (a generated column that
     * {@link SqlStore#schemaSql()} adds, indexed with the id), and the dispatcher harvests each shard through
     * {@link SqlStore#shard} with a leader and an epoch of its own. Default 1: today's table and statements. The
     * store refuses a table made for another count ({@link SqlStore#checkShards()}).
     *
     * @param shards the shard count
     * @return this builder
     * @throws IllegalArgumentException naming the count if it is not between 1 and
     *                                  {@link dev.outbox.OutboxShards#MAX_SHARDS}
     */
    public final B shards(int shards) {
        this.shards = dev.outbox.OutboxShards.checkCount(shards);
        return (B) this;
    }

    /**
     * The per-key sequence (see {@link dev.outbox.KeySequence}): whether the publisher adds to every message the
     * header {@value dev.outbox.KeySequence#SEQUENCE}, its number among the messages of its topic and key, 1, 2, 3,
     * … with no hole, so that a consumer can tell a missing or reordered record. Default off.
     *
     * <p>With it on, each publish call adds to a counter per distinct (topic, key) of its messages before it writes
     * them (Postgres: one statement for all of them; MySQL, MariaDB and H2: one upsert per key), on the counter table
     * {@code <table>_key_seq} (its own DDL, {@link SqlStore#keySequenceSchemaSql()}, which {@code createSchema()}
     * applies when this is on), and the counter row stays locked until the writer's
     * transaction ends: writers of one key wait for each other's commit. How that keeps a key's numbers in its
     * delivery order is told in {@link SqlKeySequence}. A message that carries the header already is refused. The
     * table name must then leave room for {@code _key_seq} within the database's identifier limit.
     *
     * @param keySequence true to number every message per (topic, key), false not to
     * @return this builder
     */
    public final B keySequence(boolean keySequence) {
        this.keySequence = keySequence;
        return (B) this;
    }

    /**
     * Idempotency keys ({@link dev.outbox.OutboxMessage#idempotencyKey()}): with them on, a message whose idempotency
     * key was written before, within {@code retention}, is not written again ({@link #onDuplicate}). Default off: a
     * message with an idempotency key is then refused, naming it.
     *
     * <p>The database decides: each publish call first claims its messages' keys in the table
     * {@code <table>_idempotency} (its own DDL, {@link SqlStore#idempotencySchemaSql()}, which {@code createSchema()}
     * applies when this is on), one upsert under the key's unique index (Postgres: one statement for all the keys of
     * the call; MySQL, MariaDB and H2: one per key), then writes the rows, in the writer's transaction; two writers
     * of one key wait for each other there, and exactly one of them writes it (see {@link SqlIdempotency}). The
     * retention counts from the write of the key, on the database's clock, not from the delivery; the leading
     * dispatcher deletes expired entries every minute ({@link dev.outbox.spi.IdempotencyKeys}). The table name must
     * leave room for {@code _idempotency} within the database's identifier limit.
     *
     * @param retention how long a key is kept from being written again, from its write; positive, at most 100 years
     * @return this builder
     * @throws IllegalArgumentException naming the value if it is null, zero, negative or longer than 100 years
     */
    public final B idempotencyKeys(Duration retention) {
        this.idempotencyRetention = SqlIdempotency.checkRetention(retention);
        return (B) this;
    }

    /**
     * What a message whose idempotency key was written before, within the retention, does
     * ({@link #idempotencyKeys}): {@link OnDuplicate#SKIP} (the default) drops it and writes the others of the call;
     * {@link OnDuplicate#FAIL} throws {@link dev.outbox.DuplicateMessageException} having written nothing of the call.
     *
     * @param onDuplicate skip or fail; not null
     * @return this builder
     * @throws NullPointerException if {@code onDuplicate} is null
     */
    public final B onDuplicate(OnDuplicate onDuplicate) {
        this.onDuplicate = Objects.requireNonNull(onDuplicate, "onDuplicate must not be null");
        return (B) this;
    }

    /**
     * "Not before" ({@link dev.outbox.OutboxMessage#deliverAt()}, {@link dev.outbox.OutboxMessage#deliverAfter()}):
     * whether the publisher accepts delayed messages, writing them into {@code <table>_scheduled} (its own DDL,
     * {@link SqlStore#schedulingSchemaSql()}, which {@code createSchema()} applies when this is on) with their due
     * time on the database's clock, and the store moves the due ones into the outbox
     * ({@link dev.outbox.spi.ScheduledMessages}, called by the leading dispatcher). Default off: a delayed message is
     * then refused, naming it.
     *
     * <p>With it on, by default a message without a time whose (topic, key) has a message waiting waits behind it
     * (the key is held, so its order is kept): each publish call runs one {@code EXISTS} query per distinct (topic,
     * key) of its messages; {@link #scheduledHoldsKey scheduledHoldsKey(false)} turns that off. See
     * {@link SqlScheduling}. The table name must leave room for {@code _scheduled} within the database's identifier
     * limit.
     *
     * @param scheduling true to accept delayed messages, false to refuse them
     * @return this builder
     */
    public final B scheduling(boolean scheduling) {
        this.scheduling = scheduling;
        return (B) this;
    }

    /**
     * With {@link #scheduling scheduling(true)}: whether a waiting (delayed) message holds its key, that is, whether
     * the later messages of its topic and key wait behind it. Default {@code true}.
     * <ul>
     *   <li>{@code true}: a message without a time whose (topic, key) has a message waiting waits behind it, and a
     *       release never moves a message before an earlier waiting one of its key: the key's messages are delivered
     *       in the order they were written, delayed or not. Each publish call runs one {@code EXISTS} query per
     *       distinct (topic, key) of its messages.</li>
     *   <li>{@code false}: a message without a time always goes straight into the outbox (no query of the scheduled
     *       table: the writers cost what they cost without scheduling), and a release moves every due message at its
     *       own time, whatever waits before it. A key's order then holds only among its messages without a time: a
     *       message written after a delayed one of its key goes out first, and of two delayed ones the first due
     *       goes first. For delays that are timers (a reminder, a retry tomorrow) rather than a step of a key's
     *       history.</li>
     * </ul>
     * Named for what the waiting message does to its key; {@code false} without {@code scheduling(true)} is refused
     * by {@link #build()}.
     *
     * @param scheduledHoldsKey true to hold a key behind its waiting messages, false to let the key's other messages
     *                          pass them
     * @return this builder
     */
    public final B scheduledHoldsKey(boolean scheduledHoldsKey) {
        this.scheduledHoldsKey = scheduledHoldsKey;
        return (B) this;
    }

    /**
     * The store, immutable and thread-safe.
     *
     * @return a new store with the settings as set so far
     * @throws IllegalStateException if the settings do not fit together, such as a sharded H2 store, or
     *                               {@code scheduledHoldsKey(false)} without {@code scheduling(true)}
     */
    public final S build() {
        if (!scheduledHoldsKey && !scheduling) {
            throw new IllegalStateException("scheduledHoldsKey(false) needs scheduling(true): without scheduling no"
                    + " message waits, so there is no key to hold or not; set scheduling(true), or remove"
                    + " scheduledHoldsKey(false)");
        }
        return store.apply((B) this);
    }
}
