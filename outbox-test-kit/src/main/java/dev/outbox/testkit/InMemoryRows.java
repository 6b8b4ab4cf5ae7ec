package dev.outbox.testkit;

import dev.outbox.OutboxMessage;
import dev.outbox.spi.DeliveryOptions;
import dev.outbox.spi.MarkResult;
import dev.outbox.spi.MarkedRow;
import dev.outbox.spi.RowChecks;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The committed rows of an {@link InMemoryStore}'s outbox table and how they are written: the id sequence, the
 * transaction ordinals (as Postgres' transaction ids) and the open transactions, the checks of a written message and
 * of a row as the dispatcher reads it. The harvest, the parked area and the gauges work on {@link #committed()}.
 *
 * <p>Thread-safe: the rows and the ordinals are guarded by the store's lock, which the methods marked so expect
 * their caller to hold.
 */
final class InMemoryRows {
    /** The value of rows written by {@link #insertRow}. */
    private static final byte[] RAW_VALUE = {'x'};

    private final Object lock;
    private final Clock clock;
    private final int maxKeyLength;
    private final AtomicLong sequence = new AtomicLong();
    /** Committed, unparked rows by id. Guarded by {@link #lock}. */
    private final NavigableMap<Long, StoredRow> rows = new TreeMap<>();
    /**
     * Transaction ordinals, as Postgres' transaction ids: a writing transaction takes one before its first id, and
     * {@code read} reports the next one as its gap token and the oldest running one as its horizon. Guarded by
     * {@link #lock}.
     */
    private long nextXid = 1;
    /** The ordinals of the transactions that took one and have not ended. Guarded by {@link #lock}. */
    private final TreeSet<Long> openXids = new TreeSet<>();

    InMemoryRows(Object lock, Clock clock, int maxKeyLength) {
        this.lock = lock;
        this.clock = clock;
        this.maxKeyLength = maxKeyLength;
    }

    /** The committed, unparked rows by id. Caller holds {@link #lock}. */
    NavigableMap<Long, StoredRow> committed() {
        return rows;
    }

    /** Takes the next id of the sequence. */
    long nextId() {
        return sequence.incrementAndGet();
    }

    /** The last id taken. */
    long lastId() {
        return sequence.get();
    }

    /** Counts a transaction that commits at once (it takes no ordinal of its own). Caller holds {@link #lock}. */
    void commitAtOnce() {
        nextXid++;
    }

    /** A new transaction's ordinal, now open. Caller holds {@link #lock}. */
    long openXid() {
        long xid = nextXid++;
        openXids.add(xid);
        return xid;
    }

    /** Commits a transaction's rows and ends its ordinal. */
    void commit(List<StoredRow> pending, long xid) {
        synchronized (lock) {
            for (StoredRow row : pending) {
                rows.put(row.id, row);
            }
            openXids.remove(xid);
        }
    }

    /** Ends a rolled-back transaction's ordinal: its ids are gaps. */
    void rollback(long xid) {
        synchronized (lock) {
            openXids.remove(xid);
        }
    }

    /** The gap token of a read: the next ordinal. Caller holds {@link #lock}. */
    long gapToken() {
        return nextXid;
    }

    /** The horizon of a read: the oldest open ordinal, or the next one. Caller holds {@link #lock}. */
    long horizon() {
        return openXids.isEmpty() ? nextXid : openXids.first();
    }

    /** Forgets each row's shard, to be computed again for a new number of shards. Caller holds {@link #lock}. */
    void forgetShards() {
        for (StoredRow r : rows.values()) {
            r.shard = -1;
        }
    }

    /** Writes and commits {@code messages} as one transaction that commits at once. */
    void publish(List<OutboxMessage> messages) {
        List<OutboxMessage> valid = validate(messages);
        Instant now = clock.instant();
        synchronized (lock) {
            nextXid++; // a transaction that commits at once
            for (OutboxMessage m : valid) {
                long id = sequence.incrementAndGet();
                rows.put(id, StoredRow.of(id, now, m));
            }
        }
    }

    /** A pending row of a transaction, written now; its id was taken by the transaction. */
    StoredRow pending(long id, OutboxMessage message) {
        return StoredRow.of(id, clock.instant(), message);
    }

    /** Writes and commits a row that cannot be read as a message; returns its id. */
    long insertMalformed(String topic, String key, String reason) {
        synchronized (lock) { // the id is taken and committed at once: a transaction of its own
            long id = sequence.incrementAndGet();
            nextXid++;
            rows.put(id, new StoredRow(id, clock.instant(), topic, key, null, reason));
            return id;
        }
    }

    /** Writes and commits a row with the value {@code "x"}, unchecked; returns its id. */
    long insertRow(String topic, String key, int attempts) {
        synchronized (lock) { // the id is taken and committed at once: a transaction of its own
            long id = sequence.incrementAndGet();
            nextXid++;
            StoredRow row = new StoredRow(id, clock.instant(), topic, key, null, null);
            row.attempts = attempts;
            rows.put(id, row);
            return id;
        }
    }

    /** The row as the dispatcher sees it: a record, or rejected with its reason. Caller holds {@link #lock}. */
    MarkedRow check(StoredRow row, UUID leaderId) {
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

    /** Checks messages as the publisher does; returns a copy of the list. */
    List<OutboxMessage> validate(List<OutboxMessage> messages) {
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
        DeliveryOptions.check(copy, false, false, "InMemoryStore (wrap it in InMemoryDeliveryOptions for them)");
        return copy;
    }

    /** A snapshot of the committed rows in id order. */
    List<InMemoryStore.Row> snapshot() {
        synchronized (lock) {
            List<InMemoryStore.Row> result = new ArrayList<>(rows.size());
            for (StoredRow r : rows.values()) {
                result.add(new InMemoryStore.Row(r.id, r.topic, r.key, r.leaderId, r.attempts,
                        r.malformedReason != null, r.nextAttemptAt));
            }
            return result;
        }
    }

    /** The number of committed rows. */
    int size() {
        synchronized (lock) {
            return rows.size();
        }
    }

    /** The ids of {@code ids} that are not null, in their order. */
    static List<Long> nonNull(Collection<Long> ids) {
        List<Long> result = new ArrayList<>(ids.size());
        for (Long id : ids) {
            if (id != null) {
                result.add(id);
            }
        }
        return result;
    }
}
