package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxShards;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.RowChecks;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.testkit.StoreFaults.Operation;

import java.time.Clock;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;

/**
 * A {@link Store} held in memory, with the exact mark–purge/reset semantics of the port, for tests of the
 * dispatcher and as the reference that {@link StoreContract} is checked against.
 *
 * <ul>
 *   <li>Ids come from a sequence and are taken when a message is written, not when it commits: a
 *       {@link Transaction} from {@link #begin()} that commits late leaves its lower ids behind higher committed
 *       ones, as a database sequence does. Rolled-back ids are gaps.</li>
 *   <li>{@link #publisher()} commits each call at once and ignores its connection.</li>
 *   <li>{@link #insertMalformed} writes a row that cannot be read as a message; {@code mark} returns it in
 *       {@link MarkResult#rejected()}.</li>
 *   <li>{@link #setFaults} plugs in a {@link StoreFaults} plan that fails calls before or after their change,
 *       or delays them.</li>
 *   <li>{@link #rows()}, {@link #size()}, {@link #parkedRows()} and {@link #calls} let a test look inside.</li>
 *   <li>{@link #setFencing(boolean) With fencing on} (off by default) it models storage fencing as the SQL stores
 *       do it: {@link #acquireEpoch()} increments the outbox's epoch, and the writes of a {@link #fencedBy} view
 *       check it under the same lock as their change, so a write of an older epoch changes nothing and throws
 *       {@link StoreFencedException}; {@link #fencedWrites()} counts them.</li>
 * </ul>
 *
 * <p>Thread-safe: every call is atomic under one lock (injected delays are spent outside it).
 */
public final class InMemoryStore implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding, ParkedRecords, ParkedKeys, Gauges {

    /**
     * A row of the outbox as a test sees it, a snapshot.
     *
     * @param id        the row's id
     * @param topic     its topic
     * @param key       its key
     * @param leaderId  the leader id that marked it, null if unmarked
     * @param attempts  failed deliveries recorded so far
     * @param malformed whether the row cannot be read as a message (see {@link #insertMalformed})
     * @param nextAttemptAt the earliest time of its next delivery attempt ({@link #retryLater}), null for none
     */
    public record Row(long id, String topic, String key, UUID leaderId, int attempts, boolean malformed,
                      Instant nextAttemptAt) {
        /**
         * A row without a next attempt time: never failed, or reset. For expected values in assertions.
         *
         * @param id        the row's id
         * @param topic     its topic
         * @param key       its key, {@code null} for none
         * @param leaderId  the leader id that marked it, {@code null} if unmarked
         * @param attempts  failed deliveries recorded so far
         * @param malformed whether the row cannot be read as a message
         */
        public Row(long id, String topic, String key, UUID leaderId, int attempts, boolean malformed) {
            this(id, topic, key, leaderId, attempts, malformed, null);
        }
    }

    /** The one lock every room of this store guards its state with. */
    private final Object lock = new Object();
    /** The fault plan and the count of calls. */
    private final InMemoryFaultGate gate = new InMemoryFaultGate();
    /** Fencing, the epochs and the shards. */
    final InMemoryFences fences = new InMemoryFences(lock, gate);
    /** The committed rows, their ids and transactions. */
    private final InMemoryRows table;
    /** Mark, read and settle. */
    final InMemoryHarvest harvest;
    /** The parked rows. */
    final InMemoryParkedArea parkedArea;
    /** Backlog, parked count, oldest row. */
    final InMemoryGauges gauges;
    /** Commit notifications and their watches. */
    private final InMemoryCommitSignals signals = new InMemoryCommitSignals();
    private final Publisher publisher;

    /** An empty store whose timestamps come from the system clock. */
    public InMemoryStore() {
        this(Clock.systemUTC());
    }

    /**
     * An empty store whose creation and parking times come from {@code clock}.
     *
     * @param clock the source of rows' creation times, parking times and the times {@code retryLater} compares
     *              against; a fixed or hand-moved clock makes them predictable. Not {@code null}.
     * @throws NullPointerException if {@code clock} is {@code null}
     */
    public InMemoryStore(Clock clock) {
        this(clock, Integer.MAX_VALUE);
    }

    /**
     * An empty store whose creation and parking times come from {@code clock} and whose longest key is
     * {@code maxKeyLength} code points, like an SQL store's {@code maxKeyLength}: the publisher rejects a longer key
     * and {@code mark} rejects a row with one (see {@link #insertRow}).
     *
     * @param clock        the source of rows' creation and parking times; not {@code null}
     * @param maxKeyLength the longest key, in Unicode code points, at least 1; {@link Integer#MAX_VALUE} for no
     *                     limit
     * @throws NullPointerException     if {@code clock} is {@code null}
     * @throws IllegalArgumentException if {@code maxKeyLength} is less than 1
     */
    public InMemoryStore(Clock clock, int maxKeyLength) {
        Objects.requireNonNull(clock, "clock");
        if (maxKeyLength < 1) {
            throw new IllegalArgumentException("maxKeyLength must be at least 1: " + maxKeyLength);
        }
        this.table = new InMemoryRows(lock, clock, maxKeyLength);
        this.harvest = new InMemoryHarvest(lock, table, fences, gate);
        this.parkedArea = new InMemoryParkedArea(lock, clock, table, fences, gate);
        this.gauges = new InMemoryGauges(lock, table, parkedArea, fences, gate);
        this.publisher = new InMemoryPublisher(table, signals);
    }

    /**
     * Turns storage fencing on or off (off by default): with it on, the store has {@link StorageFencing} and the
     * writes of {@link #fencedBy} views check the epoch. Set it before a dispatcher starts on this store.
     *
     * @param on {@code true} to model a store with storage fencing (as the SQL stores with a lease table)
     */
    public void setFencing(boolean on) {
        fences.setFencing(on);
    }

    /**
     * Splits this store into {@code count} shards ({@link dev.outbox.OutboxShards#shardOf} of each row's key), as a
     * sharded SQL store's table is. Set it before the store is used; 1 (unsharded) by default.
     *
     * @param count the number of shards; every shard's epoch starts again at 0
     * @throws IllegalArgumentException if the count is not between 1 and {@link dev.outbox.OutboxShards#MAX_SHARDS}
     */
    public void setShards(int count) {
        OutboxShards.checkCount(count);
        synchronized (lock) {
            fences.setShards(count);
            table.forgetShards();
        }
    }

    /**
     * {@inheritDoc} {@link StorageFencing} only with {@link #setFencing fencing} on, {@link CommitSignals} only with
     * {@link #commitNotifications} on; every other capability always.
     */
    @Override
    public <T> Optional<T> capability(Class<T> type) {
        return has(type) ? Store.super.capability(type) : Optional.empty();
    }

    /** Whether this store (and its views) has the capability {@code type} now. */
    boolean has(Class<?> type) {
        return !(type == StorageFencing.class && !fences.fencing()
                || type == CommitSignals.class && !signals.on());
    }

    @Override
    public int shards() {
        return fences.shards();
    }

    @Override
    public Store shard(int index) {
        OutboxShards.checkIndex(index, fences.shards());
        return fences.shards() == 1 ? this : new InMemoryStoreView(this, new InMemoryFences.Scope(index,
                InMemoryFences.UNFENCED));
    }

    /**
     * Shard {@code shard}'s leader epoch: 0 until its first {@code acquireEpoch()}.
     *
     * @param shard the shard, from 0 to {@link #shards()} - 1
     * @return the epoch, which each {@code acquireEpoch()} of the shard's view increments
     * @throws IllegalArgumentException if {@code shard} is out of range
     */
    public long epoch(int shard) {
        return fences.epoch(shard);
    }

    /**
     * Writes refused as fenced so far.
     *
     * @return the number of calls of {@link #fencedBy} views (and shard views) refused because their epoch was no
     *         longer current, across all shards
     */
    public long fencedWrites() {
        return fences.fencedWrites();
    }

    /**
     * The outbox's leader epoch: 0 until the first {@link #acquireEpoch()}.
     *
     * @return the unsharded outbox's epoch, which each {@link #acquireEpoch()} increments (see
     *         {@link #epoch(int)} for a shard's)
     */
    public long epoch() {
        return fences.epoch();
    }

    /**
     * Models a database that tells the leader of commits (Postgres' {@code NOTIFY}): when on,
     * {@link #watchCommits} subscribes, and every committed write (a publisher call, a {@link Transaction#commit()})
     * wakes the subscribers after it committed. Off by default: {@code watchCommits} returns null and the dispatcher
     * polls, as the simulation expects.
     *
     * @param on {@code true} to let {@code watchCommits} subscribe; watches already open stay open when it is
     *           turned off
     */
    public void commitNotifications(boolean on) {
        signals.setOn(on);
    }

    @Override
    public CommitSignals.CommitWatch watchCommits(Runnable wakeUp) {
        return signals.watch(wakeUp);
    }

    /**
     * How many commit watches are open now ({@link #watchCommits}).
     *
     * @return the watches subscribed and not yet closed, for tests that check the dispatcher closes its own
     */
    public int commitWatches() {
        return signals.size();
    }

    /**
     * Replaces the fault plan; {@link StoreFaults#none()} heals the store. Takes effect for the next call.
     *
     * @param faults the plan, asked once per call of the port (and of its views); not {@code null}
     * @throws NullPointerException if {@code faults} is {@code null}
     */
    public void setFaults(StoreFaults faults) {
        gate.setFaults(faults);
    }

    // ---- writing ------------------------------------------------------------------------------------------

    /**
     * A publisher that commits every call at once, atomically (all messages of a call or none). It ignores the
     * connection, which may be null: an in-memory store has no database transaction to join. Use
     * {@link #begin()} to model an application transaction.
     */
    @Override
    public Publisher publisher() {
        return publisher;
    }

    /**
     * Begins an application transaction: its messages take ids at once and become visible on commit.
     *
     * @return a new open transaction; until it ends, {@code read} reports it as running (a gap below it may
     *         still fill)
     */
    public Transaction begin() {
        return new Transaction();
    }

    /**
     * Writes and commits a row that cannot be read as a message, as another program writing the table with
     * plain SQL might (for SQL stores, e.g. header arrays of different lengths). {@code mark} marks it like any
     * row and returns it in {@link MarkResult#rejected()} with {@code reason}.
     *
     * @param topic  the topic as stored, may be null or invalid
     * @param key    the key as stored, may be null
     * @param reason what is wrong with it, reported as the rejection reason
     * @return the row's id
     */
    public long insertMalformed(String topic, String key, String reason) {
        Objects.requireNonNull(reason, "reason");
        return table.insertMalformed(topic, key, reason);
    }

    /**
     * Writes and commits a row with the given topic, key and attempts, the value {@code "x"} and no headers,
     * bypassing the publisher's checks, as another program writing the table with plain SQL might. {@code mark}
     * checks it like every row ({@link RowChecks#check}): an invalid topic, a key longer than {@code maxKeyLength}
     * or negative attempts make it a rejected row.
     *
     * @param topic    the topic as stored, unchecked (may be {@code null} or invalid)
     * @param key      the key as stored, unchecked (may be {@code null} or too long)
     * @param attempts the failed deliveries recorded, unchecked (may be negative)
     * @return the row's id
     */
    public long insertRow(String topic, String key, int attempts) {
        return table.insertRow(topic, key, attempts);
    }

    // ---- the port: harvest, fencing, parked area and gauges, each in its room --------------------------------

    /**
     * {@inheritDoc}
     *
     * <p>An injected failure after the change leaves the rows marked with {@code leaderId}: the caller did not
     * get them and a later mark with the same id will not return them again.
     */
    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        return harvest.mark(leaderId, limit, InMemoryFences.WHOLE);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Transactions are ordered as on Postgres: a {@link Transaction} takes an ordinal before its first id; the
     * gap token is the next ordinal, the horizon the oldest ordinal of a transaction still open (or the next one).
     * An injected failure after the read loses its answer; a read changes nothing either way.
     */
    @Override
    public ReadResult read(long after, List<IdRange> recheck, int limit) {
        return harvest.read(after, recheck, limit, -1);
    }

    @Override
    public void purge(Collection<Long> ids) {
        harvest.purge(ids, InMemoryFences.WHOLE);
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        harvest.reset(leaderId, ids, InMemoryFences.WHOLE);
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        harvest.retryLater(nextAttempts, InMemoryFences.WHOLE);
    }

    @Override
    public void park(Map<Long, String> reasons) {
        parkedArea.park(reasons, InMemoryFences.WHOLE);
    }

    /** {@inheritDoc} An injected failure after the change leaves the epoch incremented. */
    @Override
    public long acquireEpoch() {
        return fences.acquireEpoch(-1);
    }

    @Override
    public Store fencedBy(long epoch) {
        return new InMemoryStoreView(this, fences.fencedBy(-1, epoch));
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        return parkedArea.parked(limit);
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        return parkedArea.parked(query);
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        return parkedArea.parkedCount(query);
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        return parkedArea.parkedMessage(id);
    }

    @Override
    public int discard(Collection<Long> ids) {
        return parkedArea.discard(ids);
    }

    /**
     * {@inheritDoc}
     *
     * <p>Rows are replayed in ascending order of their parked id; each new row gets the current time as its
     * creation time and the header {@value dev.outbox.KeySequence#REPLAYED}, its parked id. Then each replayed key's outbox rows with ids above its first replayed row's parked id are
     * moved behind them, in id order, keeping their creation time and message id (see {@link dev.outbox.spi.ParkedRecords#replay}).
     */
    @Override
    public int replay(Collection<Long> ids) {
        return parkedArea.replay(ids);
    }

    /** The distinct keys of the parked rows (fault-injected as {@link Operation#PARKED}). */
    @Override
    public Set<String> parkedKeys() {
        return parkedArea.parkedKeys();
    }

    @Override
    public long backlog() {
        return gauges.backlog(-1);
    }

    @Override
    public long parkedCount() {
        return gauges.parkedCount();
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        return gauges.oldestCreateTime(-1);
    }

    // ---- inspection -----------------------------------------------------------------------------------------

    /**
     * A snapshot of the committed, unparked rows in id order.
     *
     * @return a new list of every shard's rows, never subject to faults
     */
    public List<Row> rows() {
        return table.snapshot();
    }

    /**
     * The number of committed, unparked rows; unlike {@link #backlog()}, never subject to faults.
     *
     * @return the count across every shard, marked rows included
     */
    public int size() {
        return table.size();
    }

    /**
     * Every parked row in id order; unlike {@link #parked(int)}, never subject to faults.
     *
     * @return a new list of the parked rows with their reasons
     */
    public List<ParkedRecord> parkedRows() {
        return parkedArea.parkedRows();
    }

    /**
     * How many times {@code operation} was called, whether it failed or not.
     *
     * @param operation the store call; not {@code null}
     * @return the calls so far, through this store and its views
     */
    public long calls(Operation operation) {
        return gate.calls(operation);
    }

    /**
     * How many calls of {@code operation} the fault plan failed.
     *
     * @param operation the store call; not {@code null}
     * @return the calls that threw because of the plan (before, after or refused, or an interrupted delay);
     *         delays alone do not count
     */
    public long injectedFailures(Operation operation) {
        return gate.injectedFailures(operation);
    }

    /**
     * How many rows purge calls have deleted in total.
     *
     * @return the rows deleted, counting ids that existed only (a purge of an unknown id deletes nothing)
     */
    public long purgedRows() {
        return harvest.purgedRows();
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "InMemoryStore{rows=" + table.size() + ", parked=" + parkedArea.size() + ", lastId="
                    + table.lastId() + ", faults=" + gate.faults() + '}';
        }
    }

    // ---- the application transaction --------------------------------------------------------------------

    /**
     * An application transaction against this store: each message takes its id when it is published, and
     * becomes visible to {@code mark} only on {@link #commit()}. Not thread-safe, like a connection.
     */
    public final class Transaction implements TestTransaction {
        private final PendingTransaction state = new PendingTransaction(lock, table, signals::wakeAll);

        private Transaction() {
        }

        /**
         * Writes {@code message}, taking its id at once; returns the id.
         *
         * @param message the message, checked as the publisher checks it; not {@code null}
         * @return its id, higher than every id taken before by any transaction (committed or not)
         * @throws IllegalArgumentException if {@code message} is {@code null} or its key is too long
         * @throws IllegalStateException    if the transaction has ended
         */
        public long write(OutboxMessage message) {
            return state.write(message);
        }

        @Override
        public void publish(List<OutboxMessage> messages) {
            state.publish(messages);
        }

        /**
         * The ids this transaction has taken so far, in order.
         *
         * @return a new list of the ids of its writes, ascending; emptied by a rollback
         */
        public List<Long> ids() {
            return state.ids();
        }

        @Override
        public void commit() {
            state.commit();
        }

        @Override
        public void rollback() {
            state.rollback();
        }

        @Override
        public void close() {
            state.close();
        }
    }
}
