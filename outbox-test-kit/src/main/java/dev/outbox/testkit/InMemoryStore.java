package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.OutboxShards;
import dev.outbox.OutboxRecord;
import dev.outbox.ParkedMessage;
import dev.outbox.ParkedQuery;
import dev.outbox.ParkedRecord;
import dev.outbox.Publisher;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.CommitWatchers;
import dev.outbox.spi.IdRange;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.ReadResult;
import dev.outbox.spi.RowChecks;
import dev.outbox.spi.CommitSignals;
import dev.outbox.spi.CursorHarvest;
import dev.outbox.spi.Gauges;
import dev.outbox.spi.MarkHarvest;
import dev.outbox.spi.ParkedKeys;
import dev.outbox.spi.ParkedRecords;
import dev.outbox.spi.Sharding;
import dev.outbox.spi.StorageFencing;
import dev.outbox.spi.Store;
import dev.outbox.spi.StoreException;
import dev.outbox.spi.StoreFencedException;
import dev.outbox.testkit.StoreFaults.Fault;
import dev.outbox.testkit.StoreFaults.Failure;
import dev.outbox.testkit.StoreFaults.Operation;

import java.sql.Connection;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

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

    /** The value of rows written by {@link #insertRow}. */
    private static final byte[] RAW_VALUE = {'x'};

    private final Object lock = new Object();
    private final Clock clock;
    private final int maxKeyLength;
    private final AtomicLong sequence = new AtomicLong();
    /** Committed, unparked rows by id. Guarded by {@link #lock}. */
    private final NavigableMap<Long, StoredRow> rows = new TreeMap<>();
    /** Parked rows by their id in the outbox. Guarded by {@link #lock}. */
    private final NavigableMap<Long, StoredRow> parked = new TreeMap<>();
    /**
     * Transaction ordinals, as Postgres' transaction ids: a writing transaction takes one before its first id, and
     * {@link #read} reports the next one as its gap token and the oldest running one as its horizon. Guarded by
     * {@link #lock}.
     */
    private long nextXid = 1;
    /** The ordinals of the {@link Transaction}s that took one and have not ended. Guarded by {@link #lock}. */
    private final TreeSet<Long> openXids = new TreeSet<>();
    private final Map<Operation, AtomicLong> calls = new EnumMap<>(Operation.class);
    private final Map<Operation, AtomicLong> injected = new EnumMap<>(Operation.class);
    private final AtomicLong purged = new AtomicLong();
    private final CommitWatchers commitWatchers = new CommitWatchers();
    private volatile boolean commitNotifications;
    private volatile StoreFaults faults = StoreFaults.none();
    private volatile boolean fencing;
    /** The outbox's leader epoch ({@link #acquireEpoch()}). Guarded by {@link #lock}. */
    private long epoch;
    private final AtomicLong fencedWrites = new AtomicLong();
    /** An unfenced write: no epoch is checked. */
    private static final long UNFENCED = -1;
    /** Which rows and which epoch a call sees: a shard (or -1 for all) and the epoch its writes are fenced by. */
    private record Scope(int shard, long fence) {
    }
    private static final Scope WHOLE = new Scope(-1, UNFENCED);
    /** The number of shards ({@link #setShards}); fixed before the store is used. */
    private volatile int shards = 1;
    /** Each shard's leader epoch, when sharded. Guarded by {@link #lock}. */
    private long[] shardEpochs = new long[1];
    private final Publisher publisher = new InMemoryPublisher();

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
        this.clock = Objects.requireNonNull(clock, "clock");
        if (maxKeyLength < 1) {
            throw new IllegalArgumentException("maxKeyLength must be at least 1: " + maxKeyLength);
        }
        this.maxKeyLength = maxKeyLength;
        for (Operation op : Operation.values()) {
            calls.put(op, new AtomicLong());
            injected.put(op, new AtomicLong());
        }
    }

    /**
     * Turns storage fencing on or off (off by default): with it on, the store has {@link StorageFencing} and the
     * writes of {@link #fencedBy} views check the epoch. Set it before a dispatcher starts on this store.
     *
     * @param on {@code true} to model a store with storage fencing (as the SQL stores with a lease table)
     */
    public void setFencing(boolean on) {
        this.fencing = on;
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
            this.shards = count;
            this.shardEpochs = new long[count];
            for (StoredRow r : rows.values()) {
                r.shard = -1;
            }
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

    private boolean has(Class<?> type) {
        return !(type == StorageFencing.class && !fencing || type == CommitSignals.class && !commitNotifications);
    }

    @Override
    public int shards() {
        return shards;
    }

    @Override
    public Store shard(int index) {
        OutboxShards.checkIndex(index, shards);
        return shards == 1 ? this : new View(new Scope(index, UNFENCED));
    }

    /**
     * Shard {@code shard}'s leader epoch: 0 until its first {@code acquireEpoch()}.
     *
     * @param shard the shard, from 0 to {@link #shards()} - 1
     * @return the epoch, which each {@code acquireEpoch()} of the shard's view increments
     * @throws IllegalArgumentException if {@code shard} is out of range
     */
    public long epoch(int shard) {
        synchronized (lock) {
            return shardEpochs[OutboxShards.checkIndex(shard, shards)];
        }
    }

    /** Whether {@code row} is in {@code shard} (any shard: -1). Caller holds {@link #lock}. */
    private boolean inShard(StoredRow row, int shard) {
        if (shard < 0) {
            return true;
        }
        if (row.shard < 0) {
            row.shard = OutboxShards.shardOf(row.key, shards);
        }
        return row.shard == shard;
    }

    /**
     * Writes refused as fenced so far.
     *
     * @return the number of calls of {@link #fencedBy} views (and shard views) refused because their epoch was no
     *         longer current, across all shards
     */
    public long fencedWrites() {
        return fencedWrites.get();
    }

    /**
     * The outbox's leader epoch: 0 until the first {@link #acquireEpoch()}.
     *
     * @return the unsharded outbox's epoch, which each {@link #acquireEpoch()} increments (see
     *         {@link #epoch(int)} for a shard's)
     */
    public long epoch() {
        synchronized (lock) {
            return epoch;
        }
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
        this.commitNotifications = on;
    }

    @Override
    public CommitSignals.CommitWatch watchCommits(Runnable wakeUp) {
        Objects.requireNonNull(wakeUp, "wakeUp");
        if (!commitNotifications) {
            return null;
        }
        return commitWatchers.watch(wakeUp);
    }

    /**
     * How many commit watches are open now ({@link #watchCommits}).
     *
     * @return the watches subscribed and not yet closed, for tests that check the dispatcher closes its own
     */
    public int commitWatches() {
        return commitWatchers.size();
    }

    private void wakeCommitWatchers() {
        commitWatchers.wakeAll();
    }

    /**
     * Replaces the fault plan; {@link StoreFaults#none()} heals the store. Takes effect for the next call.
     *
     * @param faults the plan, asked once per call of the port (and of its views); not {@code null}
     * @throws NullPointerException if {@code faults} is {@code null}
     */
    public void setFaults(StoreFaults faults) {
        this.faults = Objects.requireNonNull(faults, "faults");
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
        synchronized (lock) { // the id is taken and committed at once: a transaction of its own
            long id = sequence.incrementAndGet();
            nextXid++;
            rows.put(id, new StoredRow(id, clock.instant(), topic, key, null, reason));
            return id;
        }
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
        synchronized (lock) { // the id is taken and committed at once: a transaction of its own
            long id = sequence.incrementAndGet();
            nextXid++;
            StoredRow row = new StoredRow(id, clock.instant(), topic, key, null, null);
            row.attempts = attempts;
            rows.put(id, row);
            return id;
        }
    }

    // ---- the port -------------------------------------------------------------------------------------------

    /**
     * {@inheritDoc}
     *
     * <p>An injected failure after the change leaves the rows marked with {@code leaderId}: the caller did not
     * get them and a later mark with the same id will not return them again.
     */
    @Override
    public MarkResult mark(UUID leaderId, int limit) {
        return mark(leaderId, limit, WHOLE);
    }

    private MarkResult mark(UUID leaderId, int limit, Scope scope) {
        if (leaderId == null) {
            throw new IllegalArgumentException("leaderId must not be null");
        }
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = enter(Operation.MARK);
        List<OutboxRecord> records = new ArrayList<>();
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        synchronized (lock) {
            checkFence(scope, "mark");
            int taken = 0;
            for (Iterator<StoredRow> it = rows.values().iterator(); it.hasNext() && taken < limit; ) {
                StoredRow row = it.next();
                if (leaderId.equals(row.leaderId) || !inShard(row, scope.shard())) {
                    continue;
                }
                row.leaderId = leaderId;
                taken++;
                MarkedRow checked = check(row, leaderId);
                if (checked instanceof MarkedRow.Readable readable) {
                    records.add(readable.record());
                } else {
                    rejected.add((MarkResult.Rejected) checked);
                }
            }
        }
        leave(Operation.MARK, fault, "mark(" + leaderId + ", " + limit + ")");
        return new MarkResult(records, rejected);
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
        return read(after, recheck, limit, -1);
    }

    private ReadResult read(long after, List<IdRange> recheck, int limit, int shard) {
        Objects.requireNonNull(recheck, "recheck");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = enter(Operation.READ);
        List<OutboxRecord> records = new ArrayList<>();
        List<MarkResult.Rejected> rejected = new ArrayList<>();
        long token;
        long horizon;
        synchronized (lock) {
            token = nextXid;
            horizon = openXids.isEmpty() ? nextXid : openXids.first();
            TreeMap<Long, StoredRow> matching = new TreeMap<>();
            for (IdRange range : recheck) {
                for (StoredRow row : rows.subMap(range.from(), true, range.to(), true).values()) {
                    if (!inShard(row, shard)) {
                        continue;
                    }
                    matching.put(row.id, row);
                    if (matching.size() > limit) {
                        matching.pollLastEntry();
                    }
                }
            }
            int taken = 0;
            for (StoredRow row : rows.tailMap(after, false).values()) {
                if (!inShard(row, shard)) {
                    continue;
                }
                if (taken++ >= limit) {
                    break;
                }
                matching.put(row.id, row);
            }
            int n = 0;
            for (StoredRow row : matching.values()) {
                if (n++ >= limit) {
                    break;
                }
                MarkedRow checked = check(row, row.leaderId);
                if (checked instanceof MarkedRow.Readable readable) {
                    records.add(readable.record());
                } else {
                    rejected.add((MarkResult.Rejected) checked);
                }
            }
        }
        leave(Operation.READ, fault, "read(" + after + ", " + recheck.size() + " ranges, " + limit + ")");
        return new ReadResult(new MarkResult(records, rejected), token, horizon);
    }

    /** The row as the dispatcher sees it: a record, or rejected with its reason. Caller holds {@link #lock}. */
    private MarkedRow check(StoredRow row, UUID leaderId) {
        if (row.malformedReason != null) {
            return new MarkResult.Rejected(row.id, row.topic, row.key, row.attempts, row.malformedReason);
        }
        OutboxMessage m = row.message;
        return m == null
                ? RowChecks.check(row.id, row.createdAt, row.topic, row.key, RAW_VALUE, List::of, row.attempts,
                        leaderId, maxKeyLength)
                : RowChecks.check(row.id, row.createdAt, m.topic(), m.key(), m.value(), m::headers, row.attempts,
                        leaderId, row.messageId, row.nextAttemptAt, maxKeyLength);
    }

    @Override
    public void purge(Collection<Long> ids) {
        purge(ids, WHOLE);
    }

    private void purge(Collection<Long> ids, Scope scope) {
        Objects.requireNonNull(ids, "ids");
        Fault fault = enter(Operation.PURGE);
        synchronized (lock) {
            checkFence(scope, "purge");
            for (Long id : ids) {
                if (id != null && rows.remove(id) != null) {
                    purged.incrementAndGet();
                }
            }
        }
        leave(Operation.PURGE, fault, "purge of " + ids.size() + " ids");
    }

    @Override
    public void reset(UUID leaderId, Collection<Long> ids) {
        reset(leaderId, ids, WHOLE);
    }

    private void reset(UUID leaderId, Collection<Long> ids, Scope scope) {
        if (leaderId == null) {
            throw new IllegalArgumentException("leaderId must not be null");
        }
        Objects.requireNonNull(ids, "ids");
        Fault fault = enter(Operation.RESET);
        synchronized (lock) {
            checkFence(scope, "reset");
            for (Long id : new TreeSet<>(nonNull(ids))) {
                StoredRow row = rows.get(id);
                if (row != null) {
                    row.attempts++;
                    if (leaderId.equals(row.leaderId)) {
                        row.leaderId = null;
                    }
                }
            }
        }
        leave(Operation.RESET, fault, "reset(" + leaderId + ") of " + ids.size() + " ids");
    }

    @Override
    public void retryLater(Map<Long, Instant> nextAttempts) {
        retryLater(nextAttempts, WHOLE);
    }

    private void retryLater(Map<Long, Instant> nextAttempts, Scope scope) {
        Objects.requireNonNull(nextAttempts, "nextAttempts");
        TreeMap<Long, Instant> sorted = new TreeMap<>();
        for (Map.Entry<Long, Instant> e : nextAttempts.entrySet()) {
            if (e.getKey() == null) {
                throw new IllegalArgumentException("nextAttempts contains a null id");
            }
            if (e.getValue() == null) {
                throw new IllegalArgumentException("nextAttempts has no time for id " + e.getKey());
            }
            sorted.put(e.getKey(), e.getValue());
        }
        Fault fault = enter(Operation.RETRY_LATER);
        synchronized (lock) {
            checkFence(scope, "retryLater");
            for (Map.Entry<Long, Instant> e : sorted.entrySet()) {
                StoredRow row = rows.get(e.getKey());
                if (row != null) {
                    row.attempts++;
                    row.nextAttemptAt = e.getValue();
                }
            }
        }
        leave(Operation.RETRY_LATER, fault, "retryLater of " + nextAttempts.size() + " ids");
    }

    @Override
    public void park(Map<Long, String> reasons) {
        park(reasons, WHOLE);
    }

    private void park(Map<Long, String> reasons, Scope scope) {
        Objects.requireNonNull(reasons, "reasons");
        Fault fault = enter(Operation.PARK);
        Instant now = clock.instant();
        synchronized (lock) {
            checkFence(scope, "park");
            for (Map.Entry<Long, String> e : reasons.entrySet()) {
                if (e.getKey() == null) {
                    continue;
                }
                StoredRow row = rows.remove(e.getKey());
                if (row != null) {
                    row.leaderId = null;
                    row.parkReason = e.getValue();
                    row.parkedAt = now;
                    parked.put(row.id, row);
                }
            }
        }
        leave(Operation.PARK, fault, "park of " + reasons.size() + " ids");
    }

    /** {@inheritDoc} An injected failure after the change leaves the epoch incremented. */
    @Override
    public long acquireEpoch() {
        return acquireEpoch(-1);
    }

    private long acquireEpoch(int shard) {
        requireFencing("acquireEpoch");
        Fault fault = enter(Operation.ACQUIRE_EPOCH);
        long taken;
        synchronized (lock) {
            taken = shard < 0 ? ++epoch : ++shardEpochs[shard];
        }
        leave(Operation.ACQUIRE_EPOCH, fault, "acquireEpoch()");
        return taken;
    }

    @Override
    public Store fencedBy(long epoch) {
        requireFencing("fencedBy");
        if (epoch < 1) {
            throw new IllegalArgumentException("epoch must be at least 1 (one acquireEpoch() returned): " + epoch);
        }
        return new View(new Scope(-1, epoch));
    }

    private void requireFencing(String operation) {
        if (!fencing) {
            throw new UnsupportedOperationException(operation + ": fencing is off (InMemoryStore.setFencing)");
        }
    }

    /** Refuses a write fenced by an epoch other than the outbox's. Caller holds {@link #lock}, before any change. */
    private void checkFence(Scope scope, String operation) {
        long current = scope.shard() < 0 ? epoch : shardEpochs[scope.shard()];
        if (scope.fence() != UNFENCED && scope.fence() != current) {
            fencedWrites.incrementAndGet();
            throw new StoreFencedException(operation, scope.fence(), current);
        }
    }

    @Override
    public List<ParkedRecord> parked(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Fault fault = enter(Operation.PARKED);
        List<ParkedRecord> result = new ArrayList<>();
        synchronized (lock) {
            for (StoredRow row : parked.values()) {
                if (result.size() == limit) {
                    break;
                }
                result.add(row.toParked());
            }
        }
        leave(Operation.PARKED, fault, "parked(" + limit + ")");
        return result;
    }

    @Override
    public List<ParkedRecord> parked(ParkedQuery query) {
        return ParkedPages.page(query, parkedRows());
    }

    @Override
    public long parkedCount(ParkedQuery query) {
        return ParkedPages.count(query, parkedRows());
    }

    @Override
    public Optional<ParkedMessage> parkedMessage(long id) {
        synchronized (lock) {
            StoredRow row = parked.get(id);
            if (row == null) {
                return Optional.empty();
            }
            OutboxMessage m = row.message;
            return Optional.of(new ParkedMessage(row.toParked(), row.createdAt, m == null ? null : m.value(),
                    m == null ? List.of() : m.headers(), row.malformedReason));
        }
    }

    @Override
    public int discard(Collection<Long> ids) {
        Objects.requireNonNull(ids, "ids");
        synchronized (lock) {
            int n = 0;
            for (Long id : ids) {
                if (id != null && parked.remove(id) != null) {
                    n++;
                }
            }
            return n;
        }
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
        Objects.requireNonNull(ids, "ids");
        Fault fault = enter(Operation.REPLAY);
        int replayed = 0;
        Instant now = clock.instant();
        synchronized (lock) {
            nextXid++; // one transaction, committed at once
            Map<String, Long> firstParkedId = new java.util.HashMap<>();
            Set<Long> replayedIds = new HashSet<>();
            for (Long id : new TreeSet<>(nonNull(ids))) {
                StoredRow old = parked.remove(id);
                if (old != null) {
                    long newId = sequence.incrementAndGet();
                    // marked as replayed (KeySequence.REPLAYED: its parked id), as the SQL stores' replay marks it
                    OutboxMessage marked = old.message == null ? null : old.message.withHeader(
                            dev.outbox.Header.of(dev.outbox.KeySequence.REPLAYED, dev.outbox.KeySequence.encode(id)));
                    StoredRow replayedRow = new StoredRow(newId, now, old.topic, old.key, marked,
                            old.malformedReason);
                    replayedRow.messageId = old.messageId;
                    rows.put(newId, replayedRow);
                    replayedIds.add(newId);
                    firstParkedId.putIfAbsent(old.key, id);
                    replayed++;
                }
            }
            List<StoredRow> behind = new ArrayList<>();
            for (StoredRow row : firstParkedId.isEmpty() ? List.<StoredRow>of() : rows.values()) {
                Long first = firstParkedId.get(row.key);
                if (first != null && row.id > first && !replayedIds.contains(row.id)) {
                    behind.add(row);
                }
            }
            for (StoredRow row : behind) { // ascending id: their order is kept
                rows.remove(row.id);
                long newId = sequence.incrementAndGet();
                StoredRow moved = new StoredRow(newId, row.createdAt, row.topic, row.key, row.message,
                        row.malformedReason);
                moved.messageId = row.messageId;
                rows.put(newId, moved);
            }
        }
        leave(Operation.REPLAY, fault, "replay of " + ids.size() + " ids");
        return replayed;
    }

    /** The distinct keys of the parked rows (fault-injected as {@link Operation#PARKED}). */
    @Override
    public Set<String> parkedKeys() {
        Fault fault = enter(Operation.PARKED);
        Set<String> keys = new HashSet<>();
        synchronized (lock) {
            for (StoredRow row : parked.values()) {
                keys.add(row.key);
            }
        }
        leave(Operation.PARKED, fault, "parkedKeys()");
        return keys;
    }

    @Override
    public long backlog() {
        return backlog(-1);
    }

    private long backlog(int shard) {
        Fault fault = enter(Operation.BACKLOG);
        long n;
        synchronized (lock) {
            n = shard < 0 ? rows.size() : rows.values().stream().filter(r -> inShard(r, shard)).count();
        }
        leave(Operation.BACKLOG, fault, "backlog()");
        return n;
    }

    @Override
    public long parkedCount() {
        Fault fault = enter(Operation.PARKED_COUNT);
        long n;
        synchronized (lock) {
            n = parked.size();
        }
        leave(Operation.PARKED_COUNT, fault, "parkedCount()");
        return n;
    }

    @Override
    public Optional<Instant> oldestCreateTime() {
        return oldestCreateTime(-1);
    }

    private Optional<Instant> oldestCreateTime(int shard) {
        Fault fault = enter(Operation.OLDEST);
        Optional<Instant> oldest;
        synchronized (lock) {
            oldest = rows.values().stream().filter(r -> inShard(r, shard)).findFirst().map(r -> r.createdAt);
        }
        leave(Operation.OLDEST, fault, "oldestCreateTime()");
        return oldest;
    }

    // ---- inspection -----------------------------------------------------------------------------------------

    /**
     * A snapshot of the committed, unparked rows in id order.
     *
     * @return a new list of every shard's rows, never subject to faults
     */
    public List<Row> rows() {
        synchronized (lock) {
            List<Row> result = new ArrayList<>(rows.size());
            for (StoredRow r : rows.values()) {
                result.add(new Row(r.id, r.topic, r.key, r.leaderId, r.attempts, r.malformedReason != null,
                        r.nextAttemptAt));
            }
            return result;
        }
    }

    /**
     * The number of committed, unparked rows; unlike {@link #backlog()}, never subject to faults.
     *
     * @return the count across every shard, marked rows included
     */
    public int size() {
        synchronized (lock) {
            return rows.size();
        }
    }

    /**
     * Every parked row in id order; unlike {@link #parked(int)}, never subject to faults.
     *
     * @return a new list of the parked rows with their reasons
     */
    public List<ParkedRecord> parkedRows() {
        synchronized (lock) {
            List<ParkedRecord> result = new ArrayList<>(parked.size());
            for (StoredRow row : parked.values()) {
                result.add(row.toParked());
            }
            return result;
        }
    }

    /**
     * How many times {@code operation} was called, whether it failed or not.
     *
     * @param operation the store call; not {@code null}
     * @return the calls so far, through this store and its views
     */
    public long calls(Operation operation) {
        return calls.get(operation).get();
    }

    /**
     * How many calls of {@code operation} the fault plan failed.
     *
     * @param operation the store call; not {@code null}
     * @return the calls that threw because of the plan (before, after or refused, or an interrupted delay);
     *         delays alone do not count
     */
    public long injectedFailures(Operation operation) {
        return injected.get(operation).get();
    }

    /**
     * How many rows purge calls have deleted in total.
     *
     * @return the rows deleted, counting ids that existed only (a purge of an unknown id deletes nothing)
     */
    public long purgedRows() {
        return purged.get();
    }

    @Override
    public String toString() {
        synchronized (lock) {
            return "InMemoryStore{rows=" + rows.size() + ", parked=" + parked.size() + ", lastId=" + sequence.get()
                    + ", faults=" + faults + '}';
        }
    }

    // ---- internals ------------------------------------------------------------------------------------------

    private Fault enter(Operation operation) {
        calls.get(operation).incrementAndGet();
        Fault fault = faults.decide(operation);
        if (fault == null) {
            throw new IllegalStateException("fault plan " + faults + " returned null for " + operation);
        }
        if (!fault.delay().isZero()) {
            long deadline = System.nanoTime() + fault.delay().toNanos();
            for (long left; (left = deadline - System.nanoTime()) > 0; ) {
                LockSupport.parkNanos(left);
                if (Thread.currentThread().isInterrupted()) {
                    injected.get(operation).incrementAndGet();
                    throw new StoreException("injected delay of " + operation + " interrupted", null, true);
                }
            }
        }
        if (fault.failure() == Failure.REFUSED) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + operation + " refused for good (a permission or constraint"
                    + " error); not retriable", null, false);
        }
        if (fault.failure() == Failure.BEFORE) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + operation + " failed before any change", null, true);
        }
        return fault;
    }

    private void leave(Operation operation, Fault fault, String what) {
        if (fault.failure() == Failure.AFTER) {
            injected.get(operation).incrementAndGet();
            throw new StoreException("injected fault: " + what + " was applied but reported as failed"
                    + " (a lost commit acknowledgement)", null, true);
        }
    }

    private static List<Long> nonNull(Collection<Long> ids) {
        List<Long> result = new ArrayList<>(ids.size());
        for (Long id : ids) {
            if (id != null) {
                result.add(id);
            }
        }
        return result;
    }

    private List<OutboxMessage> validate(List<OutboxMessage> messages) {
        if (messages == null) {
            throw new IllegalArgumentException("messages must not be null");
        }
        List<OutboxMessage> copy = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            OutboxMessage m = messages.get(i);
            if (m == null) {
                throw new IllegalArgumentException("message at index " + i + " of " + messages.size()
                        + " is null");
            }
            try {
                RowChecks.checkKeyLength(m.key(), maxKeyLength);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("message at index " + i + ": " + e.getMessage(), e);
            }
            copy.add(m);
        }
        return copy;
    }

    /**
     * A view of this store: one shard's rows (or all), its writes fenced by one epoch (or unfenced); everything else
     * is the store's own.
     */
    private final class View implements Store, MarkHarvest, CursorHarvest, CommitSignals, StorageFencing, Sharding, ParkedRecords, ParkedKeys, Gauges {
        private final Scope scope;

        View(Scope scope) {
            this.scope = scope;
        }

        @Override
        public Publisher publisher() {
            return InMemoryStore.this.publisher();
        }

        @Override
        public MarkResult mark(UUID leaderId, int limit) {
            return InMemoryStore.this.mark(leaderId, limit, scope);
        }

        @Override
        public ReadResult read(long after, List<IdRange> recheck, int limit) {
            return InMemoryStore.this.read(after, recheck, limit, scope.shard());
        }

        @Override
        public CommitSignals.CommitWatch watchCommits(Runnable wakeUp) {
            return InMemoryStore.this.watchCommits(wakeUp);
        }

        @Override
        public long acquireEpoch() {
            return InMemoryStore.this.acquireEpoch(scope.shard());
        }

        @Override
        public Store fencedBy(long epoch) {
            requireFencing("fencedBy");
            if (epoch < 1) {
                throw new IllegalArgumentException("epoch must be at least 1 (one acquireEpoch() returned): "
                        + epoch);
            }
            return new View(new Scope(scope.shard(), epoch));
        }

        @Override
        public void purge(Collection<Long> ids) {
            InMemoryStore.this.purge(ids, scope);
        }

        @Override
        public void reset(UUID leaderId, Collection<Long> ids) {
            InMemoryStore.this.reset(leaderId, ids, scope);
        }

        @Override
        public void retryLater(Map<Long, Instant> nextAttempts) {
            InMemoryStore.this.retryLater(nextAttempts, scope);
        }

        @Override
        public void park(Map<Long, String> reasons) {
            InMemoryStore.this.park(reasons, scope);
        }

        @Override
        public List<ParkedRecord> parked(int limit) {
            return InMemoryStore.this.parked(limit);
        }

        @Override
        public int replay(Collection<Long> ids) {
            return InMemoryStore.this.replay(ids);
        }

        @Override
        public List<ParkedRecord> parked(ParkedQuery query) {
            return InMemoryStore.this.parked(query);
        }

        @Override
        public long parkedCount(ParkedQuery query) {
            return InMemoryStore.this.parkedCount(query);
        }

        @Override
        public Optional<ParkedMessage> parkedMessage(long id) {
            return InMemoryStore.this.parkedMessage(id);
        }

        @Override
        public int discard(Collection<Long> ids) {
            return InMemoryStore.this.discard(ids);
        }

        @Override
        public Set<String> parkedKeys() {
            return InMemoryStore.this.parkedKeys();
        }

        @Override
        public long backlog() {
            return InMemoryStore.this.backlog(scope.shard());
        }

        @Override
        public long parkedCount() {
            return InMemoryStore.this.parkedCount();
        }

        @Override
        public Optional<Instant> oldestCreateTime() {
            return InMemoryStore.this.oldestCreateTime(scope.shard());
        }

        @Override
        public <T> Optional<T> capability(Class<T> type) {
            return has(type) ? Store.super.capability(type) : Optional.empty();
        }

        @Override
        public int shards() {
            return 1;
        }

        @Override
        public Store shard(int index) {
            OutboxShards.checkIndex(index, 1);
            return this;
        }

        @Override
        public String toString() {
            return InMemoryStore.this + (scope.shard() < 0 ? "" : " shard " + scope.shard())
                    + (scope.fence() == UNFENCED ? "" : " fenced by epoch " + scope.fence());
        }
    }

    /** A row as held; fields other than the final ones are guarded by {@link #lock}. */
    private static final class StoredRow {
        final long id;
        final Instant createdAt;
        final String topic;
        final String key;
        final OutboxMessage message;
        final String malformedReason;
        /** The message id: assigned when the row is written, kept through park and replay. */
        UUID messageId = dev.outbox.MessageIds.next();
        UUID leaderId;
        int attempts;
        Instant nextAttemptAt;
        /** The row's shard, computed from its key on first use ({@link #inShard}). */
        int shard = -1;
        String parkReason;
        Instant parkedAt;

        StoredRow(long id, Instant createdAt, String topic, String key, OutboxMessage message,
                  String malformedReason) {
            this.id = id;
            this.createdAt = createdAt;
            this.topic = topic;
            this.key = key;
            this.message = message;
            this.malformedReason = malformedReason;
        }

        static StoredRow of(long id, Instant createdAt, OutboxMessage message) {
            return new StoredRow(id, createdAt, message.topic(), message.key(), message, null);
        }

        ParkedRecord toParked() {
            return new ParkedRecord(id, topic, key, attempts, parkReason, parkedAt);
        }
    }

    private final class InMemoryPublisher implements Publisher {
        @Override
        public void publish(Connection connection, List<OutboxMessage> messages) {
            List<OutboxMessage> valid = validate(messages);
            Instant now = clock.instant();
            synchronized (lock) {
                nextXid++; // a transaction that commits at once
                for (OutboxMessage m : valid) {
                    long id = sequence.incrementAndGet();
                    rows.put(id, StoredRow.of(id, now, m));
                }
            }
            wakeCommitWatchers();
        }

        @Override
        public String toString() {
            return "InMemoryStore.publisher";
        }
    }

    /**
     * An application transaction against this store: each message takes its id when it is published, and
     * becomes visible to {@code mark} only on {@link #commit()}. Not thread-safe, like a connection.
     */
    public final class Transaction implements TestTransaction {
        private final List<StoredRow> pending = new ArrayList<>();
        private boolean ended;
        /** This transaction's ordinal, taken before its first id; 0 until then. */
        private long xid;

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
            checkOpen("publish");
            validate(java.util.Collections.singletonList(message));
            long id;
            synchronized (lock) {
                if (xid == 0) {
                    xid = nextXid++;
                    openXids.add(xid);
                }
                id = sequence.incrementAndGet();
            }
            pending.add(StoredRow.of(id, clock.instant(), message));
            return id;
        }

        @Override
        public void publish(List<OutboxMessage> messages) {
            checkOpen("publish");
            for (OutboxMessage m : validate(messages)) {
                write(m);
            }
        }

        /**
         * The ids this transaction has taken so far, in order.
         *
         * @return a new list of the ids of its writes, ascending; emptied by a rollback
         */
        public List<Long> ids() {
            List<Long> ids = new ArrayList<>(pending.size());
            for (StoredRow row : pending) {
                ids.add(row.id);
            }
            return ids;
        }

        @Override
        public void commit() {
            checkOpen("commit");
            ended = true;
            synchronized (lock) {
                for (StoredRow row : pending) {
                    rows.put(row.id, row);
                }
                openXids.remove(xid);
            }
            wakeCommitWatchers();
        }

        @Override
        public void rollback() {
            checkOpen("rollback");
            ended = true;
            pending.clear();
            synchronized (lock) {
                openXids.remove(xid);
            }
        }

        @Override
        public void close() {
            if (!ended) {
                rollback();
            }
        }

        private void checkOpen(String operation) {
            if (ended) {
                throw new IllegalStateException("cannot " + operation + ": the transaction has ended");
            }
        }
    }
}
